"""Every way a run or a fleet ends leaves a final status: never 'running' after an error, a Ctrl-C or a kill -9
(then `pickfs cleanup`), 'failed' with a non-zero exit when no configuration gave a result, and one pickfs per run."""

import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.conftest import measured_trials, needs_root, pickfs, start_pickfs

pytestmark = needs_root

PLAN = """
fs = ["ext4"]
[target]
size = "384M"
[[workload]]
name = "sqlite-tpcb"
[method]
blocks = 1
rounds = 2
warmup = 0
"""


def rows(db: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def descendants_cmdlines(pid: int) -> list[str]:
    kids: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(p.name))
    out, todo = [], [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            todo.append(child)
            try:
                out.append(Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                pass
    return out


def test_ctrl_c_during_the_fleets_wheel_build_ends_the_fleet_interrupted(workdir, tmp_path):
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("h1 ansible_host=127.0.0.1\n")
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    proc = start_pickfs(workdir, "fleet", "run", "-i", str(inventory), "--plan", str(plan))
    try:
        deadline = time.monotonic() + 120
        while not any(" pip " in c and " wheel " in c for c in descendants_cmdlines(proc.pid)):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert rows(workdir / "results.db", "SELECT status FROM fleets") == [("interrupted",)]


def test_a_run_where_every_configuration_fails_exits_1_and_is_failed(workdir):
    r = pickfs(workdir, "run", "--fs", "ext4", "--workload", "command", "--set", "command=exit 1",
               "--one-at-a-time", "--runs", "1", "--warmup", "0", "--size", "256M", timeout=300)
    assert r.returncode == 1, r.stderr
    assert "no configuration gave a result" in r.stderr
    assert "Traceback" not in r.stderr
    assert [s for (s,) in rows(workdir / "results.db", "SELECT status FROM runs")] == ["failed"]


def test_a_live_run_cannot_be_resumed_and_cleanup_marks_a_killed_one_interrupted(workdir):
    proc = start_pickfs(workdir, "run", "--fs", "ext4", "--one-at-a-time", "--runs", "30", "--warmup", "0",
                        "--duration", "1s", "--size", "512M")
    try:
        deadline = time.monotonic() + 120
        while not measured_trials(workdir):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        run_id = measured_trials(workdir)[0][0]
        second = pickfs(workdir, "run", "--resume", run_id, timeout=120)
        assert second.returncode == 2, second.stderr
        assert f"run {run_id} is running in another pickfs" in second.stderr
        assert len(second.stderr.strip().splitlines()) <= 2  # the error and its hint
        # the live run is not marked interrupted by a cleanup meanwhile
        assert "marked interrupted" not in pickfs(workdir, "cleanup", timeout=120).stderr
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rows(workdir / "results.db", "SELECT status FROM runs") == [("running",)]
    r = pickfs(workdir, "cleanup", timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"run {run_id} marked interrupted" in r.stderr
    assert rows(workdir / "results.db", "SELECT status FROM runs") == [("interrupted",)]
    # duplicates are impossible: each (cell, repetition) measured once
    kept = [(c, rep) for _, c, rep, _ in measured_trials(workdir)]
    assert len(kept) == len(set(kept))


def test_no_room_for_a_later_block_keeps_every_configuration(workdir):
    """A small host filesystem: the first block of both configurations fits, the second does not. Both are
    measured on the block standing; before, the second block's room check failed them both for good."""
    small = workdir / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1300M,mode=0711", "tmpfs", str(small)], check=True)
    try:
        r = pickfs(workdir, "run", "--workdir", str(small / "w"), "--fs", "ext4,ext2", "--blocks", "3", "--rounds",
                   "3", "--slice", "1s", "--warmup", "0", "--size", "512M", timeout=600)
        assert r.returncode == 0, r.stderr
        assert "no room for block 2" in r.stderr
        db = small / "w" / "results.db"
        assert rows(db, "SELECT status FROM runs") == [("complete",)]
        assert rows(db, "SELECT cell_index, count(*) FROM trials WHERE phase='measured' AND ok=1 GROUP BY cell_index"
                        " ORDER BY cell_index") == [(0, 3), (1, 3)]
        assert rows(db, "SELECT count(*) FROM trials WHERE ok=0") == [(0,)]
    finally:
        subprocess.run(["umount", "-l", str(small)])
