"""Two runs side by side (pure): first each run's answer, then matching cells with B against A as a speed factor
(the report's convention: above 1 faster in B, a time ratio inverted) and its significance; what one run did not
record, said once; the settings that differ between matched cells, each difference once with its cells; each
run's ranking side by side; unmatched cells listed. As a table for the terminal, or as JSON."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from pickfs.analysis.answer import answer_words
from pickfs.analysis.run import AnalysedRun, analyse, analysed
from pickfs.analysis.views import Row
from pickfs.model import RunRecord
from pickfs.report.envdiff import diff as env_diff
from pickfs.report.text import factor_interval, fmt_p, fmt_with_unit, speed_interval
from pickfs.stats.compare import ALPHA, Comparison, compare

MACHINE_DIFFERENCES = 6  # storage differences between the two machines named under the table


@dataclass(frozen=True)
class CellPair:
    config: str
    workload: str
    a: Row | None
    b: Row | None
    comparison: Comparison | None  # b against a
    differences: tuple[str, ...] = ()  # settings that differ between the two runs' cells, named


def _mount_of(record: RunRecord, cell_index: int) -> dict[str, Any]:
    """The options in force as the first measured trial of a cell read them back."""
    for t in record.trials:
        if t.cell_index == cell_index and t.mount and t.mount.get("effective_options"):
            return t.mount
    return {}


def _options(mount: dict[str, Any]) -> dict[str, str]:
    out = {}
    for opt in mount.get("effective_options", ()) or ():
        key, _, value = str(opt).partition("=")
        if key in ("barrier", "nobarrier"):
            out["barrier"] = "off" if key == "nobarrier" or value == "0" else "on"
        else:
            out[key] = value or "on"
    return out


def _show(value: Any) -> str:
    if value is None or value == [] or value == ():
        return "(unset)"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def setting_differences(a: Row, b: Row, mount_a: dict[str, Any], mount_b: dict[str, Any]) -> list[str]:
    """What differs between the same cell in two runs, each named 'what: A -> B' (pure)."""
    out = []
    sa, sb = a.cell.config.settings(), b.cell.config.settings()
    for key in ("fstype", "mkfs_options", "mount_options", "scheduler"):
        if sa.get(key) != sb.get(key):
            out.append(f"{key.replace('_', ' ')}: {_show(sa.get(key))} -> {_show(sb.get(key))}")
    wa, wb = dict(a.cell.workload.settings), dict(b.cell.workload.settings)
    if a.cell.workload.name != b.cell.workload.name:
        out.append(f"workload: {a.cell.workload.name} -> {b.cell.workload.name}")
    for key in sorted(set(wa) | set(wb)):
        if wa.get(key) != wb.get(key):
            out.append(f"{key}: {_show(wa.get(key))} -> {_show(wb.get(key))}")
    oa, ob = _options(mount_a), _options(mount_b)
    for key in sorted(set(oa) & set(ob)):  # an option one run did not record is said once (not_recorded)
        if oa[key] != ob[key]:
            out.append(f"in force {key}: {oa[key]} -> {ob[key]}")
    return out


def not_recorded(a: RunRecord, b: RunRecord) -> list[str]:
    """What one run recorded and the other did not, once for the whole comparison (never a difference per cell):
    the options in force read back after mount."""
    def keys(record: RunRecord) -> set[str]:
        return {k for t in record.trials if t.mount and t.mount.get("effective_options") for k in _options(t.mount)}
    ka, kb = keys(a), keys(b)
    out = []
    for mine, theirs, run, other in ((ka, kb, "A", "B"), (kb, ka, "B", "A")):
        if theirs and not mine:
            out.append(f"run {run} did not record the options in force (run {other} did): they are not compared")
        elif mine and theirs and theirs - mine:
            out.append(f"run {run} did not record the options in force {', '.join(sorted(theirs - mine))} (run "
                       f"{other} did): not compared")
    return out


def pair_runs(run_a: RunRecord | AnalysedRun, run_b: RunRecord | AnalysedRun) -> list[CellPair]:
    analysis_a, analysis_b = analysed(run_a), analysed(run_b)
    a, b = analysis_a.record, analysis_b.record
    rows_a = {(r.cell.config.name, v.label): r for v in analysis_a.views for r in v.rows}
    rows_b = {(r.cell.config.name, v.label): r for v in analysis_b.views for r in v.rows}
    keys = list(rows_a) + [k for k in rows_b if k not in rows_a]
    out = []
    for key in keys:
        ra, rb = rows_a.get(key), rows_b.get(key)
        c = compare(rb.primary.values, ra.primary.values) if ra and rb else None
        diffs = setting_differences(ra, rb, _mount_of(a, ra.cell.index), _mount_of(b, rb.cell.index)) \
            if ra and rb else []
        out.append(CellPair(key[0], key[1], ra, rb, c, tuple(diffs)))
    return out


@dataclass(frozen=True)
class Ranking:
    workload: str
    a: tuple[tuple[str, str], ...]  # (configuration, median as shown), best first
    b: tuple[tuple[str, str], ...]


def _ranked(rows: list[Row]) -> tuple[tuple[str, str], ...]:
    measured = [r for r in rows if r.primary.summary is not None]
    if not measured:
        return ()
    better_high = measured[0].primary.metric.higher_is_better
    measured.sort(key=lambda r: r.primary.summary.median if r.primary.summary else 0.0, reverse=better_high)
    return tuple((r.cell.config.name, fmt_with_unit(r.primary.summary.median if r.primary.summary else None,
                                                    r.primary.metric)) for r in measured)


def rankings(a: RunRecord | AnalysedRun, b: RunRecord | AnalysedRun) -> list[Ranking]:
    """Each workload's configurations ranked best first by their median, in each run (pure)."""
    views_a = {v.label: list(v.rows) for v in analysed(a).views}
    views_b = {v.label: list(v.rows) for v in analysed(b).views}
    labels = list(views_a) + [x for x in views_b if x not in views_a]
    return [Ranking(x, _ranked(views_a.get(x, [])), _ranked(views_b.get(x, []))) for x in labels]


