"""MariaDB (or MySQL): a server pickfs starts (services/mariadb.py), reached with PyMySQL over its socket."""

from __future__ import annotations

import argparse
import glob
import time
from typing import TYPE_CHECKING, Any

from pickfs.databases.base import Database, Dialect, Driver, TornPage, WriteBack, conf_values
from pickfs.databases.values import BOOL, ValueShape

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from pickfs.model import WorkloadSpec
    from pickfs.services.base import Endpoint


FINGERPRINT_KEYS = ("innodb_flush_log_at_trx_commit", "innodb_flush_method", "sync_binlog", "innodb_doublewrite",
                    "innodb_flush_log_at_timeout")


# A loss pickfs measured under InnoDB's defaults and traced to InnoDB's own recovery (docs/crash-testing.md, MariaDB):
# the symptoms a crash state's check reports of it (MariaDB 10.11's errors 1877 and 194 on the table whose first page
# recovery left torn), and what it is.
TORN_FIRST_PAGE_SAID = ("is corrupted. Please drop the table and recreate", "Tablespace is missing for a table")
TORN_FIRST_PAGE = ("InnoDB's crash recovery left the table's first page (its tablespace header) torn although a "
                   "whole copy of it was in the doublewrite buffer on disk (MariaDB 10.11: \"The first page of file "
                   "... is corrupted\"): a real loss a disk that tears a 16 KiB write can cause, measured by pickfs, "
                   "not a state no disk can reach")


def _binlog_unsynced(spec: WorkloadSpec) -> bool:
    return str(spec.get("sync_binlog", "")) == "0" and \
        str(spec.get("log_bin", "")).lower() not in ("", "none", "0", "off")


# --- crash moments around write-back (crash-fidelity work) ---
class InnoDBPageFlush(WriteBack):
    """InnoDB's nearest to a checkpoint, while commits go on: the page cleaner is told to write every dirty
    page, and a moment later the old limit returns.

    The limit is put back because a page cleaner kept at 0 flushes the log before every page it writes,
    which would make a lazy log flush (innodb_flush_log_at_trx_commit = 2) look safe for the rest of the run.
    """

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self.before: float | None = None
        self.until = 0.0

    def start(self, cur: Any) -> None:
        if self.before is None:
            cur.execute("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
            self.before = float(cur.fetchall()[0][0])
        cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        self.until = time.monotonic() + self.hold_s

    def end_if_due(self, conn: Any) -> None:
        if self.until and time.monotonic() >= self.until:
            conn.cursor().execute(f"SET GLOBAL innodb_max_dirty_pages_pct = {self.before}")
            self.until = 0.0

    def ask(self, conn: Any, k: int) -> str:
        self.start(conn.cursor())
        conn.commit()
        return "a page flush"

    def tick(self, conn: Any) -> None:
        self.end_if_due(conn)


class MariaDB(Database):
    name = database = service = "mariadb"
    setting_shapes = {
        "innodb_buffer_pool_size": ValueShape("512M", r"[0-9]{1,15}[KMGT]?"),
        "innodb_flush_log_at_trx_commit": ValueShape("1", choices=("0", "1", "2", "3")),
        "innodb_flush_method": ValueShape("O_DIRECT", choices=("fsync", "o_dsync", "littlesync", "nosync", "o_direct",
                                                                "o_direct_no_fsync", "0", "1", "2", "3", "4", "5")),
        "sync_binlog": ValueShape("1", r"[0-9]{1,10}"),
        "innodb_doublewrite": ValueShape("on", choices=(*BOOL, "fast")),
        "log_bin": ValueShape("binlog", r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"),  # a base name in the data directory
    }
    driver = Driver("pymysql", "PyMySQL")
    dialect = Dialect("%s", " FOR UPDATE", " LIMIT 1")
    page_bytes = 16384
    torn_page_settings = (TornPage("innodb_doublewrite", ("0", "off")),)
    packages = ("mariadb-server", "mysql-server")

    def connect(self, args: argparse.Namespace) -> tuple[Any, tuple[type[BaseException], ...]]:
        import pymysql  # deferred: the driver pymysql, in its client only

        conn = pymysql.connect(unix_socket=args.socket, user=args.user, database=args.database, autocommit=False)
        return conn, (pymysql.err.OperationalError,)

    def own_check(self, tx: Any) -> str:
        bad = [f"{r[0]}: {r[3]}" for r in tx.q("CHECK TABLE pickfs_commits, pickfs_accounts EXTENDED")
               if r[2] in ("error", "Error") or (r[2] == "status" and r[3] != "OK")]
        return "ok" if not bad else "; ".join(bad)[:300]

    def write_back(self, args: argparse.Namespace, every_s: float) -> WriteBack:
        return InnoDBPageFlush(hold_s=min(0.3, every_s / 2))

    def connection_args(self, datadir: Path, endpoint: Endpoint | None, settings: dict[str, Any],
                        stem: str) -> list[str]:
        assert endpoint is not None, "mariadb needs its server started"
        return ["--socket", endpoint.env["MYSQL_UNIX_PORT"], "--user", endpoint.user, "--database", endpoint.database]

    def risks(self, spec: WorkloadSpec) -> list[str]:
        out = []
        flush = str(spec.get("innodb_flush_log_at_trx_commit", "1"))
        if flush in ("0", "2"):
            out.append(f"innodb_flush_log_at_trx_commit={flush}: the log is flushed about once a second, not at "
                       "commit; a power cut can lose the last second of acknowledged commits")
        if str(spec.get("innodb_doublewrite", "")).lower() in ("0", "off"):
            out.append("innodb_doublewrite=0: a torn page after a power cut can corrupt the database")
        if _binlog_unsynced(spec):
            out.append("sync_binlog=0 with a binary log: the binlog can lose transactions the tables kept")
        return out

    def crash_cause(self, problem: str, settings: Mapping[str, Any], torn: int = 0) -> str:
        """The cause pickfs measured that a failed crash state's problem fits ('' when none): with the doublewrite
        buffer on, a table lost because recovery did not mend its torn first page from it (pure). Without the
        doublewrite buffer a torn page is the setting's own risk, said by `risks`."""
        if str(settings.get("innodb_doublewrite", "on")).lower() in ("0", "off"):
            return ""
        return TORN_FIRST_PAGE if any(said in problem for said in TORN_FIRST_PAGE_SAID) else ""

    def crash_check_blind_spots(self, spec: WorkloadSpec) -> list[str]:
        if not _binlog_unsynced(spec):
            return []
        return ["sync_binlog=0: its risk is a binary log behind the tables, and the crash check reads only the "
                "tables: no verdict on this setting"]

    def installed_settings(self, found: dict[str, str]) -> dict[str, str]:
        paths = sorted(glob.glob("/etc/mysql/**/*.cnf", recursive=True)) + ["/etc/mysql/my.cnf"]
        return {f"db.mysql.{k}": v for k, v in conf_values(paths, FINGERPRINT_KEYS).items()}

    def server_settings(self) -> tuple[str, ...]:
        from pickfs.services.mariadb import SETTINGS  # deferred: cycle with services.mariadb; clients load no server

        return tuple(SETTINGS)


DATABASE = MariaDB()
