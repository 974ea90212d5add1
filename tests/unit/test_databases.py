"""The databases' room: every registered database provides the adapter's whole contract, and the code that
names a backend resolves it through the registry instead of switching on its name."""

import argparse
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pickfs import databases
from pickfs.databases.base import Database, Dialect, Driver, TornPage, WriteBack
from pickfs.errors import PlanError
from pickfs.model import WorkloadSpec
from pickfs.workloads import REGISTRY as WORKLOADS

SRC = Path(__file__).resolve().parents[2] / "src" / "pickfs"
ABSTRACT = sorted(Database.__abstractmethods__)


def spec(**settings) -> WorkloadSpec:
    return WorkloadSpec("tpcc", "x", tuple(sorted(settings.items())))


@pytest.mark.parametrize("name", databases.names())
def test_every_database_provides_the_whole_contract(name):
    db = databases.get(name)
    assert isinstance(db, Database) and db.name == name
    for method in ABSTRACT:  # each implements what the base leaves abstract, in its own class chain
        assert getattr(type(db), method) is not getattr(Database, method), f"{name} lacks {method}"
    assert isinstance(db.dialect, Dialect) and db.dialect.placeholder in ("?", "%s")
    assert db.database in databases.names() and databases.get(db.database).database == db.database
    assert db.driver is None or isinstance(db.driver, Driver)
    assert db.service is None or db.service in _services()
    assert all(isinstance(t, TornPage) and t.unsafe for t in db.torn_page_settings)
    assert (db.page_bytes is not None) == bool(db.torn_page_settings)
    assert isinstance(db.risks(spec()), list)
    assert all(isinstance(s, str) for s in db.server_settings())
    assert set(db.server_settings()) <= set(db.setting_shapes), "every server setting has its shape"
    args = argparse.Namespace(journal_mode="WAL", synchronous="FULL")
    assert isinstance(db.write_back(args, 0.5), WriteBack)
    facts = db.installed_settings({})
    assert all(k.startswith("db.") and isinstance(v, str) for k, v in facts.items())
    assert db.name != db.database or db.packages  # a fingerprint lists each database's installed packages
    reason = db.unavailable_reason()
    assert reason is None or isinstance(reason, str)


def _services() -> set[str]:
    from pickfs.services import REGISTRY

    return set(REGISTRY)


def test_the_registry_refuses_an_unknown_database():
    with pytest.raises(PlanError, match="unknown database 'oracle'"):
        databases.get("oracle")
    assert databases.known(None) is None and databases.known("command") is None


def test_each_durability_risk_is_the_databases_own():
    assert databases.get("sqlite").risks(spec(synchronous="OFF", journal_mode="WAL"))[0].startswith("synchronous=OFF")
    assert databases.get("postgresql").risks(spec(fsync="off"))[0].startswith("fsync=off")
    assert databases.get("mariadb").risks(spec(innodb_flush_log_at_trx_commit="2"))[0].startswith(
        "innodb_flush_log_at_trx_commit=2")
    assert databases.get("firebird").risks(spec(forced_writes="off"))[0].startswith("forced_writes=off")
    assert databases.get("firebird").risks(spec(forced_writes="on")) == []
    assert databases.get("postgresql").risks(spec(fsync="off", synchronous_commit="off", full_page_writes="off")) \
        and databases.get("sqlite").risks(spec(fsync="off")) == []  # another database's setting is not its risk


def test_every_workload_that_names_a_backend_resolves_it_through_the_registry():
    for cls in WORKLOADS.values():
        if "backend" not in cls.defaults:
            continue
        for name in databases.names():
            if cls.name == "firebird-tpcb" and name != "firebird":
                continue  # firebird-tpcb's backend is fixed
            s = WorkloadSpec(cls.name, "x", tuple(sorted(cls.normalize({"backend": name, "clients": 1}).items())))
            db = databases.get(name)
            assert cls.database_for(s) == db.database and cls.service_for(s) == db.service
            assert cls.raw_ok(s) == db.raw_ok
    for cls in WORKLOADS.values():  # a workload with a fixed database names a registered one
        if cls.database is not None:
            assert cls.database in databases.names()


# a switch on a backend's name: `backend == "x"`, `backend in ("x", ...)`, `out["backend"] != "x"` (the
# user's own program, backend "command", is no database)
SWITCH = re.compile(r"""backend["'\]]*\s*((==|!=)\s*["'](?!command["'])|(not in|in)\s*[(\[{]\s*["'])""")
NAMES = "|".join(re.escape(n) for n in databases.names())
NAME_TEST = re.compile(rf"""(==|!=)\s*["']({NAMES})["']|["']({NAMES})["']\s*(==|!=)""")


def test_no_switch_on_a_backend_name_outside_databases():
    """Adding a database is one module in databases/: no other code may switch on the names."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(("databases/", "suites/")):  # the room itself; the user's own test suite
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if SWITCH.search(line) or NAME_TEST.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert found == []


def test_the_switch_finder_finds_switches():
    for line in ('if backend == "sqlite":', 'if args.backend in ("sqlite", "firebird"):', 'x = out["backend"] != "f"',
                 'if kind == "mariadb"', 'return "firebird" == b'):
        assert SWITCH.search(line) or NAME_TEST.search(line), line
    for line in ("db = databases.get(args.backend)", 'name = "sqlite"', "if backend not in (*BACKENDS, PROGRAM):",
                 'x = "yours" if self.backend == "command" else "db"'):
        assert not SWITCH.search(line) and not NAME_TEST.search(line), line


def test_a_client_process_imports_no_driver_and_no_engine():
    """Clients start cheaply: importing them loads the adapters, not a driver, a service or the engine."""
    code = ("import sys, pickfs.clients.tpcb, pickfs.clients.tpcc, pickfs.clients.commits; "
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('psycopg', 'pymysql', 'firebird', 'sqlite3') or m.startswith(('pickfs.services', 'pickfs.engine', "
            "'pickfs.workloads', 'pickfs.stack')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_the_contract_is_documented():
    for method in ABSTRACT:
        assert inspect.getdoc(getattr(Database, method)), method


def test_innodb_names_the_loss_of_a_table_whose_torn_first_page_recovery_left_unmended():
    problem = ("database: OperationalError: (1877, 'Table `sbtest`.`pickfs_commits` is corrupted. Please drop the "
               "table and recreate.')")
    said = databases.get("mariadb").crash_cause(problem, {})
    assert "first page" in said and "doublewrite" in said
    # without the doublewrite buffer a torn page is the setting's own risk, not this cause
    assert databases.get("mariadb").crash_cause(problem, {"innodb_doublewrite": "0"}) == ""
    assert databases.get("mariadb").crash_cause("accounts sum to 7 but the commits' deltas to 9", {}) == ""
    assert databases.get("postgresql").crash_cause("Tablespace is missing for a table", {}) == ""
