"""PostgreSQL started by pickfs on a loop-mounted filesystem: runs, fails cleanly, always stops."""

import json
import signal
import subprocess
import time

import pytest

from pickfs.services.postgresql import PostgreSQL
from tests.conftest import ledger_entries, loops_under, mounts_under, needs_root, pickfs, start_pickfs

pytestmark = [needs_root, pytest.mark.skipif(PostgreSQL.unavailable_reason() is not None,
                                             reason=str(PostgreSQL.unavailable_reason()))]
SMALL = ("--set", "scale=1", "--set", "clients=2", "--set", "threads=1")


def postgres_under(workdir) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "postgres" in line and str(workdir) in line]


def assert_clean(workdir):
    assert postgres_under(workdir) == []
    assert mounts_under(workdir) == [] and loops_under(workdir) == []
    assert ledger_entries(workdir) == []


def test_pgbench_on_a_private_server(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4,ext4-nobarrier", "--workload", "pgbench", *SMALL, "--duration", "3s",
               "--blocks", "1", "--runs", "1", "--warmup", "0", "--size", "1G", "--json", str(out))
    assert r.returncode == 0, r.stderr
    cells = {c["config"]: c for c in json.loads(out.read_text())["cells"]}
    for cell in cells.values():
        assert cell["status"] == "ok", cell["notes"]
        assert cell["values"][0] > 0 and cell["metrics"]["lat_p99"]["values"][0] > 0
        assert cell["metrics"]["failed"]["values"] == [0.0]
    # every commit flushes the device on ext4; with nobarrier no flush reaches it
    assert cells["ext4"]["monitors"]["disk_flushes"] > 0
    assert cells["ext4-nobarrier"]["monitors"]["disk_flushes"] == 0
    assert_clean(workdir)


def test_a_server_that_cannot_start_says_why_and_leaves_nothing(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4", "--workload", "pgbench", *SMALL, "--set", "shared_buffers=1",
               "--duration", "2s", "--blocks", "1", "--runs", "1", "--warmup", "0", "--size", "1G", "--json", str(out))
    # the cell fails; the run goes on, and, with no configuration giving a result, ends failed (exit 1)
    assert r.returncode == 1 and "no configuration gave a result" in r.stderr, r.stderr
    [cell] = json.loads(out.read_text())["cells"]
    assert cell["status"] == "failed"
    assert "PostgreSQL did not start" in cell["notes"][0] and "shared_buffers" in cell["notes"][0]
    assert_clean(workdir)


@pytest.mark.parametrize("how", ["ctrl-c", "kill -9"])
def test_interrupted_runs_stop_the_server(workdir, how):
    proc = start_pickfs(workdir, "run", "--fs", "ext4", "--workload", "pgbench", *SMALL, "--duration", "20s",
                        "--blocks", "1", "--runs", "1", "--warmup", "0", "--size", "1G")
    t0 = time.monotonic()
    while not postgres_under(workdir) and time.monotonic() - t0 < 60:
        time.sleep(0.2)
    assert postgres_under(workdir), "the server never started"
    time.sleep(1)
    if how == "ctrl-c":
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
        assert proc.returncode == 130
    else:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert postgres_under(workdir)  # left running by kill -9
        r = pickfs(workdir, "cleanup")
        assert r.returncode == 0, r.stderr
    assert_clean(workdir)
