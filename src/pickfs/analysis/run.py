"""A stored run analysed once (pure): its plan parsed, every workload's view with its judge's answer, its
fixed-rate figures, and how busy the machine was while it measured. Every renderer reads this; a renderer given a stored run analyses it here first.

A disturbed run does not decide on slices whose removal would change its answer: it is decided again on its
quiet slices, and a workload whose answer differs is answered from those (the disturbance says which, first).
A plan that accepts a busy machine (`accept_busy`) decides on every slice."""

from __future__ import annotations

from dataclasses import dataclass, replace

from pickfs.analysis.answer import finding, recommended
from pickfs.analysis.latency import FixedRate, fixed_rate
from pickfs.analysis.views import WorkloadView, workload_views
from pickfs.analysis.whole import choice
from pickfs.model import Plan, RunRecord, plan_from_dict
from pickfs.stats.disturbance import Disturbance, busy_slice, disturbance


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


def _answer(view: WorkloadView) -> tuple[str | None, bool]:
    """What a workload's answer names, and whether it is settled (a race's preferred configuration, settled
    or not; otherwise the configuration its judge recommends)."""
    if view.race is not None:
        found = finding(view)
        return (found.preferred if found is not None else view.race.decision.answer), view.race.decision.settled
    named = recommended(view)
    return named, named is not None


def _on_quiet_slices(view: WorkloadView) -> WorkloadView:
    """A view decided on the quiet slices alone, marked so: its race's time and projections count those."""
    return replace(view, race=replace(view.race, quiet=True)) if view.race is not None else view


def _decided_quietly(record: RunRecord, plan: Plan, views: tuple[WorkloadView, ...],
                     dist: Disturbance) -> tuple[tuple[WorkloadView, ...], Disturbance]:
    """A disturbed run decided again on its quiet slices: every workload with a busy slice is answered and figured
    from its quiet slices where they suffice to answer (the question is the configurations' speed on a quiet
    machine: a busy slice's figures are not that, even where the answer stays); `changes` names those whose
    answer differs, the others' answer is the same and only their figures move. A workload none of
    whose slices was busy is its own quiet view: only the workloads with a busy slice are analysed again (the
    others' slices are left out of the quiet record, so their views there are empty and not read)."""
    label_of = {c.index: c.workload.label for c in plan.cells()}
    busy = [busy_slice(t) for t in record.trials]
    affected = {label_of.get(t.cell_index) for t, b in zip(record.trials, busy, strict=True) if b}
    quiet_record = replace(record, trials=tuple(t for t, b in zip(record.trials, busy, strict=True)
                                                if label_of.get(t.cell_index) in affected and not b))
    quiet = {v.label: v for v in build_views(quiet_record, plan, fixed_rate(quiet_record, plan))
             if v.label in affected}
    answers = {label: _answer(v) for label, v in quiet.items()}
    # too few quiet slices to answer from (none measured, no race fitted, nothing named): not checked
    unchecked = tuple(v.label for v in views if v.label in affected and v.measured and (
        v.label not in quiet or not quiet[v.label].measured or answers[v.label][0] is None
        or (v.race is not None and quiet[v.label].race is None)))
    on_quiet = tuple(v.label for v in views if v.label in quiet and v.label not in unchecked)
    view_of = {v.label: v for v in views}
    changed = tuple(label for label in on_quiet if answers[label] != _answer(view_of[label]))
    return (tuple(_on_quiet_slices(quiet[v.label]) if v.label in on_quiet else v for v in views),
            replace(dist, rechecked=True, changes=changed, on_quiet=on_quiet, unchecked=unchecked))


def analyse(record: RunRecord) -> AnalysedRun:
    plan = plan_from_dict(record.plan)
    fixed = fixed_rate(record, plan)
    views = tuple(build_views(record, plan, fixed))
    dist = disturbance(record.trials)
    if dist is not None and plan.method.accept_busy:
        dist = replace(dist, accepted=True)
    elif dist is not None and dist.disturbed:
        views, dist = _decided_quietly(record, plan, views, dist)
    return AnalysedRun(record, plan, views, fixed, dist)


def analysed(run: RunRecord | AnalysedRun) -> AnalysedRun:
    """The run analysed: as given when it already is."""
    return run if isinstance(run, AnalysedRun) else analyse(run)
