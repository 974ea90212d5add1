"""Fixed-rate (open-loop) runs side by side on two real filesystems, for SQLite and PostgreSQL, and a short
capacity search; nothing of the run may be left running or mounted."""

import json
import sqlite3
from pathlib import Path

from tests.conftest import needs_root, pickfs
from tests.integration.test_side_by_side import processes_under

pytestmark = needs_root

SHORT = ("--fs", "ext4,xfs", "--blocks", "1", "--rounds", "3", "--warmup", "0", "--size", "1G", "--slice", "1s")


def fixed_rate_trials(workdir: Path, phase: str = "measured") -> list[tuple[int, dict, dict]]:
    conn = sqlite3.connect(workdir / "results.db")
    try:
        rows = conn.execute("SELECT cell_index, metrics_json, raw_output FROM trials WHERE ok=1 AND phase=?",
                            (phase,)).fetchall()
    finally:
        conn.close()
    return [(c, json.loads(m), json.loads(raw)) for c, m, raw in rows]


def check_fixed_rate(workdir: Path, rate: float, seconds: float, stdout: str) -> None:
    rows = fixed_rate_trials(workdir)
    assert {c for c, _, _ in rows} == {0, 1} and len(rows) == 6
    for _, metrics, doc in rows:
        block = doc["fixed_rate"]
        assert block["offered"] == rate and block["arrivals"] == "poisson"
        # every transaction due is accounted for, and about rate x slice were due
        assert block["due"] == block["done"] + block["skipped"] + block["unfinished"] + block["failed"]
        assert 0.4 * rate * seconds <= block["due"] <= 2.0 * rate * seconds
        assert metrics["offered_rate"] == rate
        assert metrics["sched_p99"] >= metrics["sched_p50"] > 0
    assert "at a fixed rate: latency from each transaction's scheduled start" in stdout
    assert processes_under(workdir) == []


def test_sqlite_at_a_fixed_rate_on_two_filesystems(workdir):
    r = pickfs(workdir, "run", "--workload", "sqlite-tpcb", "--rate", "50/s", *SHORT)
    assert r.returncode == 0, r.stderr
    check_fixed_rate(workdir, 50.0, 1.0, r.stdout)
    assert "the client on tmpfs: at most" in r.stdout  # its own ceiling, measured in memory and said


def test_postgresql_at_a_fixed_rate_on_two_filesystems(workdir):
    r = pickfs(workdir, "run", "--workload", "tpcc", "--set", "backend=postgresql", "--set", "scale_down=20",
               "--rate", "20/s", *SHORT)
    assert r.returncode == 0, r.stderr
    check_fixed_rate(workdir, 20.0, 1.0, r.stdout)
    assert "needs a database server" in r.stdout  # no ceiling in memory without a server there: said so


def test_a_short_capacity_search_on_two_filesystems(workdir):
    r = pickfs(workdir, "run", "--workload", "sqlite-tpcb", "--latency-target", "p99<=2s", "--rate", "20/s",
               "--max-time", "25s", *SHORT)
    assert r.returncode == 0, r.stderr
    steps = fixed_rate_trials(workdir, "capacity")
    assert {c for c, _, _ in steps} == {0, 1}
    assert {doc["fixed_rate"]["offered"] for _, _, doc in steps} >= {20.0, 40.0}  # p99 <= 2 s at 20/s: doubled
    assert fixed_rate_trials(workdir) == []  # the search's slices are never mixed into the fixed-rate figures
    assert "the highest rate held with p99 <= 2 s" in r.stdout
    assert processes_under(workdir) == []
