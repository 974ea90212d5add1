"""The race records the decision trail it acted on (each round's decision, and why it stopped) in the results
database, and the analysis reproduces that trail exactly from the stored trials (analysis/views.py
`trail_differences`).

The races here are the engine's own (engine/race.py `Race`, its rounds, its rotation, its new blocks and its stop)
on slices that are not measured: fresh simulated races on a drifting machine, and replays of every raced workload
of the stored real runs (tests/data/real-runs.db.gz), each slice served from what the real race measured."""

from __future__ import annotations

import gzip
import math
import random
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pickfs.analysis.run import build_views
from pickfs.analysis.views import SIDE_BY_SIDE, race_trail, trail_differences
from pickfs.engine.bench import Bench
from pickfs.engine.race import Race
from pickfs.engine.schedule import round_budget
from pickfs.engine.sidebyside import Member, Slicer
from pickfs.model import STOP_REASONS, Cell, Plan, RunRecord, Target, Trial, method_of, plan_from_dict
from pickfs.plan import build_plan, configs_from_names
from pickfs.plan.flags import workload_specs
from pickfs.store import ResultStore
from pickfs.store.merge import merge_runs
from pickfs.usecases.run import plan_record

DATA = Path(__file__).resolve().parents[1] / "data" / "real-runs.db.gz"


class Quiet:
    """The engine's observer, keeping its notes."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None

    def note(self, text: str) -> None:
        self.notes.append(text)


class ReplayOver(Exception):
    """A replayed race asked for a slice the real race did not measure: the replay ends there."""


class Simulated(Slicer):
    """Standing up and slicing without a disk: each image has a level of its own, the machine drifts, every slice
    is saved as the real one is (`serve` may instead hand back what a stored run measured)."""

    def __init__(self, bench: Bench, effects: dict[str, float], seed: int) -> None:
        super().__init__(bench)
        self.effects = effects
        self.rng = random.Random(seed)
        self.levels: dict[tuple[int, int], float] = {}
        self.clock = 1_700_000_000.0

    def stand_up_one(self, stack: ExitStack, members: list[Member], cell: Cell, block: int, failed: set[int]) -> bool:
        self.levels[(cell.index, block)] = self.rng.gauss(0.0, 0.03)
        members.append(Member(cell, None, None, None, None, block))  # type: ignore[arg-type]
        return True

    def slice_or_fail(self, member: Member, round_no: int, others: list[Member], failed: set[int]) -> Trial | None:
        self.clock += 1.2
        weather = 0.1 * math.sin(self.clock / 40.0)
        level = self.effects[member.cell.config.name] + self.levels[(member.cell.index, member.block)] + weather
        tps = 1000.0 * math.exp(level + self.rng.gauss(0.0, 0.04))
        trial = Trial(run_id=self.bench.run_id, cell_index=member.cell.index, repetition=round_no, phase="measured",
                      started=self.clock, elapsed_s=1.0, ok=True, metrics={"tps": tps, "slice_s": 1.0},
                      block=member.block, round=round_no)
        self.bench.store.save_trial(trial)
        return trial


class Replayed(Slicer):
    """A stored race again: an image stands where the real race stood one, and each slice is the one it measured
    (saved again, as it was)."""

    def __init__(self, bench: Bench, stored: list[Trial]) -> None:
        super().__init__(bench)
        self.stored = {(t.cell_index, t.block, t.round): t for t in stored}

    def stand_up_one(self, stack: ExitStack, members: list[Member], cell: Cell, block: int, failed: set[int]) -> bool:
        if any(k[:2] == (cell.index, block) for k in self.stored):
            members.append(Member(cell, None, None, None, None, block))  # type: ignore[arg-type]
        return True

    def slice_or_fail(self, member: Member, round_no: int, others: list[Member], failed: set[int]) -> Trial | None:
        trial = self.stored.get((member.cell.index, member.block, round_no))
        if trial is None:
            raise ReplayOver()
        trial = replace(trial, run_id=self.bench.run_id)
        self.bench.store.save_trial(trial)
        return trial


def _fresh(store: ResultStore, run_id: str, plan: Plan) -> Bench:
    store.create_run(run_id, "0.1.0", plan_record(plan), {"hostname": "box"})
    return Bench(plan, run_id, store, None, Quiet())  # type: ignore[arg-type]


def _check(record: RunRecord, plan: Plan, resumed: bool = False) -> int:
    """Every raced workload's recorded trail is the one the analysis reproduces; the rounds compared."""
    compared = 0
    for view in build_views(record):
        if view.rows[0].how != SIDE_BY_SIDE:
            continue
        recorded = [r for r in record.race_rounds if r.label == view.label]
        assert recorded, (record.id, view.label)
        assert trail_differences(view, plan.method, record.race_rounds) == []
        decided = [r.round for r in recorded if r.decision is not None]
        ours = [rnd for rnd, _ in race_trail(view, plan.method)]
        # after the fewest rounds the race decides after every round, and records it
        assert decided == [rnd for rnd in ours if rnd >= round_budget(plan.method).min_rounds - 1] or resumed
        assert all(r.stop is None for r in recorded[:-1]) and recorded[-1].stop in STOP_REASONS
        compared += len(decided)
    return compared


