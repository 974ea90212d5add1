"""Terminal tables (pure: builds Rich renderables; the console prints them)."""

from __future__ import annotations

import time
from dataclasses import replace

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from pickfs.analysis.answer import recommended, recommended_setup
from pickfs.analysis.run import AnalysedRun, analysed
from pickfs.analysis.setup import what_it_is
from pickfs.analysis.views import WorkloadView, risk_legend
from pickfs.model import FsConfig, RunRecord
from pickfs.report.crash_text import crash_details, crash_statements
from pickfs.report.disturbance import disturbance_line
from pickfs.report.latency import latency_tables
from pickfs.report.scaling import scaling_text
from pickfs.report.table import (
    CONFIGURATION,
    MEDIAN,
    NOTES,
    VERDICT,
    Column,
    ResultTable,
    TableRow,
    breakdown_transposed,
    build_table,
    terse,
)
from pickfs.report.text import (
    CRASH_COLUMNS,
    breakdown_cells,
    crash_cells,
    live_line,
    method_lines,
    scored,
    values_text,
)

TONES = {"neutral": "dim", "good": "green", "bad": "red"}
GAP = 2  # columns between two columns of a table


def _name(row: TableRow) -> Text:
    """A configuration's name, whole: ★ when recommended, ⚠ when a setting trades safety for speed."""
    text = Text(("★ " if row.recommended else "") + row.config, style="bold" if row.recommended else "")
    if row.unsafe:
        text.append(" ⚠", style="yellow")
    return text


def _width(table: ResultTable, col: Column) -> int:
    if col.key == CONFIGURATION:
        cells = [_name(r).cell_len for r in table.rows]
    else:
        cells = [len(r.cells.get(col.key, "")) for r in table.rows]
    return max([len(col.head), *cells])


def fitting_columns(table: ResultTable, width: int) -> list[Column]:
    """The columns that fit in `width`, the wide ones dropped first (the last first); the details (other central
    values) are for --explain's own table."""
    cols = [c for c in table.columns if not c.detail and (c.key != NOTES or table.notes)]

    def total(cs: list[Column]) -> int:
        return sum(_width(table, c) for c in cs) + GAP * (len(cs) - 1)
    for drop in [c for c in reversed(cols) if c.wide]:
        if total(cols) <= width:
            break
        cols.remove(drop)
    return cols


