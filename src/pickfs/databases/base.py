"""What pickfs must know of a database to drive it: the adapter every module of databases/ provides.

A client process (python -m pickfs.clients.X) imports this package to reach its database, so nothing
here imports a driver, a service or the engine at import time: drivers are imported inside `connect`,
pickfs's heavier modules inside the methods that need them.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import stat
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pickfs.databases.values import ValueShape
from pickfs.sysinfo import read_text

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from pickfs.model import WorkloadSpec
    from pickfs.services.base import Endpoint


# A crash state's check (recovery done) that takes longer than this hung: the limit crash/runner.py gives the client's
# check, which a check run outside the client (`outside_check`) has too
CHECK_TIMEOUT_S = 120


@dataclass(frozen=True)
class Dialect:
    """How the clients' SQL, written with '?', differs per database."""

    placeholder: str  # what '?' becomes
    for_update: str  # appended to a SELECT that locks its rows
    limit_one: str  # appended to a SELECT that wants one row


@dataclass(frozen=True)
class Driver:
    """The Python driver a client imports to connect: its module, and the package that provides it."""

    module: str
    package: str


@dataclass(frozen=True)
class TornPage:
    """A durability setting whose risk is a torn page, and the values that take the protection away."""

    key: str
    unsafe: tuple[str, ...]


class Connection(Protocol):
    """What the clients call on a connection (the drivers' own, or a thin wrapper)."""

    def cursor(self) -> Any: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def close(self) -> None: ...


class WriteBack:
    """The crash test's request that the database write its pages back (none, by default)."""

    def ask(self, conn: Any, k: int) -> str:
        """Ask for the k-th write-back; what was asked for, in words ('' for nothing)."""
        return ""

    def tick(self, conn: Any) -> None:
        """Called after each commit: undo, when due, what `ask` changed for a while."""