SIMULATIONS = [
    ({"ext4": 0.0, "xfs": 0.12, "btrfs": -0.3}, 1),  # a clear answer, one out early
    ({"ext4": 0.0, "xfs": 0.01, "btrfs": -0.02}, 2),  # all within the margin: the preference decides
    ({"ext4": 0.0, "xfs": 0.055, "ext4-nobarrier": 0.2}, 3),  # near the margin, and one that can lose data
    ({"ext4": 0.0, "xfs": 0.0, "btrfs": 0.0, "ext2": 0.05, "tmpfs": 1.0}, 4),  # a legacy format and a reference
]


@pytest.mark.parametrize(("effects", "seed"), SIMULATIONS)
def test_a_fresh_race_records_the_trail_the_analysis_reproduces(tmp_path: Path, effects: dict[str, float],
                                                                 seed: int) -> None:
    plan = build_plan(Target(workdir=str(tmp_path)), configs_from_names(",".join(effects)),
                      workload_specs(("sqlite-tpcb",), (), None),
                      method_of(max_seconds=600.0, target_ci=0.05, max_runs=24, blocks=2, seed=seed), None)
    store = ResultStore(tmp_path / "results.db")
    run_id = f"20260101-000000-000{seed}"
    bench = _fresh(store, run_id, plan)
    Race(Simulated(bench, effects, seed), list(plan.cells())).run((), set())
    record = store.load(run_id)
    assert _check(record, plan) >= 1
    # the trail travels with the run when runs are merged, once
    other = ResultStore(tmp_path / "merged.db")
    merge_runs(other, store)
    merge_runs(other, store)
    assert other.load(run_id).race_rounds == record.race_rounds


@pytest.fixture(scope="module")
def stored_runs(tmp_path_factory: pytest.TempPathFactory) -> list[RunRecord]:
    path = tmp_path_factory.mktemp("trail") / "results.db"
    path.write_bytes(gzip.decompress(DATA.read_bytes()))
    store = ResultStore.read_only(path)
    out = [store.load(r.id) for r in store.list_runs()]
    store.close()
    return out


def test_every_stored_race_replayed_records_the_trail_the_analysis_reproduces(tmp_path: Path,
                                                                               stored_runs: list[RunRecord]) -> None:
    """Each raced workload of the stored runs raced again by the engine on the slices the real race measured: the
    decisions it records are the ones the analysis reproduces from the stored trials."""
    store = ResultStore(tmp_path / "results.db")
    compared = raced = 0
    expected: dict[tuple[str, str], list[int]] = {}
    for record in stored_runs:
        plan = plan_from_dict(record.plan)
        stored_views = {v.label: v for v in build_views(record)}
        run_id = record.id
        store.create_run(run_id, record.pickfs_version, record.plan, record.host)
        bench = Bench(plan, run_id, store, None, Quiet())  # type: ignore[arg-type]
        failed = {t.cell_index for t in record.trials if not t.ok and t.phase != "crash"}
        for label, view in stored_views.items():
            if view.rows[0].how != SIDE_BY_SIDE or not race_trail(view, plan.method):
                continue
            raced += 1
            expected[(run_id, label)] = [rnd for rnd, _ in race_trail(view, plan.method)
                                         if rnd >= round_budget(plan.method).min_rounds - 1]
            group = [c for c in plan.cells() if c.workload.label == label]
            indexes = {c.index for c in group}
            slices = [t for t in record.trials if t.cell_index in indexes and t.phase == "measured" and t.ok
                      and t.round is not None]
            try:
                Race(Replayed(bench.with_method(plan.method), slices), group).run((), set(failed))
            except ReplayOver:
                pass
        again = store.load(run_id)
        for label in {r.label for r in again.race_rounds}:
            view = next(v for v in build_views(again) if v.label == label)
            assert trail_differences(view, plan.method, again.race_rounds) == [], (run_id, label)
            decided = [r.round for r in again.race_rounds if r.label == label and r.decision is not None]
            assert decided == expected[(run_id, label)], (run_id, label)  # every round the race judged, replayed
            compared += len(decided)
    assert raced >= 4 and compared == sum(len(v) for v in expected.values()) >= 6


