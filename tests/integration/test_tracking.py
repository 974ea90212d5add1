"""Started programs in control groups of their own: found and ended whatever they do, and nothing else is touched."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pickfs.crash.session import fuse_unavailable, recording
from pickfs.errors import NoRoom
from pickfs.model import WorkloadSpec
from pickfs.services.firebird import FirebirdServer
from pickfs.stack import tracking
from pickfs.stack.cleanup import undo_all
from pickfs.stack.ledger import Ledger
from pickfs.stack.tracking import tracked
from pickfs.workloads.command import Command
from tests.conftest import needs_root

pytestmark = needs_root


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_stale_pid_file_naming_another_firebird_is_not_signalled(workdir):
    """A dead server's pid file whose pid now belongs to another program named like it (another run's
    Firebird): pickfs's undo must not SIGTERM it. It did: the match was by name and start time only."""
    ledger = Ledger(workdir / "ledger")
    pidfile = workdir / "server.pid"
    with tracked(ledger, "firebird server") as group:
        entry = ledger.record("process", pidfile=str(pidfile), match="firebird", stop_signal="SIGTERM",
                              group=str(group.path))
        impostor = subprocess.Popen(["firebird-of-another-run", "60"], executable="/bin/sleep")
        try:
            pidfile.write_text(f"{impostor.pid}\n")
            assert group.path is not None and impostor.pid not in group.members()
            undo_all(ledger, [entry])
            time.sleep(0.2)
            assert impostor.poll() is None, "another program's process was signalled"
        finally:
            impostor.kill()
            impostor.wait()


def test_a_server_whose_pid_was_never_written_is_still_ended(workdir):
    """kill -9 between the server's start and its pid file: the group recorded before the start finds it."""
    if FirebirdServer.unavailable_reason():
        pytest.skip(FirebirdServer.unavailable_reason())
    ledger = Ledger(workdir / "ledger")
    server = FirebirdServer.start(workdir / "data", {}, ledger, workdir / "run")
    endpoint = server.__enter__()
    pid = int(Path(endpoint.pidfile).read_text())
    kinds = [e.kind for e in ledger.entries()]
    assert kinds.index("tracked") < kinds.index("process")  # the group exists before the server starts
    process = next(e for e in ledger.entries() if e.kind == "process")
    assert process.get("start_pid") == pid and process.get("start_ticks")  # its identity, not only a name
    Path(endpoint.pidfile).unlink()  # as if pickfs died before writing it
    undo_all(ledger, ledger.entries())  # what `pickfs cleanup` does with the entries
    time.sleep(0.2)
    assert not alive(pid), "the server was left running"
    assert ledger.entries() == []


def test_a_daemonizing_command_is_ended_and_named(workdir):
    data = workdir / "data"
    data.mkdir(mode=0o700)
    spec = WorkloadSpec("command", "command", tuple(sorted(Command.check(Command.normalize(
        {"command": "setsid sleep 1100 & sleep 0.3"})).items())))
    raw = Command(workdir / "data").run(spec, workdir / "target")
    doc = json.loads(raw.text)
    assert any("sleep 1100" in e for e in doc["ended"]), doc["ended"]
    assert "sleep 1100" in " ".join(Command.notes_from(raw.text))
    left = subprocess.run(["pgrep", "-f", "sleep 1100"], capture_output=True, text=True).stdout.split()
    mine = [p for p in left if f"PICKFS_DIR={workdir}" in Path(f"/proc/{p}/environ").read_bytes().decode(errors="replace")]
    assert mine == []
    assert Ledger(workdir / "ledger").entries() == []


def test_a_group_ends_stopped_members_too(workdir):
    ledger = Ledger(workdir / "ledger")
    with tracked(ledger, "test") as group:
        proc = subprocess.Popen(["sleep", "600"], preexec_fn=group.preexec())
        os.kill(proc.pid, signal.SIGSTOP)
        assert group.members() == [proc.pid]
        ended = group.end(grace_s=1.0)
        assert proc.wait(timeout=10) != 0
        assert ended == ["sleep 600"]
    assert not group.path.exists()


@pytest.mark.skipif(fuse_unavailable() is not None, reason=str(fuse_unavailable()))
def test_the_recorders_image_is_private_and_room_checked(workdir):
    ledger = Ledger(workdir / "ledger")
    base = workdir / "crash"
    base.mkdir(mode=0o700)
    with recording(base / "a", 64 * 1024**2, ledger) as rec:
        assert rec.backing.stat().st_mode & 0o777 == 0o600
    st = os.statvfs(workdir)
    with pytest.raises(NoRoom):
        with recording(base / "b", st.f_bavail * st.f_frsize * 2, ledger):
            pass
    assert not (base / "b" / "backing" / "image").exists()



def test_a_program_that_joins_its_group_late_is_ended_and_the_group_removed(workdir, monkeypatch):
    """Ctrl-C while a server was being started: its fork entered the group only after pickfs had found the
    group empty, and the removal failed (EBUSY) with the server left running. Here a program joins right
    after the group was first emptied: it is ended and the group removed all the same."""
    ledger = Ledger(workdir / "ledger")
    late = subprocess.Popen(["sleep", "60"])
    passes = []
    real = tracking.end_group

    def end_then_join(path, *args, **kw):
        ended = real(path, *args, **kw)
        if not passes:
            (path / "cgroup.procs").write_text(f"{late.pid}\n")
        passes.append(ended)
        return ended

    monkeypatch.setattr(tracking, "end_group", end_then_join)
    try:
        with tracked(ledger, "late server") as group:
            assert group.path is not None
        assert not group.path.exists()
        assert late.wait(timeout=30) == -signal.SIGTERM and len(passes) >= 2
        assert ledger.entries() == []
    finally:
        if late.poll() is None:
            late.kill()
            late.wait()
