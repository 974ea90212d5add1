"""What a database service provides: start on a directory, hand back how to reach it, stop."""

from __future__ import annotations

import enum
import os
import pwd
import signal
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pickfs.databases.values import check_values
from pickfs.errors import CommandFailed, PickfsError
from pickfs.proc import run
from pickfs.stack.cleanup import exit_watch, holding, wait_gone
from pickfs.stack.ledger import Entry, Ledger
from pickfs.stack.tracking import Tracked, tracked


class ServiceFailed(PickfsError):
    """A server did not start or stop; the message carries its log's tail."""


@dataclass(frozen=True)
class Endpoint:
    """How a client reaches a server pickfs started: a private socket, never TCP."""

    service: str
    socket_dir: str
    port: int
    user: str
    database: str
    env: dict[str, str] = field(default_factory=dict)  # PGHOST, MYSQL_UNIX_PORT, DATABASE_URL, ...
    log: str = ""
    version: str = ""
    pidfile: str = ""  # the server's main pid, so it can be held still while others are measured


class Service(ABC):
    name: ClassVar[str]
    package: ClassVar[str]  # the Debian package that provides it
    os_user: ClassVar[str | None] = None  # the system user the server runs as (None: root, in its own directory)
    # the signal that ends the server at once, writing nothing back (PostgreSQL's immediate shutdown); None: it has
    # none, and is always stopped as the ledger says
    at_once_signal: ClassVar[signal.Signals | None] = None
    server_program: ClassVar[str] = ""  # what the server's command line holds (a pid file's pid is checked for it)

    @classmethod
    @abstractmethod
    def not_installed(cls) -> str | None:
        """What to install when this machine lacks the server's programs; None when they are there."""

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """None when this machine has the server and the user it runs as; else what to install."""
        return cls.not_installed() or (missing_user(cls.os_user, cls.package) if cls.os_user else None)

    @classmethod
    def memory_settings(cls, limit: int) -> dict[str, str]:
        """Buffer settings that follow a memory limit of `limit` bytes (used where the workload sets none)."""
        return {}

    @classmethod
    def ensure_available(cls) -> None:
        reason = cls.unavailable_reason()
        if reason:
            raise ServiceFailed(reason, f"install it, or leave {cls.name} workloads out of the plan")

    @classmethod
    @contextmanager
    def start(cls, datadir: Path, settings: dict[str, Any], ledger: Ledger,
              rundir: Path, fresh: bool = True, at_once: bool = False) -> Iterator[Endpoint]:
        """A context manager: the server runs with its data in `datadir` until exit.

        fresh: initialise a new data directory; otherwise start (and so recover) the one there.
        at_once: on exit, end the server at once (`at_once_signal`), writing nothing back, where nothing will read
        what it leaves (a crash state whose check is done and undone); the rest is undone as always.
        """
        cls.ensure_available()
        with ExitStack() as stack:
            endpoint = cls.serve(stack, datadir, settings, ledger, rundir, fresh)
            try:
                yield endpoint
            finally:
                if at_once and cls.at_once_signal is not None:
                    end_at_once(endpoint, cls.at_once_signal, cls.server_program)

    @classmethod
    @abstractmethod
    def serve(cls, stack: ExitStack, datadir: Path, settings: dict[str, Any], ledger: Ledger, rundir: Path,
              fresh: bool) -> Endpoint:
        """Start the server and return how to reach it; everything it makes is undone by `stack` (recorded in
        the ledger before it is made), the server itself last started, first stopped."""


# How long a server ended at once may take to exit before it is left to its ordinary stop (the ledger's).
AT_ONCE_WAIT_S = 10.0


def end_at_once(endpoint: Endpoint, sig: signal.Signals, program: str) -> bool:
    """End the server whose pid file the endpoint names with `sig` and wait until it exits (True); False when there
    was nothing of it to end or it did not exit in time (its ordinary stop follows). The process is held by a pidfd
    before its command line is checked for `program`, so a pid reused by another program is never signalled."""
    if not endpoint.pidfile or not program:
        return False
    try:
        with open(endpoint.pidfile, "rb") as fh:
            pid = int(fh.read(64).split()[0])
    except (OSError, ValueError, IndexError):
        return False
    with exit_watch(pid) as fd:
        if fd is None:
            return False
        try:
            if program.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]:
                return False
            signal.pidfd_send_signal(fd, sig)
        except OSError:
            return False
        return wait_gone(pid, AT_ONCE_WAIT_S, fd)


