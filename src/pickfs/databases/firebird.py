"""Firebird 3: its embedded engine in the client (firebird-driver over libfbclient), or the private server
pickfs starts (services/firebird.py, R5's SuperClassic); durability by forced writes, set per database."""

from __future__ import annotations

import argparse
import glob
import os
import threading
from typing import TYPE_CHECKING, Any

from pickfs.databases.base import CHECK_TIMEOUT_S, Database, Dialect, Driver, conf_values, is_block_device
from pickfs.databases.values import BOOL, ValueShape
from pickfs.errors import CommandFailed

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from pickfs.model import WorkloadSpec
    from pickfs.services.base import Endpoint

FIREBIRD_ROOT = "/usr/lib/x86_64-linux-gnu/firebird/3.0"  # Debian's firebird3.0-server-core
FB_CONNECT = threading.Lock()
TORN_PAGE = ("a page torn by the power cut: Firebird writes its 8 KiB pages in place, its forced writes order and "
             "flush them, but it keeps no copy to mend a page written in part (PostgreSQL's full-page writes and "
             "InnoDB's doublewrite buffer are such copies): on a disk that keeps less than 8 KiB whole, a power cut "
             "during a page's write can break the database; a real risk of its defaults, not a false alarm")
# Firebird's forced writes are set per database (gfix -write sync|async; on for a new database);
# the server's file says how it writes when they are off, and whether it goes through the page cache.
FINGERPRINT_KEYS = ("MaxUnflushedWrites", "MaxUnflushedWriteTime", "UseFileSystemCache", "FileSystemCacheThreshold",
                    "ServerMode")


def fbclient() -> str | None:
    found = sorted(glob.glob("/usr/lib/*/libfbclient.so.2")) or sorted(glob.glob("/usr/lib/libfbclient.so.2"))
    return found[0] if found else None


def firebird_unavailable() -> str | None:
    from pickfs.stack.filesystems import which  # deferred: pickfs.stack, which no client process loads

    if fbclient() is None:
        return "Firebird's client library is missing (apt-get install libfbclient2)"
    if not glob.glob(f"{FIREBIRD_ROOT}/plugins/libEngine12.so"):
        return "Firebird's embedded engine is missing (apt-get install firebird3.0-server-core)"
    if which("gfix") is None:
        return "gfix is missing (apt-get install firebird3.0-utils)"
    return None


def firebird_db(datadir: Path, stem: str = "pickfs") -> Path:
    """The database: a file in the data directory, or the block device itself (R5's raw baseline)."""
    return datadir if is_block_device(datadir) else datadir / f"{stem}.fdb"


def set_forced_writes(db: Path | str, on: bool, env: dict[str, str]) -> None:
    """Firebird's durability switch, set on the database file (gfix -write sync|async)."""
    from pickfs.proc import run as run_program  # deferred: pickfs.stack (via proc), which no client process loads

    run_program(["gfix", "-write", "sync" if on else "async", str(db)], package="firebird3.0-utils", env=env)


def firebird_env(datadir: Path, scratch: Path | None = None) -> dict[str, str]:
    """The embedded engine, with its lock files private to this run: beside the database, or for a
    database on a block device, in the configuration's scratch directory."""
    if is_block_device(datadir):
        if scratch is None:
            raise ValueError("a Firebird database on a block device needs a directory for its lock files")
        return engine_env(scratch / "fblock")
    return engine_env(datadir / "fblock")


def engine_env(lock: Path) -> dict[str, str]:
    """The embedded engine's environment, its lock and temporary files in `lock` (made, private)."""
    from pickfs.stack.workdir import PRIVATE_MODE  # deferred: pickfs.stack, which no client process loads

    lock.mkdir(mode=PRIVATE_MODE, exist_ok=True)
    return {"FIREBIRD": FIREBIRD_ROOT, "FIREBIRD_LOCK": str(lock), "FIREBIRD_TMP": str(lock)}


def gfix_findings(text: str) -> tuple[list[str], list[str]]:
    """gfix -v's summary lines ('Number of record level errors : 2') as errors and warnings (pure)."""
    errors, warnings = [], []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = " ".join(key.split()), value.strip()
        if not value.isdigit() or int(value) == 0:
            continue
        if "error" in key.lower():
            errors.append(f"{key}: {value}")
        elif "warning" in key.lower():
            warnings.append(f"{key}: {value}")
    return errors, warnings


