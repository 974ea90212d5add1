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
from pickfs.errors import PickfsError
from pickfs.model import Plan
from pickfs.stack.safety import check_device
from pickfs.stack.targets import target_kind
from pickfs.store import ResultStore
from pickfs.store.results import default_results_path


@dataclass(frozen=True)
class Preview:
    """What a dry run found: the cells this machine cannot run (by index, why), what stops the whole plan
    here, and each workload's time as the run would measure it."""

    plan: Plan
    unavailable: dict[int, str]
    problems: list[str]
    estimates: list[WorkloadEstimate]


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
        if reason is None and plan.method.crash_states:
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
