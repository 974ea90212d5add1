"""How each workload of a plan is measured: the one choice the executor makes and the time estimate follows."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from pickfs.engine.schedule import SIDE_BY_SIDE_BUDGET
from pickfs.model import Method, Plan, WorkloadSpec
from pickfs.plan import budget_shares
from pickfs.stack.targets import target_kind
from pickfs.workloads import workload_class

Approach = Literal["one at a time", "capacity search", "race", "side by side", "whole runs"]
SLICED: tuple[Approach, ...] = ("capacity search", "race", "side by side")  # configurations standing at once


@dataclass(frozen=True)
class Measuring:
    """How one workload is measured, with the method it is measured with (side by side: its share of the budget)."""

    workload: WorkloadSpec
    approach: Approach
    method: Method

    @property
    def sliced(self) -> bool:
        """In slices, every configuration standing at once (else whole runs, each on a fresh filesystem)."""
        return self.approach in SLICED


def one_at_a_time(plan: Plan) -> bool:
    """The older method, every cell one after another: asked for, or forced by a device target, which holds one
    filesystem at a time (pure)."""
    return not plan.method.side_by_side or not target_kind(plan.target).side_by_side


def shared_method(m: Method, share: float) -> Method:
    """The method a workload is measured with when it has `share` of the time budget (pure): the client
    counts of one workload share its budget, so --clients 1,2,4,8 takes the time one workload would. A run
    of a fixed number of rounds with no time budget keeps its rounds."""
    if share >= 1.0 or (m.rounds is not None and m.max_seconds is None and m.target_ci is None):
        return m
    return replace(m, max_seconds=(m.max_seconds if m.max_seconds is not None else SIDE_BY_SIDE_BUDGET) * share)


def how_measured(plan: Plan) -> list[Measuring]:
    """Each workload's way of being measured, in plan order (pure but for the workload registry)."""
    m = plan.method
    if one_at_a_time(plan):
        return [Measuring(wl, "one at a time", m) for wl in plan.workloads]
    shares = budget_shares(plan.workloads)
    out = []
    for wl in plan.workloads:
        cls = workload_class(wl.name)
        if m.latency_target and "rate" in cls.setting_names():
            out.append(Measuring(wl, "capacity search", m))
        elif cls.sliceable:
            approach: Approach = "race" if m.race and not wl.fixed_rate else "side by side"
            out.append(Measuring(wl, approach, shared_method(m, shares.get(wl.label, 1.0))))
        else:
            out.append(Measuring(wl, "whole runs", m))
    return out
