"""A fault run drawn: the table's rows, the matrix of outcomes per configuration x database settings, a sentence per
database and fault, and the run as Markdown, HTML and CSV (pure). The JSON is faults/document.py's."""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pickfs.faults.document import MODEL, notes
from pickfs.faults.literature import findings_for
from pickfs.faults.outcome import EMBEDDED, NO_SERVER, Ended, FaultCell, plural, server_short, verdict
from pickfs.faults.plan import KINDS

COLUMNS = ("configuration", "database", "fault", "acknowledged", "lost", "errors to client", "false failures",
           "server", "filesystem", "after restart")
FIGURES = ("acknowledged", "lost", "errors to client", "false failures")
TITLE = "what the database kept when the disk failed"
SAMPLE = "one run per cell with its fault plan: a sample, not a guarantee"
KERNEL_SAID = re.compile(r" \(the kernel logged the block I/O error\)")


def database_text(cell: FaultCell) -> str:
    return f"{cell.database} ({cell.settings})" if cell.settings else cell.database


def filesystem_short(said: str) -> str:
    """What the filesystem did, in a table's few words (pure)."""
    return KERNEL_SAID.sub("", said)


def after_text(cell: FaultCell) -> str:
    c, t = cell.counts, cell.truth
    if c is None or t is None:
        return cell.outcome.value
    after = "did not come up" if not t.came_up else \
        (("your check failed" if c.corruption else "your check passed") if cell.judged else
         "corrupt" if c.corruption else "came up")
    return after if cell.outcome is Ended.MEASURED else f"{cell.outcome.value}; {after}"


def row(cell: FaultCell) -> tuple[str, ...]:
    """One cell as the table's row."""
    c, b = cell.counts, cell.behaviour
    if c is None:
        return (cell.config, database_text(cell), cell.fault, "", "", "", "", "", "", after_text(cell))
    unknown = "?" if cell.judged else ""  # the user's check judged: which acknowledged work was lost is not known
    return (cell.config, database_text(cell), cell.fault, f"{c.acked:,}", unknown or f"{c.acked_lost:,}",
            f"{c.failed:,}", unknown or f"{c.false_failures:,}", server_short(b.server) if b else "",
            filesystem_short(b.filesystem) if b else "", after_text(cell))


# -- the matrix: one per fault plan, a row per database with its settings, a column per configuration ---------------
@dataclass(frozen=True)
class Matrix:
    plan: str
    configs: tuple[str, ...]
    rows: tuple[tuple[str, tuple[FaultCell | None, ...]], ...]  # database (settings), a cell per configuration


def matrices(cells: Iterable[FaultCell]) -> list[Matrix]:
    """The cells as one matrix per fault plan, configurations and databases in the order they ran (pure)."""
    by_plan: dict[str, list[FaultCell]] = {}
    for c in cells:
        by_plan.setdefault(c.plan, []).append(c)
    out = []
    for plan, group in by_plan.items():
        configs = tuple(dict.fromkeys(c.config for c in group))
        dbs = tuple(dict.fromkeys(database_text(c) for c in group))
        found = {(database_text(c), c.config): c for c in group}
        out.append(Matrix(plan, configs, tuple((db, tuple(found.get((db, k)) for k in configs)) for db in dbs)))
    return out


def lost(cell: FaultCell) -> bool:
    """Acknowledged commits lost, or the user's check failed (pure)."""
    return cell.counts is not None and (cell.counts.acked_lost > 0 or (cell.judged and bool(cell.counts.corruption)))


def broken(cell: FaultCell) -> bool:
    """Lost, did not come up, or corrupt after restart."""
    t, c = cell.truth, cell.counts
    return lost(cell) or (t is not None and not t.came_up) or (c is not None and bool(c.corruption or c.old_value))


