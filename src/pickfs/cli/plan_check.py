"""`pickfs plan check FILE` and `pickfs run --dry-run`: the validated matrix, what this machine lacks,
and the time it would take, creating nothing (no work directory, results database, ledger or loop device)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from pickfs import console
from pickfs.cli.examples import examples
from pickfs.errors import PickfsError
from pickfs.model import Plan
from pickfs.plan import load_plan_file


@dataclass(frozen=True)
class WorkloadEstimate:
    label: str
    seconds: float
    how: str  # how the figure was reached, in words


def estimate(plan: Plan, unavailable: dict[int, str] | None = None,
             measured: dict[Any, float] | None = None) -> list[WorkloadEstimate]:
    """The wall time of each workload's speed runs (pure but for the workload registry).

    Side by side, a sliceable workload takes its time budget (max_seconds, or SIDE_BY_SIDE_BUDGET)
    unless the rounds are fixed; whole runs (one at a time, or workloads that cannot be sliced) take
    estimate_seconds per run, as the progress bar counts them: what the same workload took on the
    same filesystem in a stored run (`measured`), else a figure from the workload's length."""
    from pickfs.engine.schedule import (
        RUN_OVERHEAD_S,
        SETUP_S,
        Slot,
        auto_blocks,
        comparison_key,
        estimate_seconds,
        round_budget,
        slot_key,
    )
    from pickfs.workloads import workload_class

    m = plan.method
    out: list[WorkloadEstimate] = []
    if not m.speed:
        return out
    skip = unavailable or {}
    all_cells = plan.cells()
    for wl in plan.workloads:
        cells = [c for c in all_cells if c.workload.label == wl.label and c.index not in skip]
        cls = workload_class(wl.name)
        if not cells:
            out.append(WorkloadEstimate(wl.label, 0.0, "nothing to run here: every configuration is unavailable"))
            continue
        n = len(cells)
        seen_s = measured.get(comparison_key(cells, m)) if measured and m.side_by_side and cls.sliceable else None
        if seen_s is not None:
            out.append(WorkloadEstimate(wl.label, seen_s, f"side by side, {n} configurations: as long as the same "
                                        "comparison took in a stored run"))
        elif m.side_by_side and cls.sliceable:
            budget = round_budget(m)
            slice_s = cls.run_seconds(cls.slice_spec(wl, m.slice_seconds or cls.slice_seconds))
            # automatic: as the engine picks them, from what standing up the first block takes
            blocks = m.blocks or auto_blocks(n * SETUP_S + m.warmup * n * slice_s, budget.budget_s)
            per_block = n * SETUP_S + m.warmup * n * slice_s + budget.min_rounds * n * (slice_s + RUN_OVERHEAD_S)
            if not budget.fixed and blocks * per_block > budget.budget_s:  # never fewer rounds than the least
                out.append(WorkloadEstimate(
                    wl.label, blocks * per_block,
                    f"longer than its time budget of {budget.budget_s:g} s: standing up {n} configurations "
                    f"({blocks} block(s)) and the least {budget.min_rounds} rounds of {slice_s:g} s slices"))
            elif budget.fixed:
                out.append(WorkloadEstimate(
                    wl.label, blocks * per_block,
                    f"{budget.min_rounds} rounds x {blocks} block(s) x {n} configurations, {slice_s:g} s slices"))
            else:
                out.append(WorkloadEstimate(
                    wl.label, budget.budget_s,
                    f"its time budget: at least {budget.min_rounds} rounds, then until every interval "
                    f"is within ±{budget.target:.0%} or {budget.budget_s / 60:g} min are spent"))
        else:
            seconds = sum(estimate_seconds(Slot(c, r), m, measured=measured) for r in range(m.runs) for c in cells)
            how = f"{m.runs} whole run(s) x {n} configurations, each after {m.warmup} warm-up(s) on a fresh filesystem"
            seen = sum(1 for c in cells if measured and slot_key(c, m) in measured)
            how += f"; {seen} of {n} configurations timed from a stored run" if seen else \
                "; not measured here yet (a first run's estimate is rough; the next plan check uses it)"
            if m.target_ci is not None:
                how += f"; at least: up to {m.max_runs} runs each until within ±{m.target_ci:.0%}"
                if m.max_seconds is not None:
                    how += f" or {m.max_seconds / 60:g} min"
            out.append(WorkloadEstimate(wl.label, seconds, how))
    return out


