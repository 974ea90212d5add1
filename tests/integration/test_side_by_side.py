"""Side by side on real filesystems: every workload sliced on two of them at once, servers held
still between their slices, whole runs alternated in rounds, and nothing left after Ctrl-C."""

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from pickfs.services.postgresql import PostgreSQL
from pickfs.stack.ledger import Ledger
from tests.conftest import ledger_entries, loops_under, mounts_under, needs_root, pickfs, start_pickfs

pytestmark = needs_root

# --accept-busy: every slice counts whatever else the machine runs (the mechanics are tested here, not the load)
ONE_BLOCK = ("--blocks", "1", "--rounds", "2", "--warmup", "0", "--size", "1G", "--accept-busy")
SLICED = {
    "sqlite-tpcb": (),
    "fileio": ("--set", "size=64M", "--set", "files=4"),
    "wal": ("--set", 'methods=["fdatasync", "o_dsync"]', "--set", 'block_sizes=["8K"]'),
    "pgbench": ("--set", "scale=1", "--set", "clients=2", "--set", "threads=1"),
    "sysbench-oltp": ("--set", "tables=2", "--set", "table_size=2000", "--set", "threads=2"),
    "tpcc": ("--set", "backend=postgresql", "--set", "scale_down=20"),
    "firebird-tpcb": (),
}


def processes_under(workdir: Path) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(workdir) in line and "pytest" not in line
            and "-m pickfs" not in line]


def trials(workdir: Path) -> list[tuple]:
    conn = sqlite3.connect(workdir / "results.db")
    try:
        return conn.execute("SELECT cell_index, phase, block, round, metrics_json, started FROM trials"
                            " WHERE ok=1 ORDER BY id").fetchall()
    finally:
        conn.close()