class FittedTable:
    """The results table drawn for the width it is given (a Rich renderable: the console says the width)."""

    def __init__(self, table: ResultTable) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        t = self.table
        cols = fitting_columns(t, options.max_width)
        # one space between columns where two would not fit: no verdict folded into a column of its own
        tight = sum(_width(t, c) for c in cols) + GAP * (len(cols) - 1) > options.max_width
        out = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0) if tight else
                    (0, GAP // 2), title=t.caption, title_justify="left", title_style="bold")
        for c in cols:
            out.add_column(c.head, justify="right" if c.numeric else "left", min_width=_width(t, c)
                           if c.key != VERDICT else None, no_wrap=c.key != VERDICT, overflow="fold")
        for r in t.rows:
            cells: list[Text | str] = []
            for c in cols:
                if c.key == CONFIGURATION:
                    cells.append(_name(r))
                elif c.key == VERDICT:
                    cells.append(Text(r.cells[c.key], style=TONES[r.tone]))
                else:
                    cells.append(r.cells.get(c.key, ""))
            out.add_row(*cells)
        yield out


def central_values(table: ResultTable) -> Table:
    """--explain: every central value beside the median (the geometric mean with its interval, the sanitized mean)."""
    out = Table(title=f"{table.workload}: central values ({table.unit})", title_justify="left", box=box.SIMPLE_HEAD,
                show_edge=False, pad_edge=False)
    cols = [c for c in table.columns if c.key in (CONFIGURATION, MEDIAN) or c.detail]
    for c in cols:
        out.add_column(c.head, justify="right" if c.numeric else "left", no_wrap=c.key == CONFIGURATION)
    for r in table.rows:
        out.add_row(*(r.cells.get(c.key, "") for c in cols))
    return out


def notes_block(table: ResultTable, full: bool = False) -> list[Text]:
    """The table's notes under it, each once and whole (never cut); the default view draws them without the
    routine ones (`without_routine`)."""
    out = []
    for n in table.notes:
        line = Text(f"{n.number:>2} ", style="bold")
        line.append(n.text, style="dim")
        out.append(line)
    return out


def breakdown_table(view: WorkloadView, space: bool = True) -> Table | None:
    """The breakdown: a column per configuration when they are few, else a row per configuration (names whole
    however many there are) and a column per figure; the space used only with `space`."""
    configs, rows = breakdown_cells(view, space)
    if not rows or not configs:
        return None
    note = f"; (n): {view.baseline} = 100" if view.baseline and scored(rows) else ""
    table = Table(title=f"{view.label}: medians per configuration{note}", title_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    transposed = len(configs) > len(rows)
    if transposed:
        heads, rows = breakdown_transposed(configs, rows)
        table.add_column("configuration", no_wrap=True, min_width=max(len(c) for c in configs))
    else:
        heads = configs
        table.add_column("", no_wrap=True, min_width=max(len(label) for label, _ in rows))
    for head in heads:
        table.add_column(head, justify="right", no_wrap=not transposed)  # figures' names may wrap, not configs'

    for label, cells in rows:
        table.add_row(label, *cells)
    return table


class CrashTable:
    """The crash test: every count in a column where they fit, else each configuration's verdict in words."""

    def __init__(self, view: WorkloadView) -> None:
        self.view, self.rows = view, crash_cells(view)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        name_w = max(len(name) for name, _, _ in self.rows)
        widths = [max(len(col), *(len(cells[i]) for _, cells, _ in self.rows))
                  for i, col in enumerate(CRASH_COLUMNS[:-1])]
        full = name_w + sum(widths) + GAP * len(widths) + GAP + 24 <= options.max_width
        table = Table(title=f"{self.view.label}: crash test (acknowledged commits after a simulated power cut)",
                      title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        table.add_column("configuration", no_wrap=True, min_width=name_w)
        if full:
            for col in CRASH_COLUMNS[:-1]:
                table.add_column(col, justify="right", no_wrap=True)
        table.add_column("verdict", ratio=1)
        crashed = {r.cell.config.name: r.crash for r in self.view.rows if r.crash is not None}
        for name, cells, lost in self.rows:
            what = cells[-1] if full or crashed[name] is None else crashed[name].verdict()
            table.add_row(name, *(cells[:-1] if full else []), Text(what, style="red" if lost else "green"))
        yield table


def crash_table(view: WorkloadView) -> list[CrashTable]:
    return [CrashTable(view)] if crash_cells(view) else []


def explanation_block(view: WorkloadView) -> list[Text]:
    """Every configuration's full explanation (--explain)."""
    out = []
    for row in view.rows:
        if row.explanation:
            out.append(Text(f"why {row.cell.config.name}:", style="bold"))
            out.extend(Text(f"  {line}") for line in row.explanation)
    return out


def matters(view: WorkloadView) -> list[str]:
    """The configuration worth a line of explanation in the default view: the one recommended (--explain explains
    every configuration)."""
    chosen = recommended(view)
    return [r.cell.config.name for r in view.rows if r.cell.config.name == chosen]


def explanation_lines(view: WorkloadView) -> list[Text]:
    """One line of explanation per configuration that matters (its first: the device's writes and flushes)."""
    names = set(matters(view))
    return [Text(f"why {r.cell.config.name}: {r.explanation[0]}", style="dim")
            for r in view.rows if r.cell.config.name in names and r.explanation]


def values_lines(view: WorkloadView) -> list[Text]:
    """Each configuration's figures run by run (or slice by slice), in the order measured."""
    rows = [r for r in view.rows if r.primary.values]
    if not rows:
        return []
    what = "slice" if any(r.slice_s for r in rows) else "run"
    width = max(len(r.cell.config.name) for r in rows)
    head = Text(f"per {what} ({rows[0].primary.metric.unit}, in the order measured):", style="dim")
    return [head, *(Text(f"  {r.cell.config.name:<{width}}  {values_text(r)}", style="dim") for r in rows)]


def answer_lines(tables: list[ResultTable]) -> list[Text]:
    """Every workload's answer, first: its first sentence in bold, the rest after it."""
    out = []
    for t in tables:
        first, *rest = t.answer.sentences
        line = Text(first, style="bold")
        if rest:
            line.append(" " + " ".join(rest))
        out.append(line)
    return out


def setup_lines(views: list[WorkloadView]) -> list[Text]:
    """Under the answer, for each workload's recommended configuration: the setup to apply."""
    out = []
    for view in views:
        setup = recommended_setup(view)
        name = recommended(view)
        if setup is None or name is None:
            continue
        out.append(Text(f"{view.label}: the setup of {name} (DEVICE and DATABASE: yours):"))
        out.extend(Text(line, style="cyan") for line in setup.lines())
    return out


def configuration_lines(configs: tuple[FsConfig, ...]) -> list[Text]:
    """What each configuration is: its filesystem, mkfs and mount options, scheduler."""
    if not configs:
        return []
    width = max(len(c.name) for c in configs)
    return [Text("configurations:", style="bold"),
            *(Text(f"  {c.name:<{width}}  {what_it_is(c)}", style="dim") for c in configs)]


def without_routine(table: ResultTable) -> ResultTable:
    """The table as the default view draws it: the routine notes (each image's fragmentation) neither under it nor
    in its notes column (--explain shows them)."""
    routine = {n.number for n in table.notes if n.routine}
    if not routine:
        return table
    rows = tuple(replace(r, notes=kept, cells={**r.cells, NOTES: " ".join(str(n) for n in kept)})
                 for r in table.rows for kept in [tuple(n for n in r.notes if n not in routine)])
    return replace(table, rows=rows, notes=tuple(n for n in table.notes if not n.routine))


def view_parts(view: WorkloadView, table: ResultTable | None, explain: bool) -> list[RenderableType]:
    """A workload's part of the report: its table with the notes under it, the phases (and with explain the space
    used), the crash test, how it was measured, and why."""
    parts: list[RenderableType] = [Text("")]
    if table is not None and not explain:
        table = without_routine(table)
    if table is not None:
        parts.append(FittedTable(table))
        parts.extend(notes_block(table, full=explain))
        if explain:
            parts.append(central_values(table))
        details = breakdown_table(view, space=explain)
        if details is not None:
            parts += [Text(""), details]
    crash = crash_table(view)
    if crash:
        parts += [Text(""), *crash]
    parts.extend(Text(line, style="dim") for line in crash_details(view))  # crash-fidelity work
    if table is not None:
        parts.extend(Text(line, style="dim") for line in method_lines(view, full=explain))
        if explain:
            parts.extend(values_lines(view))
        parts.extend(explanation_block(view) if explain else explanation_lines(view))
    return parts


def render_run(run: RunRecord | AnalysedRun, explain: bool = False, live: bool = False) -> Group:
    """The answer first with the setup to apply, then per workload its table with the notes under it (whole, the
    routine ones in one line), the phases measured, the crash test, one line for the method and one for the
    resolution; then what needs saying once (the crash model, the settings that trade safety for speed, the run's
    notes). explain=True adds the geometric and sanitized means, the space used, every slice's figure, the race log,
    what each configuration is, every explanation in full and every note. live=True (a run another pickfs is
    executing; or the analysis says so): first that it is still running, and no answer, whose advice (run longer)
    would not apply to a run that has not ended."""
    analysis = analysed(run)
    live = live or analysis.live
    record, views = analysis.record, list(analysis.views)
    tables = {v.label: build_table(v, live) for v in views if v.measured}
    parts: list[RenderableType] = []
    if live:
        parts.append(Text(live_line(analysis), style="bold yellow"))
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.created))
    host = record.host
    parts.append(Text(f"run {record.id} ({record.status}), {when}, {host.get('hostname', '?')}: "
                      f"{host.get('os', '?')}, kernel {host.get('kernel', '?')}, "
                      f"images on {host.get('fingerprint', {}).get('mount.fstype', '?')}", style="dim"))
    busy = disturbance_line(analysis.disturbance)  # a disturbed run says so first, before the answer
    if busy:
        parts.append(Text(busy, style="bold yellow"))
    for w in record.plan.get("warnings", []):
        parts.append(Text(f"warning: {w}", style="yellow"))
    if not live:
        parts.extend(answer_lines(list(tables.values())))
        parts.extend(setup_lines(views))
    for view in views:
        parts.extend(view_parts(view, tables.get(view.label), explain))
    parts.extend(Text(block) for block in scaling_text(record).split("\n\n") if block)  # report/scaling.py
    parts.extend(latency_tables(analysis.fixed))  # fixed rate and the capacity search: report/latency.py
    parts.extend(Text(line, style="dim") for line in crash_statements(views))  # the model in force, what none shows
    if explain:
        parts.extend(configuration_lines(analysis.plan.configs))
    legend = risk_legend(views)
    if legend:
        parts.append(Text("⚠ trades safety for speed:", style="yellow"))
        parts.extend(Text(line) for line in legend)
    for note in record.notes:
        parts.append(Text(f"note: {note}", style="dim"))
    if not explain and not any(v.race is not None for v in views):  # a race's line says it already
        parts.append(Text("more with --explain: the method, space, every note, what each configuration is",
                          style="dim"))
    return Group(*parts)


def terse_lines(run: RunRecord | AnalysedRun, live: bool = False) -> list[str]:
    """--quiet: one line per workload measured, the configuration the run names, for scripts; a run still being
    executed (live) marks each line '(still running)', as an undecided one is marked '(undecided)'."""
    lines = [terse(build_table(v)) for v in analysed(run).views if v.measured]
    return [f"{line} (still running)" for line in lines] if live else lines
