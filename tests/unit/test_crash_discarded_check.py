"""A crash state's check whose writes nothing reads after it: which states qualify, the settings its server starts
with, and the server ended at once after it (a real process, signalled through its pid file)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from pickfs import databases
from pickfs.crash.runner import discarded_check
from pickfs.crash.states import CrashState
from pickfs.services.base import Endpoint, Service, end_at_once
from pickfs.stack.ledger import Ledger


def state(**kw: Any) -> CrashState:
    return CrashState(0, cut=9, durable=8, kept=(), dropped=1, t_ns=9, mode="unflushed lost", **kw)


def test_only_a_state_checked_once_and_not_kept_is_discarded(tmp_path):
    assert discarded_check(state(), None)
    # its recovery cut again: that recovery's writes and flushes are the second state
    assert not discarded_check(state(recovery=True), None)
    # kept for inspection when it fails: as the check left it
    assert not discarded_check(state(), tmp_path / "keep")


def test_postgresql_checks_a_discarded_state_without_fsync_and_keeps_every_other_setting():
    pg = databases.get("postgresql")
    chosen = {"full_page_writes": "off", "shared_buffers": "64MB", "fsync": "on"}
    assert pg.discarded_check_settings(chosen) == {"full_page_writes": "off", "shared_buffers": "64MB",
                                                   "fsync": "off"}
    assert chosen["fsync"] == "on"  # the workload's own settings are left as they were
    # a database with nothing left out (Firebird's forced writes are a property of its file; SQLite's as it was):
    # the same settings
    assert databases.get("firebird").discarded_check_settings({"page_size": "8192"}) == {"page_size": "8192"}
    assert databases.get("sqlite").discarded_check_settings({"synchronous": "FULL"}) == {"synchronous": "FULL"}


def started(argv: list[str]) -> subprocess.Popen[bytes]:
    """A process that runs its program (its command line is briefly empty while it starts; a server pickfs ends at
    once has long been ready)."""
    proc = subprocess.Popen(argv)
    deadline = time.monotonic() + 5
    while not Path(f"/proc/{proc.pid}/cmdline").read_bytes().startswith(argv[0].encode()):
        assert time.monotonic() < deadline
        time.sleep(0.001)
    return proc


@contextmanager
def sleeper(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Endpoint]]:
    proc = started(["sleep", "60"])
    pidfile = tmp_path / "server.pid"
    pidfile.write_text(f"{proc.pid}\n")
    try:
        yield proc, Endpoint("x", str(tmp_path), 0, "u", "d", pidfile=str(pidfile))
    finally:
        proc.kill()
        proc.wait()


def test_end_at_once_signals_the_server_of_the_pid_file_and_waits_for_it(tmp_path):
    with sleeper(tmp_path) as (proc, endpoint):
        assert end_at_once(endpoint, signal.SIGTERM, "sleep")
        assert proc.poll() is not None  # gone (and reaped) when it returns


def test_end_at_once_leaves_another_program_alone(tmp_path):
    with sleeper(tmp_path) as (proc, endpoint):
        assert not end_at_once(endpoint, signal.SIGTERM, "postgres")  # the pid is not the server's program
        assert proc.poll() is None
    assert not end_at_once(Endpoint("x", "", 0, "u", "d", pidfile=str(tmp_path / "none.pid")), signal.SIGTERM, "sleep")


class Sleeper(Service):
    """A server that is `sleep`: its ordinary stop (the stack's) notes that it found it still running."""

    name = package = "sleeper"
    at_once_signal = signal.SIGTERM
    server_program = "sleep"
    stopped_by_stack: list[bool] = []

    @classmethod
    def not_installed(cls) -> str | None:
        return None

    @classmethod
    def serve(cls, stack: ExitStack, datadir: Path, settings: dict[str, Any], ledger: Ledger, rundir: Path,
              fresh: bool) -> Endpoint:
        proc = started(["sleep", "60"])
        pidfile = datadir / "server.pid"
        pidfile.write_text(f"{proc.pid}\n")

        def stop() -> None:
            cls.stopped_by_stack.append(proc.poll() is None)
            proc.kill()
            proc.wait()
        stack.callback(stop)
        return Endpoint("sleeper", str(datadir), 0, "u", "d", pidfile=str(pidfile))


def test_a_server_started_at_once_is_ended_before_its_ordinary_stop_and_otherwise_stops_as_always(tmp_path):
    Sleeper.stopped_by_stack.clear()
    ledger = Ledger(tmp_path / "ledger")
    with Sleeper.start(tmp_path, {}, ledger, tmp_path, fresh=False, at_once=True):
        pass
    with Sleeper.start(tmp_path, {}, ledger, tmp_path, fresh=False):
        pass
    assert Sleeper.stopped_by_stack == [False, True]
    assert os.path.exists(tmp_path / "server.pid")
