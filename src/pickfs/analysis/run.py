"""A stored run analysed once (pure): its plan parsed, every workload's view with its judge's answer, and its
fixed-rate figures. Every renderer reads this; a renderer given a stored run analyses it here first."""

from __future__ import annotations

from dataclasses import dataclass

from pickfs.analysis.latency import FixedRate, fixed_rate
from pickfs.analysis.views import WorkloadView, build_views
from pickfs.model import Plan, RunRecord, plan_from_dict


@dataclass(frozen=True)
class AnalysedRun:
    record: RunRecord  # as stored: its id, host, notes and trials
    plan: Plan  # parsed once
    views: tuple[WorkloadView, ...]
    fixed: FixedRate


def analyse(record: RunRecord) -> AnalysedRun:
    plan = plan_from_dict(record.plan)
    fixed = fixed_rate(record, plan)
    return AnalysedRun(record, plan, tuple(build_views(record, plan, fixed)), fixed)


def analysed(run: RunRecord | AnalysedRun) -> AnalysedRun:
    """The run analysed: as given when it already is."""
    return run if isinstance(run, AnalysedRun) else analyse(run)
