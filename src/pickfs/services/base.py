"""What a database service provides: start on a directory, hand back how to reach it, stop."""

from __future__ import annotations

import os
import pwd
import time
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pickfs.errors import PickfsError
from pickfs.stack.cleanup import holding
from pickfs.stack.ledger import Ledger
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

    @classmethod
    @abstractmethod
    def unavailable_reason(cls) -> str | None:
        """None when this machine has the server; else what to install."""

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
    @abstractmethod
    def start(cls, datadir: Path, settings: dict[str, Any], ledger: Ledger,
              rundir: Path, fresh: bool = True) -> AbstractContextManager[Endpoint]:
        """A context manager: the server runs with its data in `datadir` until exit.

        fresh: initialise a new data directory; otherwise start (and so recover) the one there.
        """


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
