"""Fixed-rate runs and the capacity search (pure): every figure derived again from the stored slices, and the
one judge of a workload measured at a fixed rate: by the lowest percentile from the scheduled start (the race's
decision, stats/decision.py, on the percentiles, at the plan's margin), or by the highest capacity within the
latency target. The report puts the judgement into words (report/latency.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pickfs.model import Plan, RunRecord, plan_from_dict
from pickfs.stats.capacity import Capacity, LatencyTarget, Verdict, capacity, judge, parse_target
from pickfs.stats.decision import Decision, decide
from pickfs.stats.latency import (
    PercentileRatio,
    RateSummary,
    Slice,
    fixed_rate_block,
    latency_fit,
    percentile_ratio,
    slice_from,
    summarize_rate,
)

CPU_BOUND_SHARE = 0.9  # as workloads/latency.py flags a slice (the analysis imports no workload)
RATIO_Q = 99.0


@dataclass(frozen=True)
class RateRow:
    config: str
    summary: RateSummary
    p99_ratio: PercentileRatio | None  # over the baseline's, paired in time; None for the baseline itself


@dataclass(frozen=True)
class RateView:
    label: str
    baseline: str
    rows: tuple[RateRow, ...]


def rate_slices(record: RunRecord, plan: Plan | None = None) -> dict[str, dict[str, list[Slice]]]:
    """Every measured fixed-rate slice, by workload label and configuration (`plan`: the record's, parsed)."""
    plan = plan or plan_from_dict(record.plan)
    cells = {c.index: c for c in plan.cells()}
    out: dict[str, dict[str, list[Slice]]] = {}
    for t in record.trials:
        cell = cells.get(t.cell_index)
        if cell is None or t.phase != "measured" or not t.ok:
            continue
        block = fixed_rate_block(t.raw_output)
        if block is None:
            continue
        cpu_bound = t.metrics.get("client_cpu_share", 0.0) > CPU_BOUND_SHARE
        s = slice_from(t.block, t.round if t.round is not None else t.repetition, block, cpu_bound)
        out.setdefault(cell.workload.label, {}).setdefault(cell.config.name, []).append(s)
    return out


def rate_views(record: RunRecord, plan: Plan | None = None,
               slices: Mapping[str, Mapping[str, Sequence[Slice]]] | None = None) -> list[RateView]:
    plan = plan or plan_from_dict(record.plan)
    views = []
    for label, by_config in (slices if slices is not None else rate_slices(record, plan)).items():
        names = [c.name for c in plan.configs if c.name in by_config]
        base = plan.baseline if plan.baseline is not None and plan.baseline in by_config else names[0]
        rows = []
        for name in names:
            summary = summarize_rate(by_config[name])
            if summary is None:
                continue
            ratio = None if name == base else percentile_ratio(by_config[name], by_config[base], RATIO_Q)
            rows.append(RateRow(name, summary, ratio))
        views.append(RateView(label, base, tuple(rows)))
    return views


# -- the capacity search (engine/capacity.py): every figure derived again from its slices --------------------
@dataclass(frozen=True)
class CapacityRow:
    config: str
    verdicts: tuple[Verdict, ...]  # one per rate tried, in the order tried
    capacity: Capacity


def capacity_rows(record: RunRecord, plan: Plan | None = None) -> list[tuple[str, LatencyTarget, list[CapacityRow]]]:
    """Per workload: the target and, per configuration, its verdict at every rate tried and its capacity."""
    plan = plan or plan_from_dict(record.plan)
    if not plan.method.latency_target:
        return []
    target = parse_target(plan.method.latency_target)
    cells = {c.index: c for c in plan.cells()}
    by: dict[str, dict[str, dict[float, list[Slice]]]] = {}
    for t in sorted(record.trials, key=lambda t: t.started):
        cell = cells.get(t.cell_index)
        block = fixed_rate_block(t.raw_output) if t.phase == "capacity" and t.ok else None
        if cell is None or block is None:
            continue
        s = slice_from(t.block, t.round or 0, block, t.metrics.get("client_cpu_share", 0.0) > CPU_BOUND_SHARE)
        by.setdefault(cell.workload.label, {}).setdefault(cell.config.name, {}).setdefault(s.offered, []).append(s)
    out = []
    for label, configs in by.items():
        rows = []
        for c in plan.configs:
            steps = configs.get(c.name)
            if not steps:
                continue
            verdicts = tuple(judge(slices, target, rate) for rate, slices in steps.items())
            rows.append(CapacityRow(c.name, verdicts, capacity(verdicts)))
        out.append((label, target, rows))
    return out


@dataclass(frozen=True)
class FixedRate:
    """A run's fixed-rate figures, derived once: its slices, its tables and its capacity searches."""

    slices: Mapping[str, Mapping[str, Sequence[Slice]]] = field(default_factory=dict)
    views: tuple[RateView, ...] = ()
    capacity: tuple[tuple[str, LatencyTarget, list[CapacityRow]], ...] = ()


def fixed_rate(record: RunRecord, plan: Plan | None = None) -> FixedRate:
    plan = plan or plan_from_dict(record.plan)
    slices = rate_slices(record, plan)
    return FixedRate(slices, tuple(rate_views(record, plan, slices)), tuple(capacity_rows(record, plan)))


# -- the judge at a fixed rate ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ByPercentile:
    """The lowest percentile from the scheduled start: the race's decision on the percentiles."""

    view: RateView
    slices: Mapping[str, Sequence[Slice]]
    safe: tuple[str, ...]  # the safe candidates measured, most preferred first
    decision: Decision | None  # None: no safe candidate measured


@dataclass(frozen=True)
class ByCapacity:
    """The highest capacity within the target, and those whose capacity cannot be told apart from it."""

    label: str
    target: LatencyTarget
    safe: tuple[CapacityRow, ...]  # the safe candidates, highest capacity first
    close: tuple[CapacityRow, ...]  # after the best, those not told apart from it


@dataclass(frozen=True)
class LatencyChoice:
    """What a fixed-rate run or a capacity search recommends; `answer` only when settled."""

    answer: str | None
    settled: bool
    what_is_lost: str
    by_percentile: ByPercentile | None = None
    by_capacity: ByCapacity | None = None

    @property
    def decision(self) -> Decision | None:
        """At a fixed rate: the race's decision on the percentiles."""
        return self.by_percentile.decision if self.by_percentile is not None else None


def latency_choice(fixed: FixedRate, label: str, candidates: Sequence[str], others: Sequence[str],
                   what_is_lost: str, margin: float) -> LatencyChoice | None:
    """The recommendation of a fixed-rate workload (`candidates`: the safe configurations, most preferred
    first; `others`: those with a setting that can lose data, or references; `margin`: the plan's): by capacity
    within the target for a capacity search, else by the lowest p99 from the scheduled start. None: nothing at a
    fixed rate."""
    for found_label, target, rows in fixed.capacity:
        if found_label == label:
            return by_capacity(label, target, rows, candidates, what_is_lost)
    view = next((v for v in fixed.views if v.label == label), None)
    if view is None:
        return None
    return by_percentile(view, fixed.slices[label], candidates, others, what_is_lost, margin)


def by_percentile(view: RateView, slices: Mapping[str, Sequence[Slice]], candidates: Sequence[str],
                  others: Sequence[str], what_is_lost: str, margin: float) -> LatencyChoice:
    safe = tuple(c for c in candidates if c in slices)
    if not safe:
        return LatencyChoice(None, False, what_is_lost, ByPercentile(view, slices, safe, None))
    fit = latency_fit({n: slices[n] for n in [*safe, *others] if n in slices}, RATIO_Q)
    d = decide(fit, safe, [o for o in others if o in slices], view.baseline, margin)
    settled = d.answer is not None and d.settled
    return LatencyChoice(d.answer if settled else None, settled, what_is_lost, ByPercentile(view, slices, safe, d))


def by_capacity(label: str, target: LatencyTarget, rows: Sequence[CapacityRow], candidates: Sequence[str],
                what_is_lost: str) -> LatencyChoice:
    safe = tuple(sorted((r for r in rows if r.config in candidates),
                        key=lambda r: (-r.capacity.rate, list(candidates).index(r.config))))
    if not safe or safe[0].capacity.rate <= 0:
        return LatencyChoice(None, False, what_is_lost, by_capacity=ByCapacity(label, target, safe, ()))
    best = safe[0]
    # another is not told apart when its interval reaches the best one's: its highest rate surely failed (open:
    # none surely failed) lies above the best one's highest rate surely held
    close = tuple(r for r in safe[1:] if r.capacity.rate > 0
                  and (r.capacity.high is None or r.capacity.high > best.capacity.low))
    found = ByCapacity(label, target, safe, close)
    if close:
        return LatencyChoice(None, False, what_is_lost, by_capacity=found)
    return LatencyChoice(best.config, True, what_is_lost, by_capacity=found)