def counts_lines(cell: FaultCell | None) -> list[str]:
    """A matrix cell: the figures, then what the server and the filesystem did (pure)."""
    if cell is None:
        return ["-"]
    if cell.outcome is Ended.NOT_RUN:
        return ["not run"]
    c, b, t = cell.counts, cell.behaviour, cell.truth
    if cell.injected == 0 or c is None or b is None or t is None:
        return ["the fault never fired" + ("; hung" if cell.outcome is Ended.HUNG else "")]
    figures = (f"{plural(c.acked, 'acknowledgement')}; your check {'failed' if c.corruption else 'passed'}"
               if cell.judged else f"{c.acked_lost:,} of {c.acked:,} acknowledged lost")
    figures += f"; {plural(c.failed, 'error')} to the client"
    if c.false_failures:
        figures += f", {c.false_failures:,} false"
    lines = [figures]
    if b.server not in (EMBEDDED, NO_SERVER):
        lines.append(f"server: {server_short(b.server)}")
    lines.append(f"filesystem: {filesystem_short(b.filesystem)}")
    after = after_text(cell)
    if after != "came up":
        lines.append(f"after restart: {after}")
    if c.old_value:
        lines.append("old value")
    return lines


def what_happened(cell: FaultCell) -> str:
    """A cell in a clause of the database's sentence (its counts left out, so configurations alike join) (pure)."""
    if cell.outcome is Ended.NOT_RUN:
        return "not run"
    c, b, t = cell.counts, cell.behaviour, cell.truth
    if cell.injected == 0 or c is None or b is None or t is None:
        return "the fault never fired, which says nothing"
    parts = [] if b.server in (EMBEDDED, NO_SERVER) else [f"the server {b.server}"]
    if c.failed:
        parts.append("the client was given an error")
    if cell.write_back_errors:
        parts.append("a write-back the client asked for failed" +
                     (", then a later one succeeded" if cell.write_back_ok_after_error else ""))
    if not t.came_up:
        parts.append("after restart the database did not come up")
    elif cell.judged:
        parts.append(f"after restart your check {'failed' if c.corruption else 'passed'}")
    elif c.acked_lost:
        parts.append(f"after restart {plural(c.acked_lost, 'acknowledged commit')} "
                     f"{'was' if c.acked_lost == 1 else 'were'} lost")
    else:
        parts.append("after restart no acknowledged commit was lost")
    if c.false_failures:
        parts.append("with false failures (commits the client was told failed were there)")
    if c.corruption and not cell.judged:
        parts.append(f"corruption ({c.corruption[:80]})")
    if cell.outcome is Ended.HUNG:
        parts.append("the cell hung")
    return ", ".join(parts)


def sentences(cells: Iterable[FaultCell]) -> list[str]:
    """A sentence per fault plan and database with its settings, configurations that did alike named together: what
    a DBA reads first (pure). Nothing is called safe."""
    out = []
    for m in matrices(cells):
        for db, row_cells in m.rows:
            alike: dict[str, list[str]] = {}
            for config, cell in zip(m.configs, row_cells, strict=True):
                if cell is not None:
                    alike.setdefault(what_happened(cell), []).append(config)
            said = "; ".join(f"on {names(configs)}, {words}" for words, configs in alike.items())
            out.append(f"When {kind_text(m)}, {db}: {said}.")
    return out


def names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def kind_text(m: Matrix) -> str:
    """What fails under a matrix's plan, in words ('a cache flush fails'); the whole plan is stated apart."""
    cell = next(c for _, row_cells in m.rows for c in row_cells if c is not None)
    kind = KINDS.get(cell.fault)
    return kind.text if kind is not None else cell.fault


def literature(cells: Iterable[FaultCell]) -> list[str]:
    return findings_for((c.database, c.fault) for c in cells)


def header_lines(run: dict[str, Any] | None) -> list[str]:
    if not run:
        return []
    host = run.get("host", {})
    machine = ", ".join(str(host[k]) for k in ("os", "kernel") if host.get(k))
    return [f"run {run.get('id', '')} ({run.get('status', '')}), started {run.get('started', '')}"
            + (f", {machine}" if machine else "")]


# -- Markdown --------------------------------------------------------------------------------------------------
MARKUP = re.compile(r"([\\`*_\[\]#|~!{}<>])")


def md(text: object) -> str:
    """Text from a run as inert Markdown: one line, no markup (pure)."""
    return MARKUP.sub(r"\\\1", " ".join(str(text).splitlines()))


