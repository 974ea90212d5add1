"""Runs from another results database (a host's, fetched by `pickfs fleet run`, or a colleague's) merged
into this one. Idempotent: a run already here gains only the trials it lacks, so merging twice adds nothing."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pickfs.errors import NotFound
from pickfs.model import RaceRound, RunRecord, Trial
from pickfs.store.results import ResultStore, race_round_insert

# The run ids pickfs makes (store/results.py's new_run_id): a merged id becomes a file name in the report site.
RUN_ID = re.compile(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{4}")


def check_run_id(run_id: object) -> str:
    """The id, when it is one pickfs makes; ValueError otherwise (pure)."""
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        raise ValueError(f"run id {str(run_id)[:40]!r} is not one pickfs makes (YYYYMMDD-HHMMSS-xxxx)")
    return run_id


# What identifies a trial across databases (the row id does not: each database numbers its own).
TrialKey = tuple[int, int, str, float, int, int | None]


def trial_key(t: Trial) -> TrialKey:
    return (t.cell_index, t.repetition, t.phase, round(t.started, 6), t.block, t.round)


def same_run(a: RunRecord, b: RunRecord) -> bool:
    """Are two records with the same id the same run (same start, same host), not a clash of ids?"""
    return abs(a.created - b.created) < 1e-3 and a.host.get("hostname") == b.host.get("hostname") and \
        a.host.get("name") == b.host.get("name")


@dataclass(frozen=True)
class MergePlan:
    """What merging one run adds (pure): nothing, a new run, or the trials an existing copy lacks."""

    run_id: str
    new_run: bool
    trials: tuple[Trial, ...]
    status_update: str | None = None  # the source's status when it is newer than ours
    clash: str = ""  # the two runs only share an id: nothing is merged
    race_rounds: tuple[RaceRound, ...] = ()  # the rounds of its races it lacks


def plan_merge(incoming: RunRecord, existing: RunRecord | None) -> MergePlan:
    check_run_id(incoming.id)
    if existing is None:
        return MergePlan(incoming.id, True, incoming.trials, race_rounds=incoming.race_rounds)
    if not same_run(incoming, existing):
        return MergePlan(incoming.id, False, (), clash=f"run {incoming.id} here is another run with the same id "
                         f"(host {existing.host.get('name') or existing.host.get('hostname')}); left as it is")
    have = {trial_key(t) for t in existing.trials}
    missing = tuple(t for t in incoming.trials if trial_key(t) not in have)
    status = incoming.status if incoming.updated > existing.updated and incoming.status != existing.status else None
    rounds = {(r.label, r.round) for r in existing.race_rounds}
    return MergePlan(incoming.id, False, missing, status,
                     race_rounds=tuple(r for r in incoming.race_rounds if (r.label, r.round) not in rounds))


@dataclass
class MergeResult:
    runs_added: list[str] = field(default_factory=list)
    runs_extended: list[str] = field(default_factory=list)
    trials_added: int = 0
    clashes: list[str] = field(default_factory=list)

    @property
    def nothing(self) -> bool:
        return not (self.runs_added or self.runs_extended or self.trials_added)


def _trial_insert(t: Trial, run_id: str) -> tuple[str, tuple[Any, ...]]:
    return ("INSERT INTO trials (run_id, cell_index, repetition, phase, started, elapsed_s, ok, metrics_json,"
            " raw_output, mount_json, notes_json, error, monitor_json, block, round)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, t.cell_index, t.repetition, t.phase, t.started, t.elapsed_s, int(t.ok), json.dumps(t.metrics),
             t.raw_output, json.dumps(t.mount), json.dumps(list(t.notes)), t.error, json.dumps(t.monitor), t.block,
             t.round))


def merge_runs(dest: ResultStore, source: ResultStore, run_ids: list[str] | None = None) -> MergeResult:
    """Every run of `source` (or those named) into `dest`, each run in one transaction."""
    result = MergeResult()
    ids = run_ids if run_ids is not None else [r.id for r in source.list_runs()]
    for run_id in ids:
        incoming = source.load(run_id)
        try:
            existing = dest.load(incoming.id) if incoming.id in dest.run_ids() else None
        except NotFound:
            existing = None
        plan = plan_merge(incoming, existing)
        if plan.clash:
            result.clashes.append(plan.clash)
            continue
        statements: list[tuple[str, tuple[Any, ...]]] = []
        if plan.new_run:
            statements.append(("INSERT INTO runs (id, created, updated, status, pickfs_version, plan_json,"
                               " host_json, notes_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                               (incoming.id, incoming.created, incoming.updated, incoming.status,
                                incoming.pickfs_version, json.dumps(incoming.plan), json.dumps(incoming.host),
                                json.dumps(list(incoming.notes)))))
        statements += [_trial_insert(t, incoming.id) for t in plan.trials]
        statements += [race_round_insert(incoming.id, r) for r in plan.race_rounds]
        if plan.status_update:
            statements.append(("UPDATE runs SET status=?, updated=?, notes_json=? WHERE id=?",
                               (plan.status_update, incoming.updated, json.dumps(list(incoming.notes)), incoming.id)))
        if not statements:
            continue
        dest.write_statements(incoming.id, *statements)
        if plan.new_run:
            result.runs_added.append(incoming.id)
        elif plan.trials or plan.status_update:
            result.runs_extended.append(incoming.id)
        result.trials_added += len(plan.trials)
    return result