def unavailable_cells(plan: Plan) -> dict[int, str]:
    """Why each cell this machine cannot run cannot run (the checks the run itself makes first)."""
    from pickfs.engine.executor import cell_unavailable

    out: dict[int, str] = {}
    for cell in plan.cells():
        reason = cell_unavailable(cell, plan) if plan.method.speed else None
        if reason is None and plan.method.crash_states:
            from pickfs.crash.runner import crash_unavailable

            crash = crash_unavailable(cell.config, cell.workload)
            if crash:
                reason = f"crash test: {crash}"
        if reason is None and plan.target.kind == "directory" and cell.config.path \
                and not Path(cell.config.path).is_dir():
            reason = f"directory {cell.config.path} does not exist"
        if reason:
            out[cell.index] = reason
    return out


def machine_problems(plan: Plan) -> list[str]:
    """What stops the whole plan on this machine (root, the device), without touching anything."""
    from pickfs.stack.safety import check_device

    problems = []
    if plan.target.kind != "directory" and os.geteuid() != 0:
        problems.append(f"building filesystems on {plan.target.kind} targets needs root (run as root, or sudo)")
    if plan.target.kind == "device":
        try:
            check_device(plan.target.device or "", plan.target.confirm)
        except PickfsError as exc:
            problems.append(exc.one_line())
    return problems


def _size(n: int) -> str:
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= factor:
            return f"{n / factor:g} {unit}"
    return f"{n} bytes"


