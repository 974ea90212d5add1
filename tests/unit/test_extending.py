"""Adding a database (with its server) and a workload touches exactly the files docs/extending.md names.

The test copies the source tree, writes a dummy database, its server and a dummy workload into the
files the guide names (and nowhere else), and checks in a fresh interpreter that the registries, the
plan parser, the crash test and the report's choice of charts all see them; then the existing contract
tests (tests/unit/test_databases.py, tests/unit/test_workload_contract.py) run on the copy and cover them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.guide import ROOT, edit_as_guided, guide_names

DATABASE = '''\
"""dummydb: a database that exists only in tests/unit/test_extending.py, served by services/dummydb.py."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pickfs.databases.base import Database, Dialect
from pickfs.databases.values import ValueShape

if TYPE_CHECKING:
    from pathlib import Path

    from pickfs.model import WorkloadSpec
    from pickfs.services.base import Endpoint


class DummyDB(Database):
    name = database = service = "dummydb"
    dialect = Dialect("?", "", " LIMIT 1")
    packages = ("dummydb-server",)
    setting_shapes = {"dummy_sync": ValueShape("on", choices=("on", "off"))}

    def connect(self, args: argparse.Namespace) -> tuple[Any, tuple[type[BaseException], ...]]:
        import sqlite3

        return sqlite3.connect(args.db), (sqlite3.OperationalError,)

    def own_check(self, tx: Any) -> str:
        return "ok"

    def connection_args(self, datadir: Path, endpoint: Endpoint | None, settings: dict[str, Any],
                        stem: str) -> list[str]:
        return ["--db", str(datadir / f"{stem}.db")]

    def risks(self, spec: WorkloadSpec) -> list[str]:
        if str(spec.get("dummy_sync", "")).lower() == "off":
            return ["dummy_sync=off: dummydb acknowledges commits before they are on disk"]
        return []

    def server_settings(self) -> tuple[str, ...]:
        return ("dummy_sync",)


DATABASE = DummyDB()
'''

SERVICE = '''\
"""dummydb's server: exists only in tests/unit/test_extending.py (it is never installed)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pickfs.services.base import Endpoint, Service
from pickfs.stack.ledger import Ledger


class DummyServer(Service):
    name = "dummydb"
    package = "dummydb-server"

    @classmethod
    def not_installed(cls) -> str | None:
        return "dummydb is not installed (apt-get install dummydb-server)"

    @classmethod
    def serve(cls, stack: ExitStack, datadir: Path, settings: dict[str, Any], ledger: Ledger, rundir: Path,
              fresh: bool) -> Endpoint:
        return Endpoint(service=cls.name, socket_dir=str(rundir), port=0, user="dummy", database="dummy")


SERVICE = DummyServer
'''

WORKLOAD = '''\
"""dummy-load: a workload that exists only in tests/unit/test_extending.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from pickfs.model import MetricDef, RawOutput, WorkloadSpec
from pickfs.services.base import Endpoint
from pickfs.workloads.base import Workload
from pickfs.workloads.kinds import DATABASE_TRANSACTIONS


class DummyLoad(Workload):
    name = "dummy-load"
    description = "transactions on dummydb (a test's dummy)"
    kind = DATABASE_TRANSACTIONS
    metrics = (MetricDef("tps", "tx/s", True, "transactions per second"),)
    defaults: ClassVar[dict[str, Any]] = {"duration": 1.0, "dummy_sync": "on"}
    service = "dummydb"
    database = "dummydb"
    sliceable = True

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        return RawOutput("{}", 0.0)

    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        return RawOutput(json.dumps({"client": "dummy-load", "tps": 1.0}), 1.0)

    @staticmethod
    def parse(raw: str) -> dict[str, float]:
        doc = json.loads(raw)
        if not isinstance(doc, dict) or doc.get("client") != "dummy-load":
            raise ValueError("not the output of dummy-load")
        return {"tps": float(doc["tps"])}
'''

# In a fresh interpreter on the copy: everything that names databases and workloads sees the dummies.
CHECKS = '''\
import json, sys
from pathlib import Path

import pickfs
assert Path(pickfs.__file__).resolve().is_relative_to(Path(sys.argv[1]).resolve()), pickfs.__file__

