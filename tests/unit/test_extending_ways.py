"""Adding a way of measuring touches exactly the files docs/extending.md names ("A way of measuring").

The test copies the source tree, writes a dummy way of measuring into the files the guide names (and nowhere else),
and checks in a fresh interpreter that the choice, the dry run, the time estimate, the run's first line and the
executor all take it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.guide import ROOT, edit_as_guided, guide_names

WAY = '''\
"""A way of measuring that exists only in tests/unit/test_extending_ways.py: one trial per configuration, saved
with a figure of its own, nothing stood up."""

from __future__ import annotations

import time
from dataclasses import dataclass

from pickfs.engine.bench import Bench
from pickfs.model import Cell, Method, Plan, Trial, WorkloadSpec


@dataclass(frozen=True)
class DummyWay:
    name: str = "dummy way"
    sliced: bool = False
    whole_plan: bool = False

    def fits(self, plan: Plan, spec: WorkloadSpec) -> bool:
        return spec.name == "smallfiles"

    def method_for(self, plan: Plan, spec: WorkloadSpec, share: float) -> Method:
        return plan.method

    def until(self, m: Method) -> str:
        return "each configuration has its one trial"

    def describe(self, m: Method) -> list[str]:
        return ["one dummy trial per configuration", "  nothing is stood up"]

    def words(self, m: Method) -> str:
        return "one dummy trial each"

    def measure(self, bench: Bench, cells: list[Cell], previous: tuple[Trial, ...], failed: set[int]) -> None:
        for cell in cells:
            with bench.failing(cell, failed):
                if cell.index == 1:
                    raise OSError("the dummy way fails its second configuration")
                bench.store.save_trial(Trial(run_id=bench.run_id, cell_index=cell.index, repetition=0,
                                             phase="measured", started=time.time(), elapsed_s=0.0, ok=True,
                                             metrics={"dummy": 1.0}))


DUMMY_WAY = DummyWay()
'''

CHECKS = '''
import sys
from pathlib import Path

from pickfs.cli.plan_check import method_lines
from pickfs.engine.choice import WAYS, how_measured
from pickfs.engine.dummy_way import DUMMY_WAY
from pickfs.engine.estimate import estimate
from pickfs.engine.executor import Executor
from pickfs.model import Method, Target
from pickfs.plan import build_plan, directory_config
from pickfs.plan.flags import workload_specs
from pickfs.store import ResultStore
from pickfs.usecases.run import Silent, method_words, plan_record

tmp = Path(sys.argv[1])
dirs = []
for name in ("a", "b"):
    (tmp / name).mkdir()
    dirs.append(directory_config(str(tmp / name)))
plan = build_plan(Target(kind="directory", workdir=str(tmp / "wd")), dirs,
                  workload_specs(("sqlite-tpcb", "smallfiles"), (), None), Method(), None)
assert DUMMY_WAY in WAYS
assert [w.way.name for w in how_measured(plan)] == ["race", "dummy way"], how_measured(plan)
lines = method_lines(plan)
assert "dummy way (smallfiles): one dummy trial per configuration" in lines and "  nothing is stood up" in lines
assert "dummy way, one dummy trial each" in method_words(plan)
assert [e.label for e in estimate(plan)] == ["sqlite-tpcb", "smallfiles"]

only = build_plan(plan.target, dirs, workload_specs(("smallfiles",), (), None), Method(), None)
store = ResultStore(tmp / "results.db")
run_id = "20260101-000000-dumw"
store.create_run(run_id, "0.1.0", plan_record(only), {"hostname": "box"})
with Silent().measuring() as observer:
    failed = Executor(only, run_id, store, None, observer).execute()
trials = store.load(run_id).trials
assert [(t.cell_index, t.ok, t.metrics) for t in trials] == [(0, True, {"dummy": 1.0}), (1, False, {})], trials
assert failed == {1} and "the dummy way fails its second configuration" in trials[1].error
print("the dummy way is taken everywhere")
'''


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ways")
    shutil.copytree(ROOT / "src" / "pickfs", root / "src" / "pickfs",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    engine = root / "src" / "pickfs" / "engine"
    (engine / "dummy_way.py").write_text(WAY)
    edit_as_guided(engine / "choice.py", "from pickfs.engine.capacity import CAPACITY_SEARCH\n",
                   "from pickfs.engine.dummy_way import DUMMY_WAY\n")
    edit_as_guided(engine / "choice.py", "WAYS: tuple[WayOfMeasuring, ...] = (ONE_AT_A_TIME, CAPACITY_SEARCH, RACE, SIDE_BY_SIDE, ",
                   "DUMMY_WAY, ")
    return root


def test_the_dummy_way_touches_exactly_the_files_the_guide_names(copy: Path) -> None:
    changed = set()
    for path in (copy / "src" / "pickfs").rglob("*.py"):
        rel = path.relative_to(copy).as_posix()
        if not (ROOT / rel).exists() or (ROOT / rel).read_bytes() != path.read_bytes():
            changed.add(rel)
    assert changed == {p.replace("<name>", "dummy_way") for p in guide_names("A way of measuring")}


def test_the_choice_dry_run_estimate_and_executor_take_the_dummy_way(copy: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", CHECKS, str(tmp_path)], capture_output=True, text=True, env=env,
                         cwd=copy)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "the dummy way is taken everywhere"