def _minutes(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def stored_estimates(plan: Plan) -> dict[Any, float]:
    """Measured slot times for this plan's cells from the results database, when there is one
    (opened only if it exists: a plan check creates nothing)."""
    from pickfs.engine.executor import recent_estimates
    from pickfs.store import ResultStore
    from pickfs.store.results import default_results_path

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


def method_lines(plan: Plan) -> list[str]:
    from pickfs.engine.schedule import round_budget

    m = plan.method
    lines = []
    if not m.speed:
        lines.append("no speed runs")
    elif m.side_by_side:
        budget = round_budget(m)
        until = (f"until the recommendation is settled at a {m.margin:.0%} margin, configurations leaving as their "
                 "place is decided" if m.race else f"until every interval is within ±{budget.target:.0%}")
        rounds = f"exactly {m.rounds} rounds" if budget.fixed else \
            f"at least {budget.min_rounds} rounds, then {until}" + \
            (f" (at most {m.max_runs})" if m.target_ci is not None else "")
        slices = f"{m.slice_seconds:g} s" if m.slice_seconds else "the workload's own length"
        times = "as many times as fit a fifth of the budget (2-6)" if m.blocks is None else f"{m.blocks} time(s)"
        lines.append(f"side by side: every configuration built {times} (each a fresh mkfs), all standing at once")
        lines.append(f"  rounds: {rounds}; each round visits every configuration of every block once")
        lines.append(f"  slices: {slices}, {m.warmup} warm-up slice(s) per configuration")
        lines.append(f"  budget: {budget.budget_s / 60:g} min per workload; seed "
                     f"{m.seed if m.seed is not None else 'from the run id'}")
        lines.append(f"  workloads that cannot be sliced: {m.runs} whole run(s) per configuration, random-order rounds")
    else:
        order = "interleaved (A B C A B C)" if m.interleave else "sequential (A A B B)"
        lines.append(f"one at a time: {m.runs} run(s) per cell after {m.warmup} warm-up(s), each on a fresh "
                     f"filesystem, {order}")
        if m.target_ci is not None:
            lines.append(f"  then until each interval is within ±{m.target_ci:.0%}, at most {m.max_runs} runs"
                         + (f" or {m.max_seconds / 60:g} min" if m.max_seconds is not None else ""))
    if m.crash_states:
        lines.append(f"crash test: {m.crash_states} power-cut states per cell, {m.crash_duration:g} s of commits "
                     f"recorded on a {_size(m.crash_size)} image")
    extras = [x for x, on in (("drop caches", m.drop_caches), ("monitors", m.monitors)) if on]
    lines.append(f"each run: {', '.join(extras) or 'no cache drop, no monitors'}; the device idle "
                 f"{m.quiesce_seconds:g} s first")
    return lines


def describe(plan: Plan) -> list[str]:
    """The dry run's report, one line each (reads the machine, changes nothing)."""
    from pickfs.report.views import short_flag
    from pickfs.risks import config_risks

    t = plan.target
    where = {"image": f"{_size(t.size_bytes)} loop-backed images under {t.workdir}",
             "device": f"the device {t.device} (erased)", "directory": "existing directories"}[t.kind]
    cells = plan.cells()
    lines = [f"plan: {len(plan.configs)} configuration(s) x {len(plan.workloads)} workload(s) = {len(cells)} cells, "
             f"on {where}"]
    if t.kind == "image" and t.size_auto:  # issue 13: production conditions
        lines.append(f"images sized to the job: {_size(t.size_bytes)} (sparse; --size to choose)")
    if t.memory_bytes:
        scale = f"; data grown to {t.scale:g}x the memory" if t.scale else ""
        lines.append(f"memory: {_size(t.memory_bytes)} per configuration, its server and client in a memory-limited "
                     f"control group{scale}")
    lines.append("configurations:" + (f" (baseline {plan.baseline})" if plan.baseline else ""))
    for c in plan.configs:
        parts = [f"fs {c.fstype}"]
        if c.path:
            parts.append(f"path {c.path}")
        parts.append(f"mkfs {' '.join(c.mkfs_options) or '(defaults)'}")
        parts.append(f"mount {','.join(c.mount_options) or '(defaults)'}")
        queue = {"image": "the loop device's queue", "device": f"{t.device}'s queue"}.get(t.kind, "")
        parts.append(f"scheduler {c.scheduler or '(the device default)'}" + (f" on {queue}" if c.scheduler and queue
                                                                              else ""))
        if c.base:
            parts.append(f"base {c.base}")
        if c.age:  # issue 13
            parts.append(f"aged to {c.age:.0%} ({c.age_rounds} rounds, seed {c.age_seed})")
        flags = ", ".join(short_flag(r) for r in config_risks(c))
        lines.append(f"  {c.name}: {'; '.join(parts)}" + (f"  ⚠ {flags}" if flags else ""))
    lines.append("workloads:")
    for w in plan.workloads:
        settings = ", ".join(f"{k}={v}" for k, v in w.settings)
        lines.append(f"  {w.label} ({w.name}): {settings or '(defaults)'}")
    lines.append("method:")
    lines += [f"  {x}" for x in method_lines(plan)]
    for warning in plan.warnings:
        lines.append(f"warning: {warning}")
    missing = unavailable_cells(plan)
    problems = machine_problems(plan)
    if missing or problems:
        lines.append("this machine lacks:")
        lines += [f"  {p}" for p in problems]
        lines += [f"  {cells[i].key}: {why}" for i, why in sorted(missing.items())]
    else:
        lines.append("this machine lacks: nothing; every cell can run here")
    estimates = estimate(plan, missing, stored_estimates(plan))
    if estimates:
        total = sum(e.seconds for e in estimates)
        lines.append(f"time: about {_minutes(total)}" + (" plus the crash tests" if plan.method.crash_states else ""))
        lines += [f"  {e.label}: {_minutes(e.seconds)}, {e.how}" for e in estimates]
    elif plan.method.crash_states:
        lines.append("time: the crash tests' (not estimated: it depends on the writes recorded)")
    return lines


def show_plan(plan: Plan) -> None:
    """Print the dry run's report to standard output."""
    for line in describe(plan):
        console.show(Text(line))
    console.info("dry run: nothing was created")


@click.group("plan", epilog=examples('pickfs plan check examples/r2-postgresql.toml'))
def command() -> None:
    """Check a plan file without running it: the matrix, what this machine lacks, and the time."""


@command.command("check", epilog=examples('pickfs plan check examples/r2-postgresql.toml',
         'pickfs plan check my-plan.toml && pickfs run --plan my-plan.toml'))
@click.argument("plan_file", type=click.Path(path_type=Path))
def check(plan_file: Path) -> None:
    """Validate PLAN_FILE completely and show what `pickfs run --plan PLAN_FILE` would do; creates nothing."""
    show_plan(load_plan_file(plan_file))