def machine_differences(a: RunRecord, b: RunRecord) -> list[str]:
    """The storage differences between the two runs' machines, most telling first (pure)."""
    fa, fb = a.host.get("fingerprint") or {}, b.host.get("fingerprint") or {}
    if not fa or not fb:
        return []
    return [f"{d.key}: {d.a if d.a is not None else '(absent)'} -> {d.b if d.b is not None else '(absent)'}"
            for d in env_diff(fa, fb) if d.storage][:MACHINE_DIFFERENCES]


def speed_b_vs_a(p: CellPair) -> tuple[float, float, float] | None:
    """B against A as a speed factor with its 95% interval (above 1: faster in B; a time metric inverted)."""
    if p.comparison is None or p.a is None:
        return None
    return speed_interval(p.comparison, p.a.primary.metric.higher_is_better)


def _median(r: Row | None) -> str:
    if r is None:
        return "(not in run)"
    s = r.primary.summary
    return fmt_with_unit(s.median, r.primary.metric) if s else r.status


def _verdict(p: CellPair) -> tuple[str, str]:
    """The verdict on B against A, and its style."""
    c, sp = p.comparison, speed_b_vs_a(p)
    if c is None or sp is None:
        return ("only in one run" if p.a is None or p.b is None else "too few to compare"), "dim"
    if c.p < ALPHA:
        return f"{'faster' if sp[0] > 1 else 'slower'} in B, {fmt_p(c.p)}", "bold"
    return "no significant difference", "dim"


def answers_side_by_side(a: AnalysedRun, b: AnalysedRun) -> list[tuple[str, str, str]]:
    """Each workload's answer in each run: (workload, A's, B's)."""
    ta = {v.label: answer_words(v) for v in a.views if v.measured}
    tb = {v.label: answer_words(v) for v in b.views if v.measured}
    labels = list(ta) + [x for x in tb if x not in ta]
    return [(x, ta.get(x, "(not in run)"), tb.get(x, "(not in run)")) for x in labels]


def differences_once(pairs: list[CellPair]) -> list[tuple[str, tuple[str, ...]]]:
    """Each setting that differs, once, with the cells ('configuration/workload') it differs in."""
    out: dict[str, list[str]] = {}
    for p in pairs:
        for d in p.differences:
            out.setdefault(d, []).append(f"{p.config}/{p.workload}")
    return [(d, tuple(cells)) for d, cells in out.items()]


def _run_line(name: str, r: RunRecord) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created))
    return f"{name} = {r.id} ({r.host.get('hostname', '?')}, pickfs {r.pickfs_version}, {when})"


def comparison_table(run_a: RunRecord | AnalysedRun, run_b: RunRecord | AnalysedRun) -> Table:
    a, b = analysed(run_a), analysed(run_b)
    return _comparison_table(pair_runs(a, b))


