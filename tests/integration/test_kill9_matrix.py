"""kill -9 of pickfs at varied moments, then `pickfs cleanup`: nothing of that run is left, every finished slice is kept.

Each case kills pickfs at one moment (servers standing up, a slice with the other configuration's server
held stopped, teardown, a command with a daemon it started, a crash state's check), runs `pickfs
cleanup`, and asserts that nothing of THIS run is left (other runs live on the same machine): no mount,
loop device, ledger entry, process (stopped or not) working in its directory or in a group it recorded,
control group, /dev/shm segment of its servers, temporary file in its work directory; that the run is
marked interrupted; and that every slice saved before the kill is still there.
"""

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from pickfs.safepaths import MARKER
from tests.conftest import loops_under, measured_trials, mounts_under, needs_root, pickfs, start_pickfs

pytestmark = needs_root

SERVER_RUN = ("run", "--fs", "ext4,ext2", "--workload", "pgbench", "--set", "scale=1", "--blocks", "1",
              "--rounds", "4", "--slice", "1s", "--warmup", "1", "--size", "512M")
# what a run may keep in its work directory after cleanup: results, and the (empty) ledger and lock directories
# what a work directory keeps: results, ledger, lock files, empty directories, and the mark saying pickfs made it
KEPT_NAMES = {"results.db", "results.db-wal", "results.db-shm", "ledger", "locks", "images", "run", "data", "crash", "mnt",
              MARKER}


def ledger_entries(workdir: Path) -> list[dict]:
    """The ledger's entries now; one pickfs is removing them meanwhile."""
    out = []
    for path in (workdir / "ledger").glob("*.json"):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out


class Seen:
    """What the run recorded while it ran: groups, server pids, their /dev/shm segments (read before the kill)."""

    def __init__(self) -> None:
        self.groups: set[str] = set()
        self.pids: set[int] = set()
        self.shm: set[str] = set()

    def look(self, workdir: Path) -> None:
        for e in ledger_entries(workdir):
            f = e["fields"]
            if e["kind"] in ("tracked", "cgroup"):
                self.groups.add(f["path"])
        for group in list(self.groups):
            try:
                self.pids.update(int(p) for p in Path(group, "cgroup.procs").read_text().split())
            except OSError:
                continue
        for pid in list(self.pids):
            try:
                maps = Path(f"/proc/{pid}/maps").read_text()
            except OSError:
                continue
            self.shm.update(line.split()[-1] for line in maps.splitlines() if "/dev/shm/" in line)


def wait_for(predicate, seen: Seen, workdir: Path, timeout: float = 120.0) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        seen.look(workdir)
        if predicate():
            return True
        time.sleep(0.02)
    return False


