"""`pickfs crashtest --fault KIND`: the disk fails a write or a flush; what does each configuration and database do
with the commits it acknowledged?"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from pickfs import console
from pickfs.errors import PlanError
from pickfs.faults.matrix import run_matrix
from pickfs.faults.outcome import FaultCell, verdict
from pickfs.faults.plan import FaultPlan, parse_faults
from pickfs.faults.render import COLUMNS, MODEL, matrix_json, notes, row
from pickfs.faults.runner import fault_unavailable
from pickfs.model import Method, Plan
from pickfs.safepaths import write_file
from pickfs.units import parse_duration
from pickfs.usecases.preview import nothing_can_run
from pickfs.usecases.workspace import clean_orphans, ledger_for, require_root

LEAST_DURATION_S = 3.0  # the fault is armed 0.8-1.6 s in; commits go on after it
UNSUPPORTED_EXPORTS = ("markdown_path", "csv_path", "table_csv_path", "html_path")


def fault_plans(o: dict[str, Any], method: Method) -> list[FaultPlan]:
    """The fault plans the options name (else the plan's [method] keys), checked completely (PlanError, exit 2)."""
    if o["fault"] is None:
        return parse_faults(method.faults.kinds, method.faults.at, method.faults.lasts, method.faults.seed)
    return parse_faults(o["fault"], 1 if o["fault_at"] is None else o["fault_at"], o["fault_for"] or "once",
                        1 if o["fault_seed"] is None else o["fault_seed"])


def check_fault_options(o: dict[str, Any], method: Method) -> tuple[float, float]:
    """(commit time, time limit per cell) for a fault run, the options it does not take refused (exit 2)."""
    for name in UNSUPPORTED_EXPORTS:
        if o.get(name):
            raise PlanError(f"--{name.removesuffix('_path').replace('_', '-')} is not written for a fault run yet",
                            "use --json FILE (or the terminal's table)")
    for name in ("states", "crash_time", "keep", "strategies", "check", "unit", "recovery"):
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


TITLE = "what the database kept when the disk failed"
FIGURES = ("acknowledged", "lost", "errors to client", "false failures")
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
            parts.append(Text("  " + ", ".join(f"{k} {named[k]}" for k in FIGURES if named[k])))
            rest = [f"{k}: {v}" for k, v in list(named.items())[NAMED:] if k not in FIGURES and v]
            parts.append(Text("  " + "; ".join(rest)))
        return Group(*parts)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        t = self.table()
        # measured unbounded (a measurement within the width is clamped to it); a table squeezed below its
        # natural width cuts words (rich shrinks columns past their longest word), so only one that fits whole
        fits = Measurement.get(console, options.update_width(UNBOUNDED), t).maximum <= options.max_width
        yield t if fits else self.blocks()


def table(cells: list[FaultCell]) -> FaultTable:
    return FaultTable(tuple(row(cell) for cell in cells))


def run_faults(plan: Plan, o: dict[str, Any]) -> None:
    """Run every cell of the fault matrix, each shown and saved the moment it ends; the table and the model last."""
    faults = fault_plans(o, plan.method)
    duration, limit = check_fault_options(o, plan.method)
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
    n, problems = clean_orphans(ledger)
    for p in problems:
        console.warn(p)
    if n:
        console.info(f"undid {n} resources an earlier, interrupted pickfs left behind")
    json_path = o.get("json_path")
    cells: list[FaultCell] = []

    def done(cell: FaultCell) -> None:
        cells.append(cell)
        console.info(verdict(cell))
        if json_path is not None and str(json_path) != "-":
            write_file(json_path, matrix_json(cells).encode(), "--json")

    size = plan.method.crash.size
    for fault in faults:
        console.info(f"fault plan: {fault.text}")
    run_matrix(plan.configs, plan.workloads, faults, workdir, ledger, size, duration, limit, console.info, done)
    if json_path is not None and str(json_path) == "-":
        # standard output is the JSON's alone (a script reads it): each cell was said as it ended, on stderr
        for note in notes(cells):
            console.info(f"note: {note}")
        console.info(f"model: {MODEL}")
        click.echo(matrix_json(cells), nl=False)
        return
    console.show(table(cells))
    for cell in cells:
        console.plain(verdict(cell))
    for note in notes(cells):
        console.plain(f"note: {note}")
    console.plain(f"model: {MODEL}")
    if json_path is not None:
        console.info(f"json written to {json_path}")