def missing_user(user: str, package: str) -> str | None:
    """A reason when the system user a server runs as does not exist."""
    try:
        pwd.getpwnam(user)
    except KeyError:
        return f"there is no '{user}' user to run the server as (apt-get install {package})"
    return None


def private_dirs(stack: ExitStack, ledger: Ledger, rundir: Path, prefix: str, user: str, *owned: Path) -> Path:
    """A 0700 socket directory (ledger-tracked); it and the `owned` directories belong to the server's user."""
    owner = pwd.getpwnam(user)
    sockdir = rundir / f"{prefix}-{os.getpid()}-{time.monotonic_ns() % 10**9}"
    stack.enter_context(holding(ledger, "dir", path=str(sockdir), recursive=True))
    sockdir.mkdir(mode=0o700, parents=True)
    for path in (sockdir, *owned):
        path.mkdir(exist_ok=True)
        os.chown(path, owner.pw_uid, owner.pw_gid)
    return sockdir


def chosen_settings(settings: dict[str, Any], names: tuple[str, ...], what: str) -> dict[str, Any]:
    """The server settings among `names` the workload set (None or "": the server's default), each checked
    against its setting's shape (PlanError naming the bad one)."""
    chosen = {k: settings[k] for k in names if settings.get(k) not in (None, "")}
    check_values(chosen, what)
    return chosen


def setup_step(argv: list[str], what: str, hint: str, package: str, timeout: float) -> None:
    """One step that makes a fresh server's data (initdb, install-db); ServiceFailed naming it when it fails."""
    try:
        run(argv, package=package, timeout=timeout)
    except CommandFailed as exc:
        raise ServiceFailed(f"{what} failed: {exc.one_line()}", hint) from None


def log_tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"


def server_group(stack: ExitStack, ledger: Ledger, name: str) -> Tracked:
    """The control group a server runs in, recorded before the server starts (stack/tracking.py): whatever it
    forks stays in it, `pickfs cleanup` ends all of it after a kill -9 at any moment, and only a process in
    it is ever taken for this server (a pid file's pid reused by another program is not)."""
    return stack.enter_context(tracked(ledger, f"{name} server"))


def group_field(group: Tracked) -> dict[str, str]:
    """The ledger field naming a server's group, for its process entry (none without a group)."""
    return {"group": str(group.path)} if group.path is not None else {}


def hold_server(stack: ExitStack, ledger: Ledger, name: str, pidfile: Path, match: str,
                stop_signal: str) -> tuple[Tracked, list[Entry]]:
    """The server's control group and its process entry in the ledger, both recorded before it starts: cleanup
    finds it through its pid file (a process whose name holds `match`) and stops it with `stop_signal`.
    Returns the group (to enter) and the ledger entry holder (to add the child's identity once known)."""
    group = server_group(stack, ledger, name)
    box = stack.enter_context(holding(ledger, "process", pidfile=str(pidfile), match=match, stop_signal=stop_signal,
                                      **group_field(group)))
    return group, box


class Waited(enum.Enum):
    """How waiting for a server to start ended."""

    READY = "ready"
    EXITED = "exited before it was ready"
    TIMED_OUT = "not ready in time"


# How often a starting server is asked whether it is ready: every millisecond at first, then every POLL_MAX_S. A
# crash test starts a server per state (its recovery, about a tenth of a second): a wait of a tenth of a second
# between asks (pg_ctl -w's, MariaDB's ping) was up to as much again.
POLL_FIRST_S, POLL_MAX_S = 0.001, 0.01


def await_ready(ready: Callable[[], bool], exited: Callable[[], bool], timeout_s: float) -> Waited:
    """Ask `ready` until it says so, `exited` says the server is gone, or `timeout_s` passed."""
    deadline = time.monotonic() + timeout_s
    pause = POLL_FIRST_S
    while True:
        if ready():
            return Waited.READY
        if exited():
            return Waited.READY if ready() else Waited.EXITED
        if time.monotonic() > deadline:
            return Waited.TIMED_OUT
        time.sleep(pause)
        pause = min(pause * 2, POLL_MAX_S)