def render_markdown(cells: list[FaultCell], plans: list[str], run: dict[str, Any] | None = None) -> str:
    lines = [f"# {TITLE}", ""]
    lines += [md(x) for x in header_lines(run)] + ([""] if run else [])
    lines += ["Fault plans:", ""] + [f"- {md(p)}" for p in plans] + [""]
    lines += ["What happened:", ""] + [f"- {md(s)}" for s in sentences(cells)] + ["", f"({SAMPLE}.)", ""]
    for m in matrices(cells):
        lines += [f"## {md(m.plan)}", "", "| database | " + " | ".join(md(k) for k in m.configs) + " |",
                  "|---|" + "---|" * len(m.configs)]
        lines += ["| " + md(db) + " | " + " | ".join("; ".join(md(x) for x in counts_lines(c)) for c in row_cells)
                  + " |" for db, row_cells in m.rows]
        lines.append("")
    lines += ["## Every cell", "", "| " + " | ".join(COLUMNS) + " |",
              "|" + "".join("---:|" if k in FIGURES else "---|" for k in COLUMNS)]
    lines += ["| " + " | ".join(md(x) for x in row(c)) + " |" for c in cells]
    lines += ["", "## Verdicts", ""] + [f"- {md(verdict(c))}" for c in cells]
    said = literature(cells)
    if said:
        lines += ["", "## What the literature says", ""] + [f"- {md(x)}" for x in said]
    lines += [""] + [f"Note: {md(n)}  " for n in notes(cells)]
    lines += [f"Model: {md(MODEL)}", ""]
    return "\n".join(lines)



# -- HTML ------------------------------------------------------------------------------------------------------
STYLE = """body{font-family:system-ui,sans-serif;max-width:80em;margin:1em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #bbb;padding:.3em .5em;vertical-align:top;
text-align:left}th{background:#eee}td.lost{background:#f8d0d0}td.none{color:#888}td.n{text-align:right}
p.small,li.small{font-size:.9em;color:#444}"""


def esc(text: object) -> str:
    return html.escape(str(text))


def matrix_cell_html(cell: FaultCell | None) -> str:
    kind = "lost" if cell is not None and broken(cell) else \
        "none" if cell is None or cell.outcome is Ended.NOT_RUN or cell.injected == 0 else ""
    title = f' title="{esc(verdict(cell))}"' if cell is not None else ""
    return f'<td class="{kind}"{title}>' + "<br>".join(esc(x) for x in counts_lines(cell)) + "</td>"


def render_html(cells: list[FaultCell], plans: list[str], run: dict[str, Any] | None = None) -> str:
    """The fault run as one self-contained page: the fault plans, a sentence per database and fault, the matrix
    of outcomes per configuration x database settings, every cell's verdict, the literature and the model."""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>pickfs: {esc(TITLE)}</title><style>{STYLE}</style></head><body>", f"<h1>{esc(TITLE)}</h1>"]
    out += [f"<p>{esc(x)}</p>" for x in header_lines(run)]
    out += ["<h2>Fault plans</h2><ul>"] + [f"<li>{esc(p)}</li>" for p in plans] + ["</ul>"]
    out += ["<h2>What happened</h2><ul>"] + [f"<li>{esc(s)}</li>" for s in sentences(cells)] + ["</ul>"]
    out.append(f'<p class="small">{esc(SAMPLE)}; a red cell lost acknowledged commits, did not come up or was '
               "found corrupt after restart; hover a cell for its verdict.</p>")
    for m in matrices(cells):
        out.append(f"<h3>{esc(m.plan)}</h3><table><tr><th>database</th>"
                   + "".join(f"<th>{esc(k)}</th>" for k in m.configs) + "</tr>")
        out += [f"<tr><th>{esc(db)}</th>" + "".join(matrix_cell_html(c) for c in row_cells) + "</tr>"
                for db, row_cells in m.rows]
        out.append("</table>")
    out.append("<h2>Every cell</h2><table><tr>" + "".join(f"<th>{esc(k)}</th>" for k in COLUMNS) + "</tr>")
    for c in cells:
        out.append("<tr>" + "".join(f'<td class="n">{esc(x)}</td>' if k in FIGURES else f"<td>{esc(x)}</td>"
                                    for k, x in zip(COLUMNS, row(c), strict=True)) + "</tr>")
    out.append("</table><h2>Verdicts</h2><ul>")
    out += [f"<li>{esc(verdict(c))}</li>" for c in cells] + ["</ul>"]
    said = literature(cells)
    if said:
        out += ["<h2>What the literature says</h2><ul>"] + [f'<li class="small">{esc(x)}</li>' for x in said]
        out.append("</ul>")
    out += [f'<p class="small">Note: {esc(n)}</p>' for n in notes(cells)]
    out += [f'<p class="small">Model: {esc(MODEL)}</p>', "</body></html>", ""]
    return "\n".join(out)