@pytest.mark.parametrize(("column", "value"), [("decision_json", '{"settled": "yes"}'), ("decision_json", "[1, 2"),
                                               ("stop", "bored"), ("round", "three")])
def test_a_damaged_round_of_a_race_is_refused_in_one_line(tmp_path: Path, column: str, value: str) -> None:
    from pickfs.errors import ResultsUnusable
    from pickfs.model import RaceRound

    plan = build_plan(Target(workdir=str(tmp_path)), configs_from_names("ext4,xfs"),
                      workload_specs(("sqlite-tpcb",), (), None), method_of(), None)
    store = ResultStore(tmp_path / "results.db")
    run_id = "20260101-000000-dama"
    _fresh(store, run_id, plan)
    store.save_race_round(run_id, RaceRound("sqlite-tpcb", 2, None, "budget"))
    assert store.load(run_id).race_rounds == (RaceRound("sqlite-tpcb", 2, None, "budget"),)
    assert store.conn is not None
    store.conn.execute(f"UPDATE race_rounds SET {column} = ?", (value,))
    with pytest.raises(ResultsUnusable, match=f"damaged run {run_id}"):
        store.load(run_id)


class Spread(Simulated):
    """Images far apart (the spread from one mkfs to the next beyond the slices'), so the race stands up new blocks;
    each new block's images are stood up seeing which rounds' decisions the run holds by then."""

    def __init__(self, bench: Bench, effects: dict[str, float], seed: int) -> None:
        super().__init__(bench, effects, seed)
        self.growing: list[tuple[int, int]] = []  # (the last round sliced, the last round recorded)

    def stand_up_one(self, stack: ExitStack, members: list[Member], cell: Cell, block: int, failed: set[int]) -> bool:
        record = self.bench.store.load(self.bench.run_id)
        if record.trials:  # a block the race stands up between rounds
            self.growing.append((max(t.round or 0 for t in record.trials),
                                 max((r.round for r in record.race_rounds), default=-1)))
        super().stand_up_one(stack, members, cell, block, failed)
        self.levels[(cell.index, block)] = self.rng.gauss(0.0, 0.2)
        return True


def test_the_race_records_the_decision_that_asks_for_a_new_block_before_standing_it_up(tmp_path: Path) -> None:
    """The trail is saved before the race acts on it: a new block takes minutes to stand up, and a run cut short
    meanwhile kept no record of the decision it was acting on (it was recorded after the block stood)."""
    effects = {"ext4": 0.0, "xfs": 0.03, "btrfs": 0.06}
    plan = build_plan(Target(workdir=str(tmp_path)), configs_from_names(",".join(effects)),
                      workload_specs(("sqlite-tpcb",), (), None),
                      method_of(max_seconds=600.0, margin=0.01, seed=5), None)
    store = ResultStore(tmp_path / "results.db")
    bench = _fresh(store, "20260101-000000-0005", plan)
    slicer = Spread(bench, effects, 5)
    Race(slicer, list(plan.cells())).run((), set())
    assert slicer.growing, bench.observer.notes  # type: ignore[attr-defined]
    assert all(sliced == recorded for sliced, recorded in slicer.growing), slicer.growing
    assert _check(store.load("20260101-000000-0005"), plan) >= 1
