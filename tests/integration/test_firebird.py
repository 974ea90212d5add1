"""Firebird's embedded engine on a loop-mounted filesystem: forced writes as a durability dimension."""

import json
import textwrap

import pytest

from pickfs.workloads.firebird_tpcb import FirebirdTpcb
from tests.conftest import ledger_entries, mounts_under, needs_root, pickfs

pytestmark = [needs_root, pytest.mark.skipif(FirebirdTpcb.unavailable_reason() is not None,
                                             reason=str(FirebirdTpcb.unavailable_reason()))]


def test_forced_writes_on_and_off(workdir):
    plan = workdir / "fb.toml"
    plan.write_text(textwrap.dedent("""
        fs = ["ext4"]
        [target]
        size = "1G"
        [[workload]]
        name = "firebird-tpcb"
        label = "fw-on"
        duration = "2s"
        [[workload]]
        name = "firebird-tpcb"
        label = "fw-off"
        forced_writes = "off"
        duration = "2s"
        [[workload]]
        name = "tpcc"
        label = "fb-tpcc"
        backend = "firebird"
        clients = 1
        scale_down = 20
        duration = "2s"
    """))
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--plan", str(plan), "--blocks", "1", "--runs", "1", "--warmup", "0", "--json", str(out))
    assert r.returncode == 0, r.stderr
    cells = {c["workload"]: c for c in json.loads(out.read_text())["cells"]}
    on, off, tpcc = cells["fw-on"], cells["fw-off"], cells["fb-tpcc"]
    for cell in (on, off, tpcc):
        assert cell["status"] == "ok", cell["notes"]
        assert cell["values"][0] > 0
    # checked, not assumed: the mode in force, and what it does to the device
    assert on["metrics"]["forced_writes_in_force"]["values"] == [1.0]
    assert off["metrics"]["forced_writes_in_force"]["values"] == [0.0]
    assert on["monitors"]["disk_flushes"] > 10 * max(1, off["monitors"]["disk_flushes"])
    assert any(x.startswith("forced_writes=off") for x in off["risks"]) and on["risks"] == []
    assert mounts_under(workdir) == [] and ledger_entries(workdir) == []


def test_a_validation_that_stops_on_a_broken_page_is_damage_not_a_database_that_would_not_start(tmp_path):
    """A torn index page's sibling pointer past the file's end: the commits still read, gfix -v stops on it (as
    crash states with torn 8 KiB pages showed); the check says the database is damaged, with its commits present."""
    import struct
    import sys

    from pickfs.crash.runner import Commits
    from pickfs.databases.firebird import FIREBIRD_ROOT, fbclient, firebird_db
    from pickfs.proc import run as run_program

    datadir = tmp_path / "data"
    datadir.mkdir()
    commits = Commits("firebird", {})
    commits.load(datadir, None)
    env = {"FIREBIRD": FIREBIRD_ROOT, "FIREBIRD_LOCK": str(datadir / "fblock"), "FIREBIRD_TMP": str(datadir / "fblock")}
    db = firebird_db(datadir, "commits")
    run_program([sys.executable, "-m", "pickfs.clients.commits", "run", "--backend", "firebird", "--db", str(db),
                 "--fb-client", fbclient() or "", "--acks", str(tmp_path / "acks.log"), "--transactions", "300"],
                env=env)
    page = 8192
    data = db.read_bytes()
    btree = [i for i in range(len(data) // page) if data[i * page] == 7]  # page type 7: an index (b-tree) page
    with db.open("r+b") as fh:
        fh.seek(btree[-1] * page + 16)  # btr_sibling: the next page of the index's level
        fh.write(struct.pack("<I", 0x0FFFFFFF))
    opened, consistent, present, problem = commits.check(datadir, None, tmp_path, {}, 0)
    assert opened and consistent is False
    assert present == set(range(1, 301))
    assert "gfix -v" in problem and "validation stopped" in problem and "read" in problem
