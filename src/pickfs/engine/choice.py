"""How each workload of a plan is measured: the one choice the executor makes, and the dry run, the time estimate
and the run's first line describe.

The ways of measuring are one registry of objects (`WAYS`), each with its own behaviour (engine/bench.py
`WayOfMeasuring`): in order of precedence, a workload is measured by the first way that fits it."""

from __future__ import annotations

from dataclasses import dataclass

from pickfs.engine.bench import WayOfMeasuring
from pickfs.engine.capacity import CAPACITY_SEARCH
from pickfs.engine.race import RACE
from pickfs.engine.sidebyside import SIDE_BY_SIDE
from pickfs.engine.wholeruns import ONE_AT_A_TIME, WHOLE_RUNS
from pickfs.model import Method, Plan, WorkloadSpec
from pickfs.plan import budget_shares

__all__ = ["WAYS", "Measuring", "how_measured", "method_lines", "method_words"]

# In order of precedence: one at a time when the plan asks for it or its target allows no other; the capacity
# search for a workload with a fixed-rate mode under a latency target; the race (or, without it, side by side)
# for one that can be sliced; whole runs in rounds for the rest.
WAYS: tuple[WayOfMeasuring, ...] = (ONE_AT_A_TIME, CAPACITY_SEARCH, RACE, SIDE_BY_SIDE, WHOLE_RUNS)


@dataclass(frozen=True)
class Measuring:
    """How one workload is measured: the way, and the method it is measured with (its share of the budget)."""

    workload: WorkloadSpec
    way: WayOfMeasuring
    method: Method

    @property
    def sliced(self) -> bool:
        """In slices, every configuration standing at once (else whole runs, each on a fresh filesystem)."""
        return self.way.sliced


def how_measured(plan: Plan) -> list[Measuring]:
    """Each workload's way of being measured, in plan order (pure but for the registries)."""
    shares = budget_shares(plan.workloads)
    out = []
    for wl in plan.workloads:
        way = next(w for w in WAYS if w.fits(plan, wl))
        out.append(Measuring(wl, way, way.method_for(plan, wl, shares.get(wl.label, 1.0))))
    return out


def _by_way(plan: Plan) -> list[tuple[WayOfMeasuring, Method, list[str]]]:
    """The ways the plan's workloads are measured, each with a method once, and the labels measured so."""
    out: list[tuple[WayOfMeasuring, Method, list[str]]] = []
    for m in how_measured(plan):
        same = next((x for x in out if x[0] is m.way and x[1] == m.method), None)
        if same is None:
            out.append((m.way, m.method, [m.workload.label]))
        else:
            same[2].append(m.workload.label)
    return out


def method_lines(plan: Plan) -> list[str]:
    """How the plan's speed runs are measured, for the dry run: each way the executor takes, with the workloads it
    takes it for (pure but for the registries)."""
    if not plan.method.speed:
        return ["no speed runs"]
    lines = []
    ways = _by_way(plan)
    for way, method, labels in ways:
        first, *rest = way.describe(method)
        lines.append(f"{way.name} ({', '.join(labels)}): {first}")
        lines += rest
    return lines


def method_words(plan: Plan) -> str:
    """How the run measures, in a few words, for its first line (pure but for the registries)."""
    if not plan.method.speed:
        return "no speed runs"
    return "; ".join(f"{way.name}, {way.words(method)}" for way, method, _ in _by_way(plan))