def state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def processes_of(workdir: Path) -> list[str]:
    """Processes working in the work directory, naming it on their command line or in their environment (a
    process whose directory was lazily unmounted no longer shows it as its working directory)."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(Path(entry.path, "cwd"))
            env = Path(entry.path, "environ").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(workdir) in cmd or cwd.startswith(str(workdir)) or f"={workdir}" in env:
            out.append(f"{entry.name} [{state(int(entry.name))}] {cmd[:100]} (in {cwd})")
    return out


def run_rows(workdir: Path) -> list[tuple[str, str]]:
    """The runs recorded in the work directory's results file, read only (a test never makes the file itself)."""
    conn = sqlite3.connect(f"file:{workdir / 'results.db'}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute("SELECT id, status FROM runs").fetchall()
    finally:
        conn.close()


def kill_then_clean(proc, workdir: Path, seen: Seen) -> None:
    kept = measured_trials(workdir)
    seen.look(workdir)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.communicate(timeout=30)
    r = pickfs(workdir, "cleanup", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert mounts_under(workdir) == []
    assert loops_under(workdir) == []
    assert ledger_entries(workdir) == []
    assert processes_of(workdir) == []
    left = [p for p in seen.pids if state(p) and Path(f"/proc/{p}").exists() and state(p) != "Z"]
    assert left == [], [processes_of(workdir), left]
    assert [g for g in seen.groups if os.path.exists(g)] == []
    assert [s for s in seen.shm if os.path.exists(s)] == []
    assert set(kept) <= set(measured_trials(workdir))  # every slice saved before the kill is kept
    assert all(status != "running" for _, status in run_rows(workdir)), run_rows(workdir)
    assert {p.name for p in workdir.iterdir()} <= KEPT_NAMES
    for name in ("images", "run", "crash", "mnt"):
        if (workdir / name).is_dir():
            assert list((workdir / name).iterdir()) == [], name


def test_kill_9_while_servers_stand_up(workdir):
    seen = Seen()
    proc = start_pickfs(workdir, *SERVER_RUN)
    assert wait_for(lambda: any(e["kind"] == "tracked" for e in ledger_entries(workdir)), seen, workdir)
    time.sleep(0.05)
    kill_then_clean(proc, workdir, seen)


def test_kill_9_mid_slice_with_a_server_held_stopped(workdir):
    seen = Seen()
    proc = start_pickfs(workdir, *SERVER_RUN, "--memory", "400M")  # each configuration in a memory group too

    def stopped_server() -> bool:
        return len(measured_trials(workdir)) >= 1 and any(state(p) == "T" for p in seen.pids)

    assert wait_for(stopped_server, seen, workdir), "no server was ever held stopped"
    assert any(e["kind"] == "cgroup" for e in ledger_entries(workdir))
    kill_then_clean(proc, workdir, seen)
    assert len(measured_trials(workdir)) >= 1


def test_kill_9_in_teardown(workdir):
    seen = Seen()
    proc = start_pickfs(workdir, *SERVER_RUN)
    most = [0]

    def tearing_down() -> bool:  # every slice measured, and the first server gone from the ledger
        servers = sum(1 for e in ledger_entries(workdir) if e["kind"] == "process")
        most[0] = max(most[0], servers)
        return len(measured_trials(workdir)) >= 8 and 0 < servers < most[0]

    assert wait_for(tearing_down, seen, workdir, timeout=180)
    kill_then_clean(proc, workdir, seen)
    assert len(measured_trials(workdir)) == 8


def sleeps_in(workdir: Path) -> list[int]:
    """The `sleep 900` processes working in the work directory (its mount): the command's, by their own argv.

    Not a match on the text of a command line: pickfs's own names "sleep 900" in its --set and PICKFS_WORKDIR in
    its environment, and so does each child it forks (mkfs, losetup, ldconfig) until that child executes its
    program; counting those killed pickfs before it had made its results file."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")[:-1]
            cwd = os.readlink(Path(entry.path, "cwd"))
        except OSError:
            continue
        if argv == [b"sleep", b"900"] and cwd.startswith(f"{workdir}/"):
            out.append(int(entry.name))
    return out


def test_kill_9_while_a_command_runs_a_daemon(workdir):
    seen = Seen()
    proc = start_pickfs(workdir, "run", "--fs", "ext4", "--workload", "command", "--set",
                        "command=setsid sleep 900 & sleep 900", "--one-at-a-time", "--runs", "1", "--warmup", "0",
                        "--size", "256M")
    assert wait_for(lambda: len(sleeps_in(workdir)) >= 2, seen, workdir)  # the command and the daemon it started
    assert [status for _, status in run_rows(workdir)] == ["running"]  # recorded before its command ran
    kill_then_clean(proc, workdir, seen)
    assert [status for _, status in run_rows(workdir)] == ["interrupted"]


@pytest.mark.parametrize("when", ["recording", "checking a state"])
def test_kill_9_in_a_crash_test(workdir, when):
    seen = Seen()
    proc = start_pickfs(workdir, "crashtest", "--fs", "ext4", "--states", "8", "--duration", "2s", "--size", "512M")

    def there() -> bool:
        mounts = mounts_under(workdir)
        if when == "recording":
            return any(m.endswith("/recorder") and "/checks-" not in m for m in mounts) and len(mounts) >= 2
        # a workbench's recorder (benches-*/checks-N/recorder) and a state mounted at its station
        return any("/checks-" in m and m.endswith("/recorder") for m in mounts) and \
            any("/station-" in m for m in mounts)

    assert wait_for(there, seen, workdir)
    kill_then_clean(proc, workdir, seen)