class Database(ABC):
    """One database as pickfs knows it. A subclass per module of databases/, registered by `name`."""

    name: str  # the backend name workloads' settings use
    database: str  # the database it is (several backends can be one database: firebird, firebird-server)
    service: str | None = None  # the services/ server pickfs starts for it; None: embedded in the client
    driver: Driver | None = None  # None: in Python's standard library
    dialect: Dialect
    raw_ok: bool = False  # keeps a database on a block device as well as in a file
    one_client: bool = False  # the engine runs in the client process, one client per process
    # the engine runs in the client process and is not to be trusted once it failed on a database (Firebird: an
    # internal consistency check shuts its page cache down under its other threads): closing that connection, or the
    # engine's own shutdown at the process's exit, can then hang or abort. A crash state's check that failed on it
    # answers first, then ends its process at once, the connection left open (clients/commits.py)
    ends_client_after_failure: bool = False
    crash_testable: bool = True  # the crash test's commits client covers it
    page_bytes: int | None = None  # the pages a torn write would tear (the default size)
    torn_page_settings: tuple[TornPage, ...] = ()
    # the shape of the values of its own settings a workload may pass to it (each checked before use)
    setting_shapes: ClassVar[dict[str, ValueShape]] = {}
    packages: tuple[str, ...] = ()  # its Debian packages (dpkg-query patterns) whose versions a fingerprint lists

    # --- the client side (in the client process) ---
    @abstractmethod
    def connect(self, args: argparse.Namespace) -> tuple[Connection, tuple[type[BaseException], ...]]:
        """A connection with autocommit off, and the exceptions that mean 'retry this transaction'."""

    def connect_for_check(self, args: argparse.Namespace) -> tuple[Connection, tuple[type[BaseException], ...]]:
        """A connection for a crash state's check, which reads what recovery left and changes nothing it keeps: by
        default `connect`'s."""
        return self.connect(args)

    def create(self, args: argparse.Namespace) -> None:
        """Create the database before its tables, where the database does not exist until asked."""
        return None  # nothing, unless the database needs it

    def in_force(self, conn: Any) -> dict[str, Any]:
        """The durability settings in force, read back on an open connection (output fields of the clients)."""
        return {}

    def compact(self, args: argparse.Namespace) -> None:
        """After a bulk load: write the load's log back, so the run starts from its tables alone."""
        return None  # nothing, unless the database needs it

    def settle_load(self, tx: Any) -> None:
        """After the crash test's tables are loaded: whatever makes them safe to crash from."""
        return None  # nothing, unless the database needs it

    @abstractmethod
    def own_check(self, tx: Any) -> str:
        """The database's own consistency check of the crash test's tables: 'ok' or what it found."""

    def write_back(self, args: argparse.Namespace, every_s: float) -> WriteBack:
        """The crash test's write-back requests for a run with these options."""
        return WriteBack()

    # --- pickfs's side ---
    @abstractmethod
    def connection_args(self, datadir: Path, endpoint: Endpoint | None, settings: dict[str, Any],
                        stem: str) -> list[str]:
        """How a client of clients/ reaches the database: its file when embedded, else the server's socket."""

    def client_env(self, datadir: Path, scratch: Path | None, endpoint: Endpoint | None) -> dict[str, str] | None:
        """Environment variables the client needs (None: pickfs's own)."""
        return None

    def checker_env(self, datadir: Path, home: Path, endpoint: Endpoint | None) -> dict[str, str] | None:
        """The environment of a crash test's client that stays up for state after state (and of the checks run
        beside it): `home` is that checker's own directory, off the states' filesystems, for what the client keeps
        across checks. By default the client's own environment."""
        return self.client_env(datadir, None, endpoint)

    def discarded_check_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        """The settings a crash state's check starts the database with when nothing reads what the check makes
        durable (the state is undone after it, neither kept nor cut again during its recovery): its recovery reads
        and replays what the state holds as with `settings`, only the durability of its own writes may differ.
        By default `settings` themselves (pure)."""
        return settings

    def after_load(self, datadir: Path, endpoint: Endpoint | None, env: dict[str, str] | None,
                   settings: dict[str, Any], stem: str) -> None:
        """Settings made on the database once its tables exist."""
        return None  # nothing, unless the database needs it

    def outside_check(self, datadir: Path, stem: str, env: dict[str, str] | None,
                      timeout: float = CHECK_TIMEOUT_S) -> tuple[list[str], list[str]]:
        """A check run outside the client after the crash test's own: (errors, warnings); one that takes longer than
        `timeout` seconds is an error."""
        return [], []

    @abstractmethod
    def risks(self, spec: WorkloadSpec) -> list[str]:
        """What the workload's durability settings on this database risk, one line each (pure)."""

    def crash_cause(self, problem: str, settings: Mapping[str, Any], torn: int = 0) -> str:
        """The cause pickfs measured and traced to the database itself that a failed crash state fits under the
        workload's `settings` ('' when none): a real loss under the database's own settings, not a false alarm
        (pure). `problem`: what its check said; `torn`: the writes its power cut tore."""
        return ""

    def crash_check_blind_spots(self, spec: WorkloadSpec) -> list[str]:
        """Settings whose risk the crash test's check cannot see, and why (pure)."""
        return []

    def installed_settings(self, found: dict[str, str]) -> dict[str, str]:
        """A fingerprint's keys (db.NAME.KEY) for the durability settings of its installed configuration;
        `found`: the keys found so far (the packages' versions)."""
        return {}

    def server_settings(self) -> tuple[str, ...]:
        """The server's settings a workload may set (none for an embedded database)."""
        return ()

    def unavailable_reason(self) -> str | None:
        """Why it cannot run on this machine, naming the fix; None when it can."""
        if self.driver is not None and importlib.util.find_spec(self.driver.module.split(".")[0]) is None:
            return f"the Python driver {self.driver.package} is missing (pip install {self.driver.package})"
        if self.service:
            from pickfs.services import service_class  # deferred: cycle with services; clients load no server

            return service_class(self.service).unavailable_reason()
        return None


def is_block_device(path: Path) -> bool:
    """Is the data directory the block device itself (a database or workload on the raw baseline)?"""
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


def conf_values(paths: list[str], keys: tuple[str, ...]) -> dict[str, str]:
    """`key = value` lines of configuration files, for these keys (the last file wins)."""
    found: dict[str, str] = {}
    for p in paths:
        for line in read_text(p).splitlines():
            line = line.split("#", 1)[0].strip()
            m = re.match(r"^([A-Za-z_-]+)\s*=\s*'?([^'\s]+)'?", line)
            if m and m.group(1).replace("-", "_") in keys:
                found[m.group(1).replace("-", "_")] = m.group(2)
    return found
