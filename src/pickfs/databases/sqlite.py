"""SQLite: embedded in the client (Python's sqlite3); durability by journal_mode and synchronous."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pickfs.databases.base import Database, Dialect, WriteBack
from pickfs.databases.values import ValueShape

if TYPE_CHECKING:
    from pathlib import Path

    from pickfs.model import WorkloadSpec
    from pickfs.services.base import Endpoint


LEVELS = {"0": "OFF", "1": "NORMAL", "2": "FULL", "3": "EXTRA"}  # PRAGMA synchronous's numbers
PAGE_SIZES = tuple(1 << k for k in range(9, 17))  # what SQLite accepts (512 to 65536 bytes); it ignores any other


class SqliteConnection:
    """sqlite3 in autocommit mode with explicit BEGIN IMMEDIATE, so writers queue instead of deadlocking."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.open = False

    def cursor(self) -> Any:
        if not self.open:
            self.conn.execute("BEGIN IMMEDIATE")
            self.open = True
        return self.conn.cursor()

    def commit(self) -> None:
        if self.open:
            self.conn.execute("COMMIT")
            self.open = False

    def rollback(self) -> None:
        # SQLite may have rolled back already (a full disk, an I/O error): a second ROLLBACK would hide why
        if self.open and self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self.open = False

    def close(self) -> None:
        self.conn.close()


class WalCheckpoint(WriteBack):
    def ask(self, conn: Any, k: int) -> str:
        # outside a transaction: inside BEGIN IMMEDIATE the checkpoint fails ("database table is locked")
        raw = conn.conn if isinstance(conn, SqliteConnection) else conn
        raw.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        return "a WAL checkpoint"


class Sqlite(Database):
    name = database = "sqlite"
    setting_shapes = {
        "synchronous": ValueShape("FULL", choices=("off", "normal", "full", "extra", "0", "1", "2", "3")),
        "journal_mode": ValueShape("WAL", choices=("delete", "truncate", "persist", "memory", "wal", "off")),
        "page_size": ValueShape("4096", choices=tuple(map(str, PAGE_SIZES))),
    }
    dialect = Dialect("?", "", " LIMIT 1")
    packages = ("sqlite3",)

    def connect(self, args: argparse.Namespace) -> tuple[SqliteConnection, tuple[type[BaseException], ...]]:
        import sqlite3  # deferred: the driver sqlite3, in its client only

        conn = sqlite3.connect(args.db, timeout=60, isolation_level=None, check_same_thread=False)
        try:
            if args.page_size:  # before anything is written: a database's page size is set when it is made
                conn.execute(f"PRAGMA page_size={int(args.page_size)}")
            conn.execute(f"PRAGMA journal_mode={args.journal_mode}")
            conn.execute(f"PRAGMA synchronous={args.synchronous}")
        except BaseException:
            # closed now, not when the garbage collector breaks the traceback's cycle: a crash check's client stays
            # up, and a damaged database's file held open kept the state's filesystem busy after its unmount
            conn.close()
            raise
        return SqliteConnection(conn), (sqlite3.OperationalError,)

    def in_force(self, conn: Any) -> dict[str, Any]:
        """The journal mode and synchronous level of the connection, and the library's version."""
        import sqlite3  # deferred: the driver sqlite3, in its client only

        raw = conn.conn if isinstance(conn, SqliteConnection) else conn
        mode = raw.execute("PRAGMA journal_mode").fetchone()[0]
        sync = raw.execute("PRAGMA synchronous").fetchone()[0]
        page = raw.execute("PRAGMA page_size").fetchone()[0]
        return {"journal_mode": str(mode).upper(), "synchronous": int(sync), "page_size": int(page),
                "sqlite_version": sqlite3.sqlite_version}

    def compact(self, args: argparse.Namespace) -> None:
        if args.journal_mode.upper() != "WAL":
            return
        import sqlite3  # deferred: the driver sqlite3, in its client only

        conn = sqlite3.connect(args.db, isolation_level=None)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()

    def own_check(self, tx: Any) -> str:
        """PRAGMA integrity_check's findings; one that stops on a page it cannot read ("database disk image is
        malformed") is a finding too, and the check goes on to read the commits that can be read."""
        import sqlite3  # deferred: the driver sqlite3, in its client only

        try:
            found = [r[0] for r in tx.q("PRAGMA integrity_check")]
        except sqlite3.DatabaseError as exc:
            return f"integrity_check stopped: {exc}"[:300]
        return "ok" if found == ["ok"] else "; ".join(found)[:300]

    def write_back(self, args: argparse.Namespace, every_s: float) -> WriteBack:
        # a rollback journal writes the database back at every commit: nothing to ask for
        return WalCheckpoint() if args.journal_mode.upper() == "WAL" else WriteBack()

    def installed_settings(self, found: dict[str, str]) -> dict[str, str]:
        """SQLite's compiled-in durability defaults, as the library pickfs's clients use has them."""
        import sqlite3  # deferred: the driver sqlite3, in its client only

        try:
            conn = sqlite3.connect(":memory:")
            try:
                sync = conn.execute("PRAGMA synchronous").fetchone()[0]
                options = [r[0] for r in conn.execute("PRAGMA compile_options")]
            finally:
                conn.close()
        except sqlite3.Error:
            return {}
        out = {"db.sqlite.version": sqlite3.sqlite_version, "db.sqlite.synchronous": LEVELS.get(str(sync), str(sync))}
        for o in options:
            if o.startswith("DEFAULT_WAL_SYNCHRONOUS="):
                level = o.split("=", 1)[1]
                out["db.sqlite.wal_synchronous"] = LEVELS.get(level, level)
        return out

    def connection_args(self, datadir: Path, endpoint: Endpoint | None, settings: dict[str, Any],
                        stem: str) -> list[str]:
        page = ["--page-size", str(settings["page_size"])] if settings.get("page_size") else []
        return ["--db", str(datadir / f"{stem}.db"), "--journal-mode", str(settings.get("journal_mode", "WAL")),
                "--synchronous", str(settings.get("synchronous", "FULL")), *page]

    def risks(self, spec: WorkloadSpec) -> list[str]:
        out = []
        sync, mode = spec.get("synchronous"), spec.get("journal_mode")
        if sync == "OFF":
            out.append("synchronous=OFF: SQLite acknowledges commits before they reach the disk; "
                       "a power cut can lose them or corrupt the database")
        elif sync == "NORMAL" and mode == "WAL":
            out.append("synchronous=NORMAL with WAL: a power cut can lose the last acknowledged commits")
        elif sync == "NORMAL":
            out.append("synchronous=NORMAL: a power cut at the wrong moment can corrupt a rollback-journal database")
        if mode in ("OFF", "MEMORY"):
            out.append(f"journal_mode={mode}: a crash in the middle of a transaction can corrupt the database")
        return out


DATABASE = Sqlite()