from pickfs import databases, services
from pickfs.workloads import REGISTRY, workload_class
from pickfs.workloads.command import SERVICES
from pickfs.workloads.tpcc import BACKENDS

# the registries
db = databases.get("dummydb")
assert db.database == "dummydb" and services.service_class("dummydb").__name__ == "DummyServer"
assert "dummydb" in SERVICES and "dummydb" in BACKENDS  # a command's server, tpcc's backend
assert workload_class("dummy-load").database == "dummydb" and "dummy-load" in REGISTRY
assert db.unavailable_reason() == "dummydb is not installed (apt-get install dummydb-server)"

# the plan parser
from pickfs.errors import PlanError
from pickfs.plan import load_plan_file

plan_path = Path(sys.argv[2])
plan_path.write_text(
    'fs = ["ext4", "ext4-nobarrier"]\\n'
    '[[workload]]\\nname = "dummy-load"\\ndummy_sync = "off"\\n'
    '[[workload]]\\nname = "tpcc"\\nbackend = "dummydb"\\n'
    '[[workload]]\\nname = "command"\\ncommand = "true"\\nserver = "dummydb"\\ndummy_sync = "off"\\n')
plan = load_plan_file(plan_path)
dummy, tpcc, command = plan.workloads
assert dummy.name == "dummy-load" and dummy.get("dummy_sync") == "off" and dummy.get("duration") == 1.0
assert workload_class("tpcc").service_for(tpcc) == "dummydb"
assert workload_class("command").service_for(command) == "dummydb" and command.get("dummy_sync") == "off"
for bad, said in (('no_such = 1', "dummy_sync"), ('dummy_sync = "maybe"', "on")):
    plan_path.write_text('[[workload]]\\nname = "dummy-load"\\n' + bad + '\\n')
    try:
        load_plan_file(plan_path)
        raise AssertionError("the dummy workload accepted " + bad)
    except PlanError as exc:
        assert said in exc.hint, exc.hint

# the crash test and its strategies
from pickfs.crash import runner, states

