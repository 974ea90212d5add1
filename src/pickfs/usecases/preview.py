"""A dry run: what this machine lacks for a plan and the time it would take, creating nothing (no work
directory, results database, ledger or loop device)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pickfs.crash.runner import crash_unavailable
from pickfs.engine.estimate import WorkloadEstimate, estimate
from pickfs.engine.executor import cell_unavailable, recent_estimates
from pickfs.errors import NothingCanRun, PickfsError
from pickfs.model import Plan
from pickfs.stack.safety import check_device
from pickfs.stack.targets import target_kind
from pickfs.store import ResultStore
from pickfs.store.results import default_results_path


@dataclass(frozen=True)
class Lack:
    """One thing this machine lacks (a package to install, a module, a directory) and the cells that need it."""

    reason: str
    cells: tuple[str, ...]  # the cells' keys, in the plan's order
    every: bool  # every cell of the plan needs it

    def line(self) -> str:
        """`reason — needed by where` (pure)."""
        if self.every:
            where = "every cell" if len(self.cells) > 1 else self.cells[0]
        else:
            shown = ", ".join(self.cells[:3]) + (f" and {len(self.cells) - 3} more" if len(self.cells) > 3 else "")
            where = f"{len(self.cells)} cell(s): {shown}" if len(self.cells) > 1 else shown
        return f"{self.reason} — needed by {where}"


@dataclass(frozen=True)
class Preview:
    """What a dry run found: the cells this machine cannot run (by index, why), what stops the whole plan
    here, and each workload's time as the run would measure it."""

    plan: Plan
    unavailable: dict[int, str]
    problems: list[str]
    estimates: list[WorkloadEstimate]

    def lacks(self) -> list[Lack]:
        return lacks(self.plan, self.unavailable)

    def error(self) -> NothingCanRun | None:
        """Nothing in the plan can run here: the error a run gives before it builds anything."""
        return nothing_can_run(self.plan, self.unavailable)


def lacks(plan: Plan, unavailable: dict[int, str]) -> list[Lack]:
    """What this machine lacks, one entry per reason (one package missing is one line, not one per cell; pure)."""
    cells = plan.cells()
    by_reason: dict[str, list[str]] = {}
    for index, why in sorted(unavailable.items()):
        by_reason.setdefault(why, []).append(cells[index].key)
    return [Lack(why, tuple(keys), len(keys) == len(cells)) for why, keys in by_reason.items()]


def nothing_can_run(plan: Plan, unavailable: dict[int, str]) -> NothingCanRun | None:
    """The refusal of a plan no cell of which this machine can run (pure); None when one can."""
    if not plan.cells() or len(unavailable) < len(plan.cells()):
        return None
    what = "; ".join(lack.line() for lack in lacks(plan, unavailable))
    return NothingCanRun(f"nothing in this plan can run on this machine, which lacks: {what}",
                         "install what is missing, or leave out what cannot run here; nothing was built")


def preview_plan(plan: Plan) -> Preview:
    """Read the machine and the stored runs (read-only); change nothing."""
    missing = unavailable_cells(plan)
    problems = machine_problems(plan)
    return Preview(plan, missing, problems, estimate(plan, missing, stored_estimates(plan)))


def unavailable_cells(plan: Plan) -> dict[int, str]:
    """Why each cell this machine cannot run cannot run (the checks the run itself makes first)."""
    out: dict[int, str] = {}
    for cell in plan.cells():
        reason = cell_unavailable(cell, plan) if plan.method.speed else None
        if reason is None and plan.method.crash.states:
            crash = crash_unavailable(cell.config, cell.workload)
            if crash:
                reason = f"crash test: {crash}"
        if reason is None and not target_kind(plan.target).builds and cell.config.path \
                and not Path(cell.config.path).is_dir():
            reason = f"directory {cell.config.path} does not exist"
        if reason:
            out[cell.index] = reason
    return out


def machine_problems(plan: Plan) -> list[str]:
    """What stops the whole plan on this machine (root, the device), without touching anything."""
    problems = []
    if target_kind(plan.target).builds and os.geteuid() != 0:
        problems.append(f"building filesystems on {plan.target.kind} targets needs root (run as root, or sudo)")
    if target_kind(plan.target).erases:
        try:
            check_device(plan.target.device or "", plan.target.confirm)
        except PickfsError as exc:
            problems.append(exc.one_line())
    return problems


def stored_estimates(plan: Plan) -> dict[Any, float]:
    """Measured slot times for this plan's cells from the results database, when there is one
    (opened only if it exists: a plan check creates nothing)."""
    workdir = os.environ.get("PICKFS_WORKDIR") or plan.target.workdir
    path = Path(os.environ.get("PICKFS_RESULTS") or default_results_path(workdir))
    if not path.is_file():
        return {}
    try:
        store = ResultStore.read_only(path)  # a plan check creates and changes nothing
    except (PickfsError, OSError):
        return {}
    try:
        return recent_estimates(store, plan)
    finally:
        store.close()
