"""The terminal's formats (pure: they build Rich renderables and lines; the console prints them): the default view,
--explain and --quiet, each drawing report/sections.py's sections."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from pickfs.analysis.answer import recommended
from pickfs.analysis.latency import FixedRate
from pickfs.analysis.run import AnalysedRun
from pickfs.analysis.views import WorkloadView
from pickfs.model import FsConfig, RunRecord
from pickfs.report.crash_text import crash_details
from pickfs.report.latency import latency_cells
from pickfs.report.scaling import scaling_text
from pickfs.report.sections import (
    Answers,
    Configurations,
    CrashModel,
    Disturbed,
    FixedRates,
    Format,
    Heading,
    Machine,
    MoreHint,
    Report,
    RiskLegend,
    RunNotes,
    ScalingWithClients,
    Warnings,
    Workload,
    WorkloadAnswer,
)
from pickfs.report.table import (
    CONFIGURATION,
    MEDIAN,
    NOTES,
    VERDICT,
    Column,
    ResultTable,
    TableRow,
    breakdown_transposed,
    terse_answer,
)
from pickfs.report.text import (
    CRASH_COLUMNS,
    breakdown_cells,
    crash_cells,
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


def answer_lines(answers: Sequence[WorkloadAnswer]) -> list[Text]:
    """Every workload's answer, first: its first sentence in bold, the rest after it."""
    out = []
    for a in answers:
        first, *rest = a.answer.sentences
        line = Text(first, style="bold")
        if rest:
            line.append(" " + " ".join(rest))
        out.append(line)
    return out


def setup_lines(answers: Sequence[WorkloadAnswer]) -> list[Text]:
    """Under the answer, for each workload's recommended configuration: the setup to apply."""
    out = []
    for a in answers:
        if a.setup is None or a.named is None:
            continue
        out.append(Text(f"{a.label}: the setup of {a.named} (DEVICE and DATABASE: yours):"))
        out.extend(Text(line, style="cyan") for line in a.setup.lines())
    return out


def configuration_lines(items: Sequence[tuple[FsConfig, str]]) -> list[Text]:
    """What each configuration is: its filesystem, mkfs and mount options, scheduler (analysis/setup.py's words)."""
    if not items:
        return []
    width = max(len(c.name) for c, _ in items)
    return [Text("configurations:", style="bold"),
            *(Text(f"  {c.name:<{width}}  {what}", style="dim") for c, what in items)]


def fixed_rate_tables(fixed: FixedRate) -> list[Table]:
    """The fixed-rate and capacity tables ([] for a closed-loop run)."""
    tables = []
    for title, header, rows in latency_cells(fixed):
        table = Table(title=title, title_justify="left")
        for i, h in enumerate(header):
            table.add_column(h, justify="left" if i == 0 or h.startswith("rates tried") else "right")
        for r in rows:
            table.add_row(*r)
        tables.append(table)
    return tables


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


Parts = list[RenderableType]