def _comparison_table(pairs: list[CellPair]) -> Table:
    table = Table(title="matching cells: B against A as a speed factor of the geometric means (above 1: faster in "
                  "B; a time inverted), 95% interval", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                  pad_edge=False, padding=(0, 1, 0, 0))
    workloads = len({p.workload for p in pairs}) > 1  # one workload: named in the answers above, not per row
    cols = ["configuration", *(["workload"] if workloads else []), "A median", "B median", "B vs A [95%]", "verdict"]
    # a narrow terminal wraps the verdict and the medians (figure, then unit) at their spaces, never cuts a word
    longest_word = max((len(w) for p in pairs for w in _verdict(p)[0].split()), default=0)
    for col in cols:
        table.add_column(col, justify="right" if "median" in col or "[" in col else "left",
                         no_wrap=col not in ("verdict", "A median", "B median"),
                         min_width=longest_word if col == "verdict" else None)
    for p in pairs:
        sp = speed_b_vs_a(p)
        text, style = _verdict(p)
        table.add_row(p.config, *([p.workload] if workloads else []), _median(p.a), _median(p.b),
                      "-" if sp is None else factor_interval(*sp), Text(text, style=style))
    return table


def ranking_table(r: Ranking) -> Table:
    table = Table(title=f"{r.workload}: ranking in each run, best first", title_justify="left")
    for col in ("rank", "A", "B"):
        table.add_column(col, justify="right" if col == "rank" else "left")
    for i in range(max(len(r.a), len(r.b))):
        cell_a = f"{r.a[i][0]} ({r.a[i][1]})" if i < len(r.a) else ""
        cell_b = f"{r.b[i][0]} ({r.b[i][1]})" if i < len(r.b) else ""
        table.add_row(str(i + 1), cell_a, cell_b)
    return table


def comparison_report(a: RunRecord, b: RunRecord) -> Group:
    """The whole `pickfs compare` output: each run's answer side by side first, what one run did not record (once),
    matched cells, each setting that differs once, rankings side by side, the machines' differences."""
    run_a, run_b = analyse(a), analyse(b)  # each run analysed once, for every table
    pairs = pair_runs(run_a, run_b)
    parts: list[Any] = [Text(_run_line("A", a), style="dim"), Text(_run_line("B", b), style="dim")]
    answers = Table(title="the answers", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in ("workload", "A", "B"):
        answers.add_column(col)
    for label, in_a, in_b in answers_side_by_side(run_a, run_b):
        answers.add_row(label, in_a, Text(in_b, style="bold" if in_a != in_b else ""))
    parts.append(answers)
    parts += [Text(line, style="yellow") for line in not_recorded(a, b)]
    parts.append(_comparison_table(pairs))
    for what, cells in differences_once(pairs):
        parts.append(Text(f"settings differ: {what} ({', '.join(cells)})", style="yellow"))
    parts += [ranking_table(r) for r in rankings(run_a, run_b) if r.a or r.b]
    machines = machine_differences(a, b)
    if machines:
        parts.append(Text("the machines' storage stacks differ in: " + "; ".join(machines), style="yellow"))
    return Group(*parts)


def comparison_dict(a: RunRecord, b: RunRecord) -> dict[str, Any]:
    """`pickfs compare --json`: the same as the terminal shows, as data (schema pickfs.compare/1)."""
    run_a, run_b = analyse(a), analyse(b)
    pairs = pair_runs(run_a, run_b)

    def run(r: RunRecord) -> dict[str, Any]:
        return {"id": r.id, "hostname": r.host.get("hostname"), "pickfs_version": r.pickfs_version,
                "created": r.created, "status": r.status}

    def cell(p: CellPair) -> dict[str, Any]:
        sp = speed_b_vs_a(p)
        row = p.a or p.b
        return {"configuration": p.config, "workload": p.workload,
                "unit": row.primary.metric.unit if row else None,
                "a_median": p.a.primary.summary.median if p.a and p.a.primary.summary else None,
                "b_median": p.b.primary.summary.median if p.b and p.b.primary.summary else None,
                "only_in": None if p.a and p.b else ("A" if p.a else "B"),
                "speed_b_vs_a": None if sp is None else sp[0], "ci_low": None if sp is None else sp[1],
                "ci_high": None if sp is None else sp[2], "p": None if p.comparison is None else p.comparison.p,
                "verdict": _verdict(p)[0], "differences": list(p.differences)}

    return {"schema": "pickfs.compare/1", "a": run(a), "b": run(b),
            "answers": [{"workload": w, "a": x, "b": y} for w, x, y in answers_side_by_side(run_a, run_b)],
            "not_recorded": not_recorded(a, b), "cells": [cell(p) for p in pairs],
            "differences": [{"setting": d, "cells": list(c)} for d, c in differences_once(pairs)],
            "rankings": [{"workload": r.workload, "a": [n for n, _ in r.a], "b": [n for n, _ in r.b]}
                         for r in rankings(run_a, run_b)],
            "machines": machine_differences(a, b)}
