"""Ctrl-C at several points leaves nothing mounted or attached and keeps finished trials."""

import signal
import sqlite3
import time

import pytest

from tests.conftest import ledger_entries, loops_under, measured_trials, mounts_under, needs_root, pickfs, start_pickfs

pytestmark = needs_root
RUN = ("run", "--fs", "ext4,xfs", "--one-at-a-time", "--runs", "2", "--warmup", "1", "--duration", "2s", "--size", "1G")


def wait_for(predicate, timeout=60.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def has_kind(workdir, kind):
    return lambda: any(e["kind"] == kind for e in ledger_entries(workdir))


def run_status(workdir, run_id):
    conn = sqlite3.connect(workdir / "results.db")
    try:
        return conn.execute("SELECT status FROM runs WHERE id=?", (run_id,)).fetchone()[0]
    finally:
        conn.close()


def assert_clean(workdir):
    assert mounts_under(workdir) == []
    assert loops_under(workdir) == []
    assert ledger_entries(workdir) == []


@pytest.mark.parametrize("point", ["loop attached", "mounted", "after a measured trial", "at 4.5 s"])
def test_ctrl_c_leaves_nothing_behind(workdir, point):
    proc = start_pickfs(workdir, *RUN)
    try:
        if point == "loop attached":
            assert wait_for(has_kind(workdir, "loop"))
        elif point == "mounted":
            assert wait_for(has_kind(workdir, "mount"))
            time.sleep(0.3)
        elif point == "after a measured trial":
            assert wait_for(lambda: len(measured_trials(workdir)) >= 1)
        else:
            time.sleep(4.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert_clean(workdir)
    if point == "after a measured trial":
        kept = measured_trials(workdir)
        assert len(kept) >= 1
        run_id = kept[0][0]
        assert run_status(workdir, run_id) == "interrupted"
        assert f"pickfs run --resume {run_id}" in err
        # resume finishes the plan and keeps what was measured before
        r = pickfs(workdir, "run", "--resume", run_id)
        assert r.returncode == 0, r.stderr
        after = measured_trials(workdir)
        assert kept[0] in after
        assert sorted((c, rep) for _, c, rep, _ in after) == [(0, 0), (0, 1), (1, 0), (1, 1)]
        assert run_status(workdir, run_id) == "complete"
        assert_clean(workdir)


def test_kill_9_then_cleanup(workdir):
    proc = start_pickfs(workdir, *RUN)
    assert wait_for(has_kind(workdir, "mount"))
    assert wait_for(lambda: bool(mounts_under(workdir)))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert mounts_under(workdir) and loops_under(workdir)  # left behind: that is what kill -9 does
    r = pickfs(workdir, "cleanup")
    assert r.returncode == 0, r.stderr
    assert "undid" in r.stderr
    assert_clean(workdir)
    assert pickfs(workdir, "cleanup").stderr.startswith("nothing to clean up")


def test_a_new_run_undoes_what_a_killed_one_left(workdir):
    proc = start_pickfs(workdir, *RUN)
    assert wait_for(lambda: bool(mounts_under(workdir)))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    r = pickfs(workdir, "run", "--fs", "tmpfs", "--runs", "1", "--warmup", "0", "--duration", "1s")
    assert r.returncode == 0, r.stderr
    assert "left by an earlier pickfs" in r.stderr
    assert_clean(workdir)


@pytest.mark.parametrize("delay", [0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2])
def test_ctrl_c_as_a_run_finishes(workdir, delay):
    """SIGINT at a delay after a short real run said it was saved (while Python renders and shuts down): either the
    completed result (0) or interrupted (130), never a traceback nor death by the signal (-2)."""
    proc = start_pickfs(workdir, "run", "--fs", "ext4", "--workload", "command", "--set", "command='true'",
                        "--one-at-a-time", "--runs", "1", "--warmup", "0", "--size", "256M")
    try:
        said = []
        for line in proc.stderr:
            said.append(line)
            if line.startswith("saved as run"):
                break
        assert said and said[-1].startswith("saved as run"), "".join(said)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in (0, 130), err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert_clean(workdir)