class TerminalFormat(Format[Parts, Group]):
    """The terminal: the answer first with the setup to apply, then per workload its table with the notes under it
    (whole, the routine ones in one line), the phases measured, the crash test, one line for the method and one
    for the resolution; then what needs saying once (the crash model, the settings that trade safety for speed, the
    run's notes). `explain` adds the geometric and sanitized means, the space used, every slice's figure, the race
    log, what each configuration is, every explanation in full and every note."""

    def __init__(self, explain: bool = False) -> None:
        self.explain = explain
        self.name = "terminal --explain" if explain else "terminal"

    def document(self, report: Report, parts: list[Parts]) -> Group:
        return Group(*(r for part in parts for r in part))

    def heading(self, s: Heading) -> Parts:
        """The run in one dim line; a run still being executed says so first (its figures are partial)."""
        record, host = s.analysis.record, s.analysis.record.host
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.created))
        return [*([Text(s.live, style="bold yellow")] if s.live else []),
                Text(f"run {record.id} ({record.status}), {when}, {host.get('hostname', '?')}: "
                     f"{host.get('os', '?')}, kernel {host.get('kernel', '?')}, "
                     f"images on {host.get('fingerprint', {}).get('mount.fstype', '?')}", style="dim")]

    def disturbed(self, s: Disturbed) -> Parts:
        return [Text(s.line, style="bold yellow")] if s.line else []

    def warnings(self, s: Warnings) -> Parts:
        return [Text(f"warning: {w}", style="yellow") for w in s.lines]

    def answers(self, s: Answers) -> Parts:
        """The answers and the setups to apply; none for a run still being executed (its advice, run longer, would
        not apply to a run that has not ended)."""
        return [] if s.live else [*answer_lines(s.items), *setup_lines(s.items)]

    def workload(self, s: Workload) -> Parts:
        return view_parts(s.view, s.table, self.explain)

    def crash_model(self, s: CrashModel) -> Parts:
        return [Text(line, style="dim") for line in s.lines]

    def risk_legend(self, s: RiskLegend) -> Parts:
        if not s.lines:
            return []
        return [Text("⚠ trades safety for speed:", style="yellow"), *(Text(line) for line in s.lines)]

    def scaling(self, s: ScalingWithClients) -> Parts:
        return [Text(block) for block in scaling_text(s.scalings).split("\n\n") if block]

    def fixed_rates(self, s: FixedRates) -> Parts:
        return list(fixed_rate_tables(s.fixed))

    def configurations(self, s: Configurations) -> Parts:
        return [*configuration_lines(s.items)] if self.explain else []  # by default the names say enough

    def machine(self, s: Machine) -> Parts:
        return []  # the heading's line names the machine; its every fact is in --json and --html

    def run_notes(self, s: RunNotes) -> Parts:
        return [Text(f"note: {note}", style="dim") for note in s.notes]

    def more_hint(self, s: MoreHint) -> Parts:
        if self.explain or not s.shown:
            return []
        return [Text("more with --explain: the method, space, every note, what each configuration is", style="dim")]


class QuietFormat(Format[list[str], list[str]]):
    """--quiet: one line per workload measured, the configuration the run names, for scripts; a run still being
    executed marks each line '(still running)', as an undecided one is marked '(undecided)'. Every other section
    is left out: a script reads one line per workload."""

    name = "terminal --quiet"

    def document(self, report: Report, parts: list[list[str]]) -> list[str]:
        return [line for part in parts for line in part]

    def answers(self, s: Answers) -> list[str]:
        lines = [terse_answer(a.label, a.answer) for a in s.items]
        return [f"{line} (still running)" for line in lines] if s.live else lines

    def heading(self, s: Heading) -> list[str]:
        return []  # a script knows which run it asked for

    def disturbed(self, s: Disturbed) -> list[str]:
        return []  # said in the default view and the files; a line here would read as a workload's

    def warnings(self, s: Warnings) -> list[str]:
        return []  # as above

    def workload(self, s: Workload) -> list[str]:
        return []  # its answer is the line; its figures are in the other formats

    def crash_model(self, s: CrashModel) -> list[str]:
        return []

    def risk_legend(self, s: RiskLegend) -> list[str]:
        return []

    def scaling(self, s: ScalingWithClients) -> list[str]:
        return []

    def fixed_rates(self, s: FixedRates) -> list[str]:
        return []

    def configurations(self, s: Configurations) -> list[str]:
        return []

    def machine(self, s: Machine) -> list[str]:
        return []

    def run_notes(self, s: RunNotes) -> list[str]:
        return []

    def more_hint(self, s: MoreHint) -> list[str]:
        return []


TERMINAL, EXPLAIN, QUIET = TerminalFormat(), TerminalFormat(explain=True), QuietFormat()


def render_run(run: RunRecord | AnalysedRun | Report, explain: bool = False, live: bool = False) -> Group:
    """The run for the terminal (report/sections.py's sections, drawn by TERMINAL, or EXPLAIN with `explain`);
    `live` (a run another pickfs is executing; or the analysis says so): first that it is still running, and no
    answer."""
    return (EXPLAIN if explain else TERMINAL).render(run, live)


def terse_lines(run: RunRecord | AnalysedRun | Report, live: bool = False) -> list[str]:
    """--quiet: one line per workload measured (QUIET)."""
    return QUIET.render(run, live)