class FirebirdConnection:
    """firebird-driver's connection behind the same commit/rollback/cursor calls."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def cursor(self) -> Any:
        if not self.conn.main_transaction.is_active():
            self.conn.main_transaction.begin()
        return self.conn.cursor()

    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        self.conn.rollback()

    def close(self) -> None:
        self.conn.close()


def _use_client_library(args: argparse.Namespace) -> None:
    from firebird.driver import driver_config  # deferred: the driver firebird.driver, in its client only

    if args.fb_client:
        driver_config.fb_client_library.value = args.fb_client


class Firebird(Database):
    """The embedded engine: the client process is the database, one client per process."""

    name = database = "firebird"
    setting_shapes = {"forced_writes": ValueShape("on", choices=BOOL)}
    driver = Driver("firebird.driver", "firebird-driver")
    dialect = Dialect("?", " WITH LOCK", " ROWS 1")
    raw_ok = True
    one_client = True
    ends_client_after_failure = True
    packages = ("firebird*-server",)

    def connect(self, args: argparse.Namespace) -> tuple[FirebirdConnection, tuple[type[BaseException], ...]]:
        return self._attached(args, collects_garbage=True)

    def connect_for_check(self, args: argparse.Namespace) -> tuple[FirebirdConnection,
                                                                    tuple[type[BaseException], ...]]:
        """Without garbage collection (isc_dpb_no_garbage_collect): the check reads the record versions it needs,
        and leaves old ones alone. With it, the reads handed old versions to the engine's garbage collector thread,
        which ran beside the check; on a state whose torn page lost such a version, whichever thread reached it first
        hit the engine's internal consistency check ('cannot find record back version'), which shuts the engine's
        page cache down under the other, and the check's next call into the engine (a cursor's close) found its
        mutexes destroyed: the same state's check failed, passed, waited for ever or aborted its process from one
        run to the next. Without it, a lost version a read needs (of a transaction the power cut left
        unfinished) is met in the check's own thread, every time; gfix -v, after the check, walks every version
        chain and names what is broken."""
        return self._attached(args, collects_garbage=False)

    def _attached(self, args: argparse.Namespace,
                  collects_garbage: bool) -> tuple[FirebirdConnection, tuple[type[BaseException], ...]]:
        from firebird.driver import connect as fb_connect  # deferred: the driver firebird.driver, in its client only
        from firebird.driver.types import DatabaseError  # deferred: the driver firebird.driver, in its client only

        _use_client_library(args)
        with FB_CONNECT:  # firebird-driver loads its client interfaces on first use: not from two threads at once
            conn = fb_connect(args.db, user="SYSDBA", password=os.environ.get("ISC_PASSWORD"),
                              no_gc=not collects_garbage)
        # IndexError: a row read moments ago vanished under another terminal's committed transaction (several
        # terminals on the server): rolled back and counted as an error, as a conflict is
        return FirebirdConnection(conn), (DatabaseError, IndexError)

    def create(self, args: argparse.Namespace) -> None:
        from firebird.driver import create_database  # deferred: the driver firebird.driver, in its client only

        _use_client_library(args)
        create_database(args.db, user="SYSDBA", password=os.environ.get("ISC_PASSWORD")).close()

    def in_force(self, conn: Any) -> dict[str, Any]:
        """Whether Firebird writes synchronously (its durability switch)."""
        cur = conn.cursor()
        cur.execute("SELECT MON$FORCED_WRITES FROM MON$DATABASE")
        value = bool(cur.fetchall()[0][0])
        conn.rollback()
        return {"forced_writes": value}

    def own_check(self, tx: Any) -> str:
        return "ok"  # gfix -v, run outside the client: `outside_check`

    def connection_args(self, datadir: Path, endpoint: Endpoint | None, settings: dict[str, Any],
                        stem: str) -> list[str]:
        return ["--db", str(firebird_db(datadir, stem)), "--fb-client", fbclient() or "libfbclient.so.2"]

    def client_env(self, datadir: Path, scratch: Path | None, endpoint: Endpoint | None) -> dict[str, str] | None:
        return firebird_env(datadir, scratch)

    def checker_env(self, datadir: Path, home: Path, endpoint: Endpoint | None) -> dict[str, str] | None:
        """A client that stays up keeps the engine, and the engine keeps its lock files mapped: in the checker's own
        directory, never on the state's filesystem (which they would keep busy after its unmount)."""
        home.mkdir(mode=0o700, exist_ok=True)
        return engine_env(home / "fblock")

    def after_load(self, datadir: Path, endpoint: Endpoint | None, env: dict[str, str] | None,
                   settings: dict[str, Any], stem: str) -> None:
        set_forced_writes(firebird_db(datadir, stem), str(settings.get("forced_writes", "on")) == "on", env or {})

    def outside_check(self, datadir: Path, stem: str, env: dict[str, str] | None,
                      timeout: float = CHECK_TIMEOUT_S) -> tuple[list[str], list[str]]:
        """Firebird's own validation, read-only (-n): it names every page and record it finds broken.

        It runs after the check's queries: where they read the database and gfix stops on a broken page (a torn
        page's pointer past the file's end: 'I/O error during "read"'), the database opened but is damaged, and
        that is what is said, not that it would not start. It is part of the state's check and has its limit
        (`timeout`): a validation still running then is stopped, and the check failed."""
        from pickfs.proc import run as run_program  # deferred: pickfs.stack (via proc), which no client process loads

        try:
            said = run_program(["gfix", "-v", "-full", "-n", str(firebird_db(datadir, stem))],
                               package="firebird3.0-utils", env=env, timeout=timeout).text
        except CommandFailed as exc:
            if exc.returncode == -1:  # proc.run's word for a program stopped at its limit
                return [f"validation did not finish within {timeout:g} s, a state's check's limit: it hung"], []
            first = next((line.strip() for line in exc.stderr.splitlines() if line.strip()), "no output")
            return [f"validation stopped ({first})"], []
        return gfix_findings(said)

    def crash_cause(self, problem: str, settings: Mapping[str, Any], torn: int = 0) -> str:
        """With forced writes on, a failed state whose power cut tore a write: a page torn in place, which Firebird
        keeps nothing to mend (pure). With forced writes off the loss is that setting's own risk, said by `risks`."""
        if not torn or str(settings.get("forced_writes", "on")) == "off":
            return ""
        return TORN_PAGE

    def risks(self, spec: WorkloadSpec) -> list[str]:
        if str(spec.get("forced_writes", "on")) != "off":
            return []
        return ["forced_writes=off: Firebird leaves writes to the operating system's cache; a power cut can "
                "lose acknowledged commits and corrupt the database"]

    def installed_settings(self, found: dict[str, str]) -> dict[str, str]:
        paths = sorted(glob.glob("/etc/firebird/*/firebird.conf"))
        out = {}
        if paths or any(k.startswith("db.firebird") for k in found):
            out["db.firebird.forced_writes"] = "per database (on when created; gfix -write sync|async)"
        out.update({f"db.firebird.{k}": v for k, v in conf_values(paths, FINGERPRINT_KEYS).items()})
        return out

    def unavailable_reason(self) -> str | None:
        return firebird_unavailable() or super().unavailable_reason()


