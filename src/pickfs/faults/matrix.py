"""Every cell of a fault matrix: configurations x databases with their settings x fault plans, one at a time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pickfs.crash.runner import PROGRAM, backend_of
from pickfs.errors import PickfsError
from pickfs.faults.outcome import Ended, FaultCell
from pickfs.faults.plan import FaultPlan
from pickfs.faults.program import program_cell
from pickfs.faults.runner import fault_cell
from pickfs.model import Cell
from pickfs.stack.ledger import Ledger
from pickfs.stack.signals import interrupted


def run_matrix(cells: Sequence[Cell], faults: Sequence[FaultPlan], workdir: Path, ledger: Ledger, size: int,
               duration: float, limit_s: float, progress: Callable[[str], None],
               done: Callable[[int, int, FaultCell], None]) -> list[FaultCell]:
    """Each plan cell (configuration x workload) under each fault plan in turn, handed to `done` with the plan cell's
    index and the fault plan's the moment it ends (to be shown and saved); a cell that fails is one outcome of the
    matrix (not run, with why), never the end of it."""
    out = []
    for i, fault in enumerate(faults):
        for c in cells:
            progress(f"{c.config.name}, {c.workload.label}: {fault.text}")
            try:
                one = program_cell if backend_of(c.workload) == PROGRAM else fault_cell  # your command: its check judges
                cell = one(c.config, c.workload, fault, workdir, ledger, size, duration, limit_s, progress)
            except PickfsError as exc:
                if interrupted(exc):  # a teardown that failed on the way out of a Ctrl-C: still a Ctrl-C
                    raise
                cell = FaultCell(c.config.name, c.workload.label, "", fault.kind.name, fault.text, Ended.NOT_RUN,
                                 notes=(exc.one_line(),))
            out.append(cell)
            done(c.index, i, cell)
    return out
