"""A stored run analysed once (pure): its plan parsed, every workload's view with its judge's answer, its
fixed-rate figures, and how busy the machine was while it measured. Every renderer reads this; a renderer given a stored run analyses it here first."""

from __future__ import annotations

from dataclasses import dataclass, replace

from pickfs.analysis.latency import FixedRate, fixed_rate
from pickfs.analysis.views import WorkloadView, workload_views
from pickfs.analysis.whole import choice
from pickfs.model import Plan, RunRecord, plan_from_dict
from pickfs.stats.disturbance import Disturbance, disturbance


@dataclass(frozen=True)
class AnalysedRun:
    record: RunRecord  # as stored: its id, host, notes and trials
    plan: Plan  # parsed once
    views: tuple[WorkloadView, ...]
    fixed: FixedRate
    disturbance: Disturbance | None = None  # None: its slices did not record the machine's load
    live: bool = False  # still being executed (another pickfs holds its lock): partial figures, no answer yet


def build_views(record: RunRecord, plan: Plan | None = None, fixed: FixedRate | None = None) -> list[WorkloadView]:
    """Every workload of a stored run analysed, each with its judge's answer: the race's decision, the judgement
    by latency at a fixed rate, or (for runs measured before the race) the leaders and the one chosen."""
    plan = plan or plan_from_dict(record.plan)
    views = workload_views(record, plan, fixed)
    return [replace(v, choice=choice(v)) if v.race is None and v.latency is None else v for v in views]


def analyse(record: RunRecord) -> AnalysedRun:
    plan = plan_from_dict(record.plan)
    fixed = fixed_rate(record, plan)
    return AnalysedRun(record, plan, tuple(build_views(record, plan, fixed)), fixed, disturbance(record.trials))


def analysed(run: RunRecord | AnalysedRun) -> AnalysedRun:
    """The run analysed: as given when it already is."""
    return run if isinstance(run, AnalysedRun) else analyse(run)