def wait_for_slices(workdir: Path, count: int, timeout: float = 240) -> None:
    """Until `count` slices measured in rounds are saved."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            saved = trials(workdir) if (workdir / "results.db").exists() else []
        except sqlite3.OperationalError:  # pickfs is still creating its tables
            saved = []
        if len([t for t in saved if t[1] == "measured" and t[3] is not None]) >= count:
            return
        time.sleep(0.2)
    pytest.fail(f"fewer than {count} slices measured in {timeout:.0f} s")


@pytest.mark.parametrize("workload", list(SLICED))
def test_each_sliceable_workload_runs_side_by_side_on_two_filesystems(workdir, workload):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4,xfs", "--workload", workload, *SLICED[workload], *ONE_BLOCK,
               "--json", str(out))
    assert r.returncode == 0, r.stderr
    cells = {c["config"]: c for c in json.loads(out.read_text())["cells"]}
    for fs in ("ext4", "xfs"):
        assert cells[fs]["status"] == "ok", cells[fs]["notes"]
        assert cells[fs]["method"].startswith("side by side: 2 slices"), cells[fs]["method"]
        assert len(cells[fs]["values"]) == 2 and min(cells[fs]["values"]) > 0
    assert cells["xfs"]["comparison"]["n"] == 2 and cells["xfs"]["comparison"]["ci_low"] > 0
    rows = trials(workdir)
    measured = [t for t in rows if t[1] == "measured"]
    # both filesystems stood at once: every slice of a round falls between the first and last prepare
    assert {t[3] for t in measured} == {0, 1} and {t[2] for t in measured} == {0}
    prepares = [t for t in rows if t[1] == "prepare"]
    assert len(prepares) == 2 and max(p[5] for p in prepares) < min(t[5] for t in measured)
    for t in measured:
        metrics = json.loads(t[4])
        assert metrics["syncfs_s"] >= 0 and metrics["slice_s"] > 0
        assert "idle_neighbours_wrote_bytes" in metrics
    assert "resolution: under" in r.stdout  # the default view: the resolution in one line
    explained = pickfs(workdir, "report", "latest", "--explain").stdout  # the method, in full
    assert "measured side by side" in explained and "resolution: differences under" in explained
    assert processes_under(workdir) == [] and ledger_entries(workdir) == []


def test_whole_runs_alternate_in_rounds_when_a_workload_cannot_be_sliced(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4,xfs", "--workload", "command", "--set",
               'command="dd if=/dev/zero of=f bs=64k count=64 oflag=dsync"', "--runs", "3", "--warmup", "0",
               "--size", "1G", "--json", str(out))
    assert r.returncode == 0, r.stderr
    cells = {c["config"]: c for c in json.loads(out.read_text())["cells"]}
    assert cells["xfs"]["method"] == "whole runs alternated in rounds: 3 runs"
    measured = [t for t in trials(workdir) if t[1] == "measured"]
    assert sorted(t[3] for t in measured) == [0, 0, 1, 1, 2, 2]
    assert cells["xfs"]["comparison"]["n"] == 3


def test_one_at_a_time_is_still_there(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4,xfs", "--one-at-a-time", "--runs", "2", "--warmup", "0",
               "--duration", "1s", "--size", "1G", "--json", str(out))
    assert r.returncode == 0, r.stderr
    cells = {c["config"]: c for c in json.loads(out.read_text())["cells"]}
    assert cells["xfs"]["method"] == "one at a time: 2 runs"
    assert all(t[3] is None for t in trials(workdir) if t[1] == "measured")


@pytest.mark.skipif(PostgreSQL.unavailable_reason() is not None and not os.environ.get("CI"),
                    reason=str(PostgreSQL.unavailable_reason()))
def test_a_server_is_held_still_outside_its_slices(workdir):
    from pickfs.services.freeze import Freezer, main_pid
    from pickfs.stack.processes import descendants, parent_pids

    datadir = workdir / "data"
    datadir.mkdir()
    os.chmod(workdir, 0o711)
    with PostgreSQL.start(datadir, {}, Ledger(workdir / "ledger"), workdir / "run") as endpoint:
        freezer = Freezer(endpoint.pidfile)
        tree = descendants(main_pid(endpoint.pidfile), parent_pids())
        assert len(tree) >= 4  # postmaster, checkpointer, background writer, walwriter, ...

        def states() -> set[str]:
            return {Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] for p in tree
                    if Path(f"/proc/{p}").exists()}
        freezer.freeze()
        try:  # SIGSTOP lands when a process next leaves the kernel: one in disk sleep (D) stops a moment later
            deadline = time.monotonic() + 5
            while states() != {"T"} and time.monotonic() < deadline:
                time.sleep(0.05)
            assert states() == {"T"}
        finally:
            freezer.thaw()
        deadline = time.monotonic() + 5
        while "T" in states() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "T" not in states()
    assert not Path(endpoint.pidfile).exists()


@pytest.mark.parametrize("workload", ["sqlite-tpcb", "pgbench"])
def test_ctrl_c_in_the_middle_of_a_round_leaves_nothing(workdir, workload):
    proc = start_pickfs(workdir, "run", "--fs", "ext4,xfs,btrfs", "--workload", workload, *SLICED[workload],
                        "--blocks", "2", "--max-time", "60s", "--warmup", "0", "--size", "1G")
    try:
        wait_for_slices(workdir, 4)
        time.sleep(0.4)  # somewhere inside the next slice, or between two
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "continue with: pickfs run --resume" in err
    assert mounts_under(workdir) == [] and loops_under(workdir) == [] and ledger_entries(workdir) == []
    assert processes_under(workdir) == []
    # nothing measured is lost: the run is marked interrupted and keeps its slices
    conn = sqlite3.connect(workdir / "results.db")
    try:
        [(status,)] = conn.execute("SELECT status FROM runs").fetchall()
    finally:
        conn.close()
    assert status == "interrupted"
    kept = [t for t in trials(workdir) if t[1] == "measured"]
    assert len(kept) >= 4
    if workload != "sqlite-tpcb":
        return
    # resume: the slices kept stay; new blocks stand up and number their rounds on
    run_id = err.split("pickfs run --resume ")[1].split()[0]
    r = pickfs(workdir, "run", "--resume", run_id)
    assert r.returncode == 0, r.stderr
    after = [t for t in trials(workdir) if t[1] == "measured"]
    assert all(t in after for t in kept) and len(after) > len(kept)
    new = [t for t in after if t not in kept]
    assert min(t[2] for t in new) > max(t[2] for t in kept)  # fresh blocks
    assert min(t[3] for t in new) > max(t[3] for t in kept)  # later rounds
    assert mounts_under(workdir) == [] and loops_under(workdir) == [] and ledger_entries(workdir) == []


def test_kill_9_with_servers_held_still_then_cleanup_leaves_nothing(workdir):
    proc = start_pickfs(workdir, "run", "--fs", "ext4,xfs", "--workload", "pgbench", *SLICED["pgbench"],
                        "--blocks", "1", "--rounds", "50", "--warmup", "0", "--size", "1G")
    try:
        wait_for_slices(workdir, 3)
        # at least one server is held still right now (the other one, or both between slices)
        assert any(line.split(None, 2)[1].startswith("T") for line in processes_under(workdir) if "postgres" in line)
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    r = pickfs(workdir, "cleanup")
    assert r.returncode == 0, r.stderr
    assert processes_under(workdir) == []
    assert mounts_under(workdir) == [] and loops_under(workdir) == [] and ledger_entries(workdir) == []