class FirebirdServer(Firebird):
    """The private server pickfs starts, over the loopback; the password in the environment."""

    name = "firebird-server"
    service = "firebird"
    one_client = False
    ends_client_after_failure = False  # the engine runs in the server
    crash_testable = False  # the crash test drives the embedded engine (database_for says firebird)

    def connection_args(self, datadir: Path, endpoint: Endpoint | None, settings: dict[str, Any],
                        stem: str) -> list[str]:
        assert endpoint is not None, "firebird-server needs its server started"
        return ["--db", f"{endpoint.env['FIREBIRD_SERVER']}:{firebird_db(datadir, stem)}",
                "--fb-client", fbclient() or "libfbclient.so.2"]

    def client_env(self, datadir: Path, scratch: Path | None, endpoint: Endpoint | None) -> dict[str, str] | None:
        if endpoint is None:
            return None
        return {k: endpoint.env[k] for k in ("ISC_USER", "ISC_PASSWORD")}

    def after_load(self, datadir: Path, endpoint: Endpoint | None, env: dict[str, str] | None,
                   settings: dict[str, Any], stem: str) -> None:
        if endpoint is not None:
            set_forced_writes(f"{endpoint.env['FIREBIRD_SERVER']}:{firebird_db(datadir, stem)}",
                              str(settings.get("forced_writes", "on")) == "on", env or {})


DATABASE = Firebird()
SERVER = FirebirdServer()
