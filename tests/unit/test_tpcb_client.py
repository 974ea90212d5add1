"""The one TPC-B client on SQLite (embedded, so it runs here): what sqlite-tpcb's parser reads, and the
transaction's own invariant afterwards (the accounts, tellers and branches each sum to the history's deltas)."""

import json
import sqlite3
import subprocess
import sys

import pytest

from pickfs import databases
from pickfs.clients.tpcb import ACCOUNTS_PER_BRANCH, TELLERS_PER_BRANCH, rows
from pickfs.errors import PlanError
from pickfs.workloads.sqlite_tpcb import SqliteTpcb


def client(*argv: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "pickfs.clients.tpcb", *argv], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def test_scale_means_branches_as_pgbench_has_it():
    tables = dict(rows(2))
    assert len(tables["pgbench_branches"]) == 2
    assert len(tables["pgbench_tellers"]) == 2 * TELLERS_PER_BRANCH
    assert len(tables["pgbench_accounts"]) == 2 * ACCOUNTS_PER_BRANCH
    assert tables["pgbench_accounts"][-1][1] == 2  # the last account belongs to the last branch


def test_sqlite_run_parses_and_keeps_the_invariant(tmp_path):
    db = str(tmp_path / "tpcb.db")
    common = ("--backend", "sqlite", "--db", db, "--scale", "1", "--synchronous", "NORMAL")
    loaded = client("load", *common)
    assert loaded["step"] == "load" and loaded["journal_mode"] == "WAL" and loaded["synchronous"] == 1
    doc = client("run", *common, "--transactions", "300", "--process-name", "pickfs-sqlite")
    assert doc["transactions"] == 300 and doc["errors"] == 0 and doc["failures"] == []
    assert doc["types"]["tpcb"]["count"] == 300 and "wchar" in doc["io"]
    m = SqliteTpcb.parse(json.dumps(doc))
    assert m["transactions"] == 300 and m["tps"] > 0 and m["lat_p50"] > 0 and "client_wchar" in m
    conn = sqlite3.connect(db)
    deltas, history = conn.execute("SELECT COALESCE(SUM(delta), 0), COUNT(*) FROM pgbench_history").fetchone()
    assert history == 300
    for table, column in (("pgbench_accounts", "abalance"), ("pgbench_tellers", "tbalance"),
                          ("pgbench_branches", "bbalance")):
        assert conn.execute(f"SELECT SUM({column}) FROM {table}").fetchone()[0] == deltas
    conn.close()


def test_a_database_that_cannot_commit_fails_the_run_instead_of_scoring_it(tmp_path):
    db = str(tmp_path / "tpcb.db")
    common = ("--backend", "sqlite", "--db", db, "--scale", "1")
    client("load", *common)
    with sqlite3.connect(db) as conn:  # every transaction now fails at its INSERT
        conn.execute("DROP TABLE pgbench_history")
    # a count of transactions, not a duration: without giving up, the client would retry for ever
    r = subprocess.run([sys.executable, "-m", "pickfs.clients.tpcb", "run", *common, "--transactions", "300"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1  # it says so in its exit status too
    doc = json.loads(r.stdout)
    assert doc["transactions"] == 0 and doc["errors"] >= 100
    assert doc["failures"] and "in a row failed" in doc["failures"][0] and "pgbench_history" in doc["failures"][0]
    try:
        SqliteTpcb.parse(json.dumps(doc))
    except ValueError as exc:
        assert "pgbench_history" in str(exc)
    else:
        raise AssertionError("a run whose every transaction failed was scored")


def test_a_page_size_is_set_when_the_database_is_made_and_reported_in_force(tmp_path):
    db = str(tmp_path / "tpcb.db")
    settings = SqliteTpcb.normalize({"page_size": "16384"})
    args = databases.get("sqlite").connection_args(tmp_path, None, settings, "tpcb")
    assert args[args.index("--page-size") + 1] == "16384" and args[args.index("--db") + 1] == db
    loaded = client("load", "--backend", "sqlite", "--scale", "1", *args)
    assert loaded["page_size"] == 16384 and loaded["journal_mode"] == "WAL"
    doc = client("run", "--backend", "sqlite", "--scale", "1", *args, "--transactions", "50")
    assert doc["page_size"] == 16384
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 16384
    conn.close()
    default = databases.get("sqlite").connection_args(tmp_path, None, SqliteTpcb.normalize({}), "tpcb")
    assert default[default.index("--page-size") + 1] == "4096"


@pytest.mark.parametrize("bad", ["1000", "131072", "big"])
def test_a_page_size_sqlite_would_ignore_is_refused(bad):
    with pytest.raises(PlanError, match="page_size"):
        SqliteTpcb.normalize({"page_size": bad})
