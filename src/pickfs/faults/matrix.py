"""Every cell of a fault matrix: configurations x databases with their settings x fault plans, one at a time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pickfs.errors import PickfsError
from pickfs.faults.outcome import Ended, FaultCell
from pickfs.faults.plan import FaultPlan
from pickfs.faults.runner import fault_cell
from pickfs.model import FsConfig, WorkloadSpec
from pickfs.stack.ledger import Ledger


def run_matrix(configs: Sequence[FsConfig], specs: Sequence[WorkloadSpec], faults: Sequence[FaultPlan],
               workdir: Path, ledger: Ledger, size: int, duration: float, limit_s: float,
               progress: Callable[[str], None], done: Callable[[FaultCell], None]) -> list[FaultCell]:
    """Each cell in turn, handed to `done` the moment it ends (to be shown and saved); a cell that fails is one
    outcome of the matrix (not run, with why), never the end of it."""
    cells = []
    for fault in faults:
        for spec in specs:
            for config in configs:
                progress(f"{config.name}, {spec.label}: {fault.text}")
                try:
                    cell = fault_cell(config, spec, fault, workdir, ledger, size, duration, limit_s, progress)
                except PickfsError as exc:
                    cell = FaultCell(config.name, spec.label, "", fault.kind.name, fault.text, Ended.NOT_RUN,
                                     notes=(exc.one_line(),))
                cells.append(cell)
                done(cell)
    return cells
