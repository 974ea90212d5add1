"""How long a plan's speed runs would take, measured the way the run measures them (engine/choice.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pickfs.engine.choice import Measuring, how_measured
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
from pickfs.model import Cell, Plan
from pickfs.workloads import workload_class


@dataclass(frozen=True)
class WorkloadEstimate:
    label: str
    seconds: float
    how: str  # how the figure was reached, in words


def estimate(plan: Plan, unavailable: Mapping[int, str] | None = None,
             measured: Mapping[Any, float] | None = None) -> list[WorkloadEstimate]:
    """The wall time of each workload's speed runs (pure but for the workload registry).

    In slices (side by side), a workload takes its time budget (max_seconds, or SIDE_BY_SIDE_BUDGET; its
    share of it when client counts share one) unless the rounds are fixed; whole runs (one at a time, a
    device target, or workloads that cannot be sliced) take estimate_seconds per run, as the progress bar
    counts them: what the same workload took on the same filesystem in a stored run (`measured`), else a
    figure from the workload's length."""
    if not plan.method.speed:
        return []
    skip = unavailable or {}
    all_cells = plan.cells()
    out: list[WorkloadEstimate] = []
    for way in how_measured(plan):
        cells = [c for c in all_cells if c.workload.label == way.workload.label and c.index not in skip]
        if not cells:
            out.append(WorkloadEstimate(way.workload.label, 0.0,
                                        "nothing to run here: every configuration is unavailable"))
        elif way.sliced:
            out.append(_sliced(plan, way, cells, measured))
        else:
            out.append(_whole_runs(plan, way, cells, measured))
    return out


def _sliced(plan: Plan, way: Measuring, cells: list[Cell], measured: Mapping[Any, float] | None) -> WorkloadEstimate:
    """Side by side: the budget, or standing up and the fixed (or least) rounds when they take longer."""
    wl, m, n = way.workload, way.method, len(cells)
    seen_s = measured.get(comparison_key(cells, plan.method)) if measured else None
    if seen_s is not None:
        return WorkloadEstimate(wl.label, seen_s, f"side by side, {n} configurations: as long as the same "
                                "comparison took in a stored run")
    cls = workload_class(wl.name)
    budget = round_budget(m)
    slice_s = cls.run_seconds(cls.slice_spec(wl, m.slices.slice_seconds or cls.slice_seconds))
    # automatic: as the engine picks them, from what standing up the first block takes
    blocks = m.slices.blocks or auto_blocks(n * SETUP_S + m.warmup * n * slice_s, budget.budget_s)
    per_block = n * SETUP_S + m.warmup * n * slice_s + budget.min_rounds * n * (slice_s + RUN_OVERHEAD_S)
    if not budget.fixed and blocks * per_block > budget.budget_s:  # never fewer rounds than the least
        return WorkloadEstimate(
            wl.label, blocks * per_block,
            f"longer than its time budget of {budget.budget_s:g} s: standing up {n} configurations "
            f"({blocks} block(s)) and the least {budget.min_rounds} rounds of {slice_s:g} s slices")
    if budget.fixed:
        return WorkloadEstimate(
            wl.label, blocks * per_block,
            f"{budget.min_rounds} rounds x {blocks} block(s) x {n} configurations, {slice_s:g} s slices")
    return WorkloadEstimate(
        wl.label, budget.budget_s,
        f"its time budget: at least {budget.min_rounds} rounds, then until {way.way.until(m)} "
        f"or {budget.budget_s / 60:g} min are spent")


def _whole_runs(plan: Plan, way: Measuring, cells: list[Cell],
                measured: Mapping[Any, float] | None) -> WorkloadEstimate:
    """Whole runs, each on a fresh filesystem: the slots' estimates, as the progress bar counts them."""
    m, n = way.method, len(cells)
    seconds = sum(estimate_seconds(Slot(c, r), m, measured=measured) for r in range(m.runs) for c in cells)
    how = f"{m.runs} whole run(s) x {n} configurations, each after {m.warmup} warm-up(s) on a fresh filesystem"
    seen = sum(1 for c in cells if measured and slot_key(c, m) in measured)
    how += f"; {seen} of {n} configurations timed from a stored run" if seen else \
        "; not measured here yet (a first run's estimate is rough; the next plan check uses it)"
    if m.target_ci is not None:
        how += f"; at least: up to {m.max_runs} runs each until within ±{m.target_ci:.0%}"
        if m.max_seconds is not None:
            how += f" or {m.max_seconds / 60:g} min"
    return WorkloadEstimate(way.workload.label, seconds, how)