assert "dummydb" in runner.BACKENDS
assert runner.backend_of(dummy) == "dummydb" and runner.backend_of(tpcc) == "dummydb"
reason = runner.crash_unavailable(plan.configs[0], dummy) or ""
assert "do not cover" not in reason and "no database" not in reason, reason
states.register_strategy(states.Strategy("dummy first half", "the first half of the unflushed writes kept",
                                         lambda changes, per, rng: [p for i in changes[:len(changes) // 2]
                                                                    for p in per[i]], at_bursts=9, spread=9))
assert "dummy first half" in states.parse_strategies("all")
assert "the first half of the unflushed writes kept" in runner.model_text(4096, 0.0)
from pickfs.crash.log import FLUSH, WRITE, Record
records = [Record(WRITE, 1, 0, 4096, 0), Record(FLUSH, 2, 0, 0, 0), Record(WRITE, 3, 4096, 4096, 0),
           Record(WRITE, 4, 8192, 4096, 0), Record(FLUSH, 5, 0, 0, 0)]
made = states.generate(records, 0, 10, 4, strategies=("dummy first half",))
assert made and all(s.mode == "dummy first half" for s in made)

# the report's choice of charts, from what the run recorded
from pickfs.usecases.run import plan_record
from pickfs.model import Trial
from pickfs.report.html import charts_for
from pickfs.analysis.run import build_views
from pickfs.store import ResultStore

record = plan_record(plan)
assert [w["kind"] for w in record["workloads"]] == ["database", "database", "database"]
assert record["workloads"][0]["database"] == "dummydb"
assert record["workloads"][0]["risks"] == ["dummy_sync=off: dummydb acknowledges commits before they are on disk"]
store = ResultStore(Path(sys.argv[3]))
store.create_run("20260101-000000-dumm", "0.1.0", record, {"hostname": "box"})
cells = [c for c in plan.cells() if c.workload.label == dummy.label]
for cell in cells:
    for k in range(3):
        store.save_trial(Trial(run_id="20260101-000000-dumm", cell_index=cell.index, repetition=k, phase="measured",
                               started=1.0 + k, elapsed_s=1.0, ok=True, metrics={"tps": 100.0 + k + cell.index}))
view = next(v for v in build_views(store.load("20260101-000000-dumm")) if v.name == "dummy-load")
assert view.kind == "database" and view.commits
assert "safety" in [name for name, _ in charts_for(store.load("20260101-000000-dumm"), view)]
# the report reads the kind the run recorded (it looks no workload up when the run says)
record["workloads"][0]["kind"] = "other"
store.create_run("20260101-000000-dum2", "0.1.0", record, {"hostname": "box"})
for cell in cells:
    for k in range(3):
        store.save_trial(Trial(run_id="20260101-000000-dum2", cell_index=cell.index, repetition=k, phase="measured",
                               started=1.0 + k, elapsed_s=1.0, ok=True, metrics={"tps": 100.0 + k + cell.index}))
view = next(v for v in build_views(store.load("20260101-000000-dum2")) if v.name == "dummy-load")
assert view.kind == "other" and not view.commits
assert "safety" not in [name for name, _ in charts_for(store.load("20260101-000000-dum2"), view)]
print("dummies seen everywhere")
'''


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source tree and the contract tests, copied, with the dummies added in the files the guide names."""
    root = tmp_path_factory.mktemp("extending")
    shutil.copytree(ROOT / "src" / "pickfs", root / "src" / "pickfs",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for rel in ("tests/__init__.py", "tests/conftest.py", "tests/unit/__init__.py", "tests/unit/test_databases.py",
                "tests/unit/test_workload_contract.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, root / rel)
    src = root / "src" / "pickfs"
    (src / "databases" / "dummydb.py").write_text(DATABASE)
    (src / "services" / "dummydb.py").write_text(SERVICE)
    (src / "workloads" / "dummy_load.py").write_text(WORKLOAD)
    edit_as_guided(src / "databases" / "__init__.py", "from pickfs.databases import ", "dummydb, ")
    edit_as_guided(src / "databases" / "__init__.py", "DATABASES: dict[str, Database] = {db.name: db for db in (",
                   "dummydb.DATABASE, ")
    edit_as_guided(src / "workloads" / "__init__.py", "from pickfs.workloads.base import Workload\n",
                   "from pickfs.workloads.dummy_load import DummyLoad\n")
    edit_as_guided(src / "workloads" / "__init__.py", "REGISTRY: dict[str, type[Workload]] = {cls.name: cls for cls in (",
                   "DummyLoad, ")
    return root


def _changed(copy: Path) -> set[str]:
    """The files of the copy that differ from the source tree, or are new."""
    out = set()
    for path in (copy / "src" / "pickfs").rglob("*.py"):
        rel = path.relative_to(copy).as_posix()
        if not (ROOT / rel).exists() or (ROOT / rel).read_bytes() != path.read_bytes():
            out.add(rel)
    return out


def test_the_dummies_touch_exactly_the_files_the_guide_names(copy: Path) -> None:
    named = {p.replace("<name>", "dummydb").replace("<service>", "dummydb").replace("<workload>", "dummy_load")
             for section in ("A database", "A workload") for p in guide_names(section)}
    assert _changed(copy) == named


def _env(copy: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(copy / "src"), "PYTHONDONTWRITEBYTECODE": "1"}


def test_registries_plan_parser_crash_test_and_charts_see_the_dummies(copy: Path, tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", CHECKS, str(copy / "src"), str(tmp_path / "plan.toml"),
                          str(tmp_path / "results.db")], capture_output=True, text=True, env=_env(copy), cwd=copy)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "dummies seen everywhere"


def test_the_contract_tests_cover_the_dummies(copy: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(copy),
                          "tests/unit/test_databases.py", "tests/unit/test_workload_contract.py", "-k",
                          "dummy or switch or registry or resolves"],
                         capture_output=True, text=True, env=_env(copy), cwd=copy)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert re.search(r"\b\d+ passed", out.stdout), out.stdout
    collected = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
                                "--rootdir", str(copy), "tests/unit/test_databases.py",
                                "tests/unit/test_workload_contract.py", "-k", "dummy"],
                               capture_output=True, text=True, env=_env(copy), cwd=copy).stdout
    assert "test_every_database_provides_the_whole_contract[dummydb]" in collected
    assert "test_registered_workload_keeps_the_contract[dummy-load]" in collected
    assert "test_parse_refuses_output_that_is_not_its_own[dummy-load]" in collected
