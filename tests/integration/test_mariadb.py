"""MariaDB started by pickfs on a loop-mounted filesystem, with sysbench: runs, fails cleanly, always stops."""

import json
import signal
import subprocess
import time

import pytest

from pickfs.workloads.sysbench_oltp import SysbenchOltp
from tests.conftest import ledger_entries, loops_under, mounts_under, needs_root, pickfs, start_pickfs

pytestmark = [needs_root, pytest.mark.skipif(SysbenchOltp.unavailable_reason() is not None,
                                             reason=str(SysbenchOltp.unavailable_reason()))]
SMALL = ("--workload", "sysbench-oltp", "--set", "tables=2", "--set", "table_size=2000", "--set", "threads=2")


def servers_under(workdir) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "mariadbd" in line and str(workdir) in line]


def assert_clean(workdir):
    assert servers_under(workdir) == []
    assert mounts_under(workdir) == [] and loops_under(workdir) == []
    assert ledger_entries(workdir) == []


def test_sysbench_on_a_private_server(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4,ext4-nobarrier", *SMALL, "--duration", "2s", "--blocks", "1", "--runs", "1",
               "--warmup", "0", "--size", "1G", "--json", str(out))
    assert r.returncode == 0, r.stderr
    cells = {c["config"]: c for c in json.loads(out.read_text())["cells"]}
    for cell in cells.values():
        assert cell["status"] == "ok", cell["notes"]
        assert cell["values"][0] > 0 and cell["metrics"]["qps"]["values"][0] > cell["values"][0]
        assert cell["metrics"]["lat_p99"]["values"][0] > 0
    assert cells["ext4"]["monitors"]["disk_flushes"] > 0
    assert cells["ext4-nobarrier"]["monitors"]["disk_flushes"] == 0
    assert_clean(workdir)


def test_a_server_that_cannot_start_says_why_and_leaves_nothing(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4", *SMALL, "--set", "innodb_buffer_pool_size=999999999T", "--duration", "2s",
               "--blocks", "1", "--runs", "1", "--warmup", "0", "--size", "1G", "--json", str(out))
    assert r.returncode == 1 and "no configuration gave a result" in r.stderr, r.stderr  # its only one failed
    [cell] = json.loads(out.read_text())["cells"]
    assert cell["status"] == "failed" and "MariaDB did not start" in cell["notes"][0], cell["notes"]
    assert_clean(workdir)


def test_ctrl_c_stops_the_server(workdir):
    proc = start_pickfs(workdir, "run", "--fs", "ext4", *SMALL, "--duration", "20s", "--blocks", "1", "--runs", "1", "--warmup",
                        "0", "--size", "1G")
    t0 = time.monotonic()
    while not servers_under(workdir) and time.monotonic() - t0 < 60:
        time.sleep(0.2)
    assert servers_under(workdir), "the server never started"
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=180)
    assert proc.returncode == 130
    assert_clean(workdir)
