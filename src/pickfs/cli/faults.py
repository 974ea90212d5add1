"""`pickfs crashtest --fault KIND`: the disk fails a write or a flush; what does each configuration and database do
with the commits it acknowledged?"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from pickfs import console
from pickfs.cli.report import check_export_targets, export_targets
from pickfs.engine import runlock
from pickfs.errors import EXIT_INTERRUPTED, NotFound, PlanError, ResultsUnusable
from pickfs.faults.document import (
    MODEL,
    Damaged,
    cell_trial,
    matrix_json,
    notes,
    plans_of,
    run_facts,
    stored_cells,
)
from pickfs.faults.matrix import run_matrix
from pickfs.faults.outcome import Ended, FaultCell, plural, verdict
from pickfs.faults.plan import FaultPlan, parse_faults
from pickfs.faults.render import (
    COLUMNS,
    FIGURES,
    TITLE,
    found,
    header_lines,
    literature,
    quiet_lines,
    render_csv,
    render_html,
    render_markdown,
    render_table_csv,
    row,
    sentences,
)
from pickfs.faults.runner import fault_unavailable
from pickfs.model import Method, Plan, RunRecord
from pickfs.safepaths import write_export
from pickfs.stack.ledger import Ledger
from pickfs.stack.signals import interrupted
from pickfs.store import ResultStore
from pickfs.units import parse_duration
from pickfs.usecases.preview import nothing_can_run
from pickfs.usecases.run import end_status, store_new_run, undo_orphans
from pickfs.usecases.workspace import ledger_for, open_store, require_root

LEAST_DURATION_S = 3.0  # the fault is armed 0.8-1.6 s in; commits go on after it


def fault_plans(o: dict[str, Any], method: Method) -> list[FaultPlan]:
    """The fault plans the options name (else the plan's [method] keys), checked completely (PlanError, exit 2)."""
    if o["fault"] is None:
        return parse_faults(method.faults.kinds, method.faults.at, method.faults.lasts, method.faults.seed)
    return parse_faults(o["fault"], 1 if o["fault_at"] is None else o["fault_at"], o["fault_for"] or "once",
                        1 if o["fault_seed"] is None else o["fault_seed"])


def check_fault_options(o: dict[str, Any], method: Method) -> tuple[float, float]:
    """(commit time, time limit per cell) for a fault run, the options it does not take refused (exit 2)."""
    for name in ("states", "crash_time", "crash_bound", "keep", "strategies", "unit", "recovery"):
        if o.get(name) is not None:
            raise PlanError(f"--{name.replace('_', '-')} is for power cuts, not for --fault",
                            "leave it out, or run the power-cut test without --fault")
    duration = parse_duration(o["duration"])
    if duration < LEAST_DURATION_S:
        raise PlanError(f"--duration {o['duration']} is too short with --fault",
                        f"use at least --duration {LEAST_DURATION_S:g}s: the fault is armed once commits flow")
    limit = method.faults.limit if o["fault_limit"] is None else parse_duration(o["fault_limit"])
    if limit <= 0:
        raise PlanError(f"--fault-limit {o['fault_limit']} is no time", "e.g. --fault-limit 2m")
    return duration, limit


NAMED = 3  # configuration, database, fault: what names a cell
UNBOUNDED = 10_000  # columns


@dataclass(frozen=True)
class FaultTable:
    """The cells as a table where it fits the width unwrapped; narrower, each cell as a block of its own
    (what names it, then its figures, then what the server and the filesystem did), so no word is ever cut."""

    rows: tuple[tuple[str, ...], ...]

    def table(self) -> Table:
        t = Table(title=TITLE, title_justify="left")
        for name in COLUMNS:
            t.add_column(name, justify="right" if name in FIGURES else "left")
        for r in self.rows:
            t.add_row(*r)
        return t

    def blocks(self) -> Group:
        parts: list[Text] = [Text(TITLE)]
        for r in self.rows:
            named = dict(zip(COLUMNS, r, strict=True))
            parts.append(Text(", ".join(r[:NAMED]) + ":", style="bold"))
            figures = [f"{k} {named[k]}" for k in FIGURES if named[k]]
            rest = [f"{k}: {v}" for k, v in list(named.items())[NAMED:] if k not in FIGURES and v]
            parts += [Text("  " + line) for line in (", ".join(figures), "; ".join(rest)) if line]
        return Group(*parts)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        t = self.table()
        # measured unbounded (a measurement within the width is clamped to it); a table squeezed below its
        # natural width cuts words (rich shrinks columns past their longest word), so only one that fits whole
        fits = Measurement.get(console, options.update_width(UNBOUNDED), t).maximum <= options.max_width
        yield t if fits else self.blocks()


def table(cells: list[FaultCell]) -> FaultTable:
    return FaultTable(tuple(row(cell) for cell in cells))


Renderer = Callable[[list[FaultCell], list[str], dict[str, Any] | None], str]


# every format `pickfs report` writes, drawn by the fault test's own renderers (faults/render.py, document.py)
FORMATS: dict[str, Renderer] = {"json": matrix_json, "markdown": render_markdown, "html": render_html,
                                "csv": lambda cells, _plans, _run: render_csv(cells),
                                "table-csv": lambda cells, _plans, _run: render_table_csv(cells)}


def show_fault_run(cells: list[FaultCell], run: dict[str, Any] | None = None, explain: bool = False) -> None:
    """The fault run on standard output: the table, a sentence per database and fault, every cell's verdict once,
    what the literature says, the notes and the model; with `explain` what the kernel and the server said."""
    for line in header_lines(run):
        console.plain(line)
    console.show(table(cells))
    for line in sentences(cells):
        console.plain(line)
    for cell in cells:
        console.plain(verdict(cell))
        if explain and cell.behaviour is not None:
            for said in cell.behaviour.kernel:
                console.plain(f"  kernel: {said}")
            for said in cell.behaviour.server_log:
                console.plain(f"  server: {said}")
    for said in literature(cells):
        console.plain(f"the literature: {said}")
    for note in notes(cells):
        console.plain(f"note: {note}")
    console.plain(f"model: {MODEL}")


def write_fault_exports(cells: list[FaultCell], plans: list[str], run: dict[str, Any] | None,
                        targets: dict[str, Path | None]) -> None:
    """Each requested format to its path ('-' for standard output)."""
    for fmt, path in targets.items():
        if path is None:
            continue
        text = FORMATS[fmt](cells, plans, run)
        if str(path) == "-":
            click.echo(text, nl=False)
        else:
            write_export(path, text.encode(), f"--{fmt}")
            console.info(f"{fmt} written to {path}")


def to_stdout(targets: dict[str, Path | None]) -> bool:
    return any(path is not None and str(path) == "-" for path in targets.values())


def progress_line(cell: FaultCell, done: int, total: int) -> str:
    """A cell as it ends, in one line (its verdict is said once, with the table)."""
    c, figures = cell.counts, found(cell)
    said = f": {figures}, {c.failed:,} errors to the client" if c is not None and figures else ""
    return (f"cell {done} of {total} ended ({cell.seconds:.0f} s): {cell.config}, {cell.database}, {cell.fault}: "
            f"{cell.outcome.value}{'' if cell.injected or c is None else ', the fault never fired'}{said}")


def run_faults(plan: Plan, o: dict[str, Any]) -> None:
    """Run every cell of the fault matrix, each saved in the results database the moment it ends (and the --json
    file written again); then the table, the verdicts and the model, and the other formats asked for."""
    faults = fault_plans(o, plan.method)
    duration, limit = check_fault_options(o, plan.method)
    targets = export_targets(o)
    check_export_targets(targets)
    unavailable = {}  # cells no fault of the plan can run in
    for c in plan.cells():
        whys = [fault_unavailable(c.config, c.workload, f) for f in faults]
        if whys and all(whys):
            unavailable[c.index] = str(whys[0])
    refusal = nothing_can_run(plan, unavailable)  # as the power-cut test refuses it: before anything is made
    if refusal is not None:
        raise refusal
    require_root("injecting faults under filesystems (losetup, mkfs, mount, FUSE)", "run it as root (sudo)")
    workdir = Path(plan.target.workdir)
    ledger = ledger_for(str(workdir))
    undo_orphans(ledger, console.warn)
    store = open_store(o["workdir"], o["results_path"])
    # the run stored as asked: the faults and their limit in its plan (the plan's own keys), so it says what it ran
    first = faults[0]
    stored = replace(plan, method=plan.method.but(fault=",".join(f.kind.name for f in faults), fault_at=first.nth,
                                                  fault_for=o["fault_for"] or plan.method.faults.lasts,
                                                  fault_seed=first.seed, fault_limit=limit, crash_duration=duration))
    run_id = store_new_run(store, stored)
    lock = runlock.hold(workdir, run_id)
    try:
        cells = execute_faults(plan, faults, store, ledger, run_id, (duration, limit), targets)
    finally:
        runlock.release(lock)
    record = store.load(run_id)
    finish(cells, faults, run_facts(record), targets)
    console.info(f"saved as run {run_id} in {store.path}; re-render with: pickfs report {run_id}")


def execute_faults(plan: Plan, faults: list[FaultPlan], store: ResultStore, ledger: Ledger, run_id: str,
                   times: tuple[float, float], targets: dict[str, Path | None]) -> list[FaultCell]:
    """The matrix run, each cell saved as it ends; Ctrl-C (or SIGTERM) ends the run as interrupted with every cell
    that ended kept, an error as failed."""
    cells: list[FaultCell] = []
    total = len(plan.cells()) * len(faults)
    json_path = targets.get("json")
    for fault in faults:
        console.info(f"fault plan: {fault.text}")
    console.info(f"run {run_id}: {total} fault cells; results in {store.path}")

    def done(index: int, fault_index: int, cell: FaultCell) -> None:
        store.save_trial(cell_trial(run_id, index, fault_index, cell, time.time() - cell.seconds))
        cells.append(cell)
        console.info(progress_line(cell, len(cells), total))
        if json_path is not None and str(json_path) != "-":
            write_export(json_path, matrix_json(cells, plans_of(cells)).encode(), "--json")

    try:
        run_matrix(plan.cells(), faults, Path(plan.target.workdir), ledger, plan.method.crash.size, *times,
                   console.info, done)
    except BaseException as exc:
        status = "interrupted" if interrupted(exc) else "failed"
        end_status(store, run_id, status)
        console.error(f"run {run_id} {status}: what ended of it ({plural(len(cells), 'cell')}) is kept in "
                      f"{store.path}; see it with: pickfs report {run_id}")
        if interrupted(exc):
            raise SystemExit(EXIT_INTERRUPTED) from None
        raise
    store.set_status(run_id, "complete" if any(c.outcome is not Ended.NOT_RUN for c in cells) else "failed")
    return cells


def finish(cells: list[FaultCell], faults: list[FaultPlan], run: dict[str, Any],
           targets: dict[str, Path | None]) -> None:
    """The run shown (standard output is an export's alone when one goes there) and exported."""
    if to_stdout(targets):
        for note in notes(cells):
            console.info(f"note: {note}")
        console.info(f"model: {MODEL}")
    else:
        show_fault_run(cells, run)
    write_fault_exports(cells, [f.text for f in faults], run, targets)


def report_fault_run(record: RunRecord, targets: dict[str, Path | None], explain: bool = False, quiet: bool = False,
                     live: bool = False) -> None:
    """`pickfs report RUN` of a fault run: its stored cells drawn again, in every format."""
    try:
        cells = stored_cells(record)
    except Damaged as exc:
        raise ResultsUnusable(f"run {record.id} holds a damaged {exc}",
                              "report another run, or restore the file from a copy pickfs wrote") from None
    if not cells:
        raise NotFound(f"run {record.id} ({record.status}) holds no fault cell yet",
                       "wait for its first cell to end" if live else "run the fault test again: pickfs crashtest --fault ...")
    if live:
        console.info(f"run {record.id} is still running: the {len(cells)} cells that ended so far")
    run = run_facts(record)
    if quiet:
        for line in quiet_lines(cells):
            console.plain(line)
    elif not any(targets.values()):  # a file asked for is the output: the tables are not printed as well
        show_fault_run(cells, run, explain)
    write_fault_exports(cells, plans_of(cells), run, targets)