# -- CSV -------------------------------------------------------------------------------------------------------
CSV_COLUMNS = ("configuration", "database", "settings", "fault", "plan", "outcome", "injected", "acknowledged",
               "acknowledged_present", "acknowledged_lost", "errors_to_client", "false_failures", "old_value",
               "corruption", "came_up", "fsck_ok", "server", "filesystem", "told_after_s", "first_error", "seconds",
               "verdict")


def csv_row(cell: FaultCell) -> list[object]:
    c, b, t = cell.counts, cell.behaviour, cell.truth
    figures: list[object] = ["", "", "", "", "", "", ""] if c is None else \
        [c.acked, "", "", c.failed, "", "", c.corruption] if cell.judged else \
        [c.acked, c.acked_present, c.acked_lost, c.failed, c.false_failures, c.old_value, c.corruption]
    return [cell.config, cell.database, cell.settings, cell.fault, cell.plan, cell.outcome.value, cell.injected,
            *figures, "" if t is None else int(t.came_up), "" if t is None or t.fsck_ok is None else int(t.fsck_ok),
            "" if b is None else b.server, "" if b is None else b.filesystem,
            "" if cell.told_after_s is None else f"{cell.told_after_s:.6f}", cell.first_error, f"{cell.seconds:.1f}",
            verdict(cell)]


def _csv(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def render_csv(cells: list[FaultCell]) -> str:
    """One row per cell with every figure and what the server and the filesystem did (pure)."""
    return _csv(CSV_COLUMNS, (csv_row(c) for c in cells))


def render_table_csv(cells: list[FaultCell]) -> str:
    """The table every format shows, as CSV (pure)."""
    return _csv(COLUMNS, (row(c) for c in cells))


# -- in one line ------------------------------------------------------------------------------------------------
def summary(cells: list[FaultCell]) -> str:
    """The run in one line, for the list of runs (pure)."""
    ran = [c for c in cells if c.outcome is not Ended.NOT_RUN and c.injected]
    down = [c for c in ran if c.truth is not None and not c.truth.came_up]
    lost_in = [c for c in ran if lost(c)]
    parts = [f"fault test: {plural(len(cells), 'cell')}" + (f", {len(cells) - len(ran):,} not run or the fault never "
                                                             "fired" if len(ran) < len(cells) else "")]
    judged = " (or your check failed)" if any(c.judged for c in lost_in) else ""
    parts.append(f"acknowledged commits lost{judged} in {plural(len(lost_in), 'cell')}" if lost_in
                 else "no acknowledged commit lost" if ran else "nothing measured")
    if down:
        parts.append(f"{plural(len(down), 'database')} did not come up")
    return "; ".join(parts)


def found(cell: FaultCell) -> str:
    """What a cell's check after restart found, in a few words: 'LOST of ACKNOWLEDGED lost', or for the user's own
    command, whose check judges (which acknowledged work was lost cannot be told), 'check passed' or 'check failed';
    "" when the fault never fired (pure)."""
    n = cell.counts
    if n is None or not cell.injected:
        return ""
    return f"check {'failed' if n.corruption else 'passed'}" if cell.judged else f"{n.acked_lost} of {n.acked} lost"


def quiet_lines(cells: list[FaultCell]) -> list[str]:
    """For scripts: a line per cell, 'CONFIGURATION DATABASE FAULT: OUTCOME, LOST of ACKNOWLEDGED lost' (pure)."""
    return [f"{c.config} {c.database} {c.fault}: {c.outcome.value}" + (f", {found(c)}" if found(c) else "")
            for c in cells]
