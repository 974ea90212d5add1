"""The analysis reproduces the race's decisions: on every stored real run (tests/data/real-runs.db.gz), the
engine's race judging its slices after each round (engine/race.py `Race.judge`, as it does while it runs) and the
analysis judging the stored run (analysis/views.py `race_trail`) reach the same decision, to the last figure."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from pickfs.analysis.run import build_views
from pickfs.analysis.views import SIDE_BY_SIDE, race_trail
from pickfs.engine.bench import Bench
from pickfs.engine.race import Race
from pickfs.engine.sidebyside import Slicer
from pickfs.model import RunRecord, plan_from_dict
from pickfs.store import ResultStore

DATA = Path(__file__).resolve().parents[1] / "data" / "real-runs.db.gz"


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[RunRecord]:
    path = tmp_path_factory.mktemp("race") / "results.db"
    path.write_bytes(gzip.decompress(DATA.read_bytes()))
    store = ResultStore(path)
    out = [store.load(r.id) for r in store.list_runs()]
    store.close()
    return out


def test_the_analysis_reproduces_every_decision_of_the_race(records: list[RunRecord]) -> None:
    compared = 0
    for record in records:
        plan = plan_from_dict(record.plan)
        failed = {t.cell_index for t in record.trials if not t.ok and t.phase != "crash"}
        for view in build_views(record):
            trail = race_trail(view, plan.method)
            assert trail or view.rows[0].how != SIDE_BY_SIDE  # every workload measured side by side was raced
            group = [c for c in plan.cells() if c.workload.label == view.label]
            race = Race(Slicer(Bench(plan, record.id, None, None, None)), group)  # type: ignore[arg-type]
            indexes = {c.index for c in group}
            history = [t for t in record.trials if t.cell_index in indexes and t.phase == "measured" and t.ok
                       and t.round is not None]
            for rnd, decision in trail:
                judged = race.judge([t for t in history if (t.round or 0) <= rnd], failed)
                assert judged is not None, (record.id, view.label, rnd)
                assert judged[1] == decision, (record.id, view.label, rnd)
                compared += 1
    assert compared >= 14  # every round of every raced workload of the stored runs
