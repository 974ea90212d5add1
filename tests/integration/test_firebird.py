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
