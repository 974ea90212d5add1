"""PostgreSQL: a server pickfs starts (services/postgresql.py), reached with psycopg over its socket."""

from __future__ import annotations

import argparse
import glob
from typing import TYPE_CHECKING, Any

from pickfs.databases.base import Database, Dialect, Driver, TornPage, WriteBack, conf_values
from pickfs.databases.values import BOOL, ValueShape

if TYPE_CHECKING:
    from pathlib import Path

    from pickfs.model import WorkloadSpec
    from pickfs.services.base import Endpoint

PG_SIZE = ValueShape("128MB", r"[0-9]{1,12}(B|kB|MB|GB|TB)?", case_sensitive=True)
FINGERPRINT_KEYS = ("fsync", "synchronous_commit", "wal_sync_method", "full_page_writes", "commit_delay", "wal_level")
RISKS = {
    ("fsync", "off"): "fsync=off: PostgreSQL never forces writes to disk; a power cut can lose acknowledged "
                      "commits and corrupt the database",
    ("synchronous_commit", "off"): "synchronous_commit=off: commits are acknowledged before their WAL is on disk; "
                                   "a power cut loses the last ones (the database stays consistent)",
    ("full_page_writes", "off"): "full_page_writes=off: a torn page after a power cut can corrupt the database",
    ("data_sync_retry", "on"): "data_sync_retry=on: after a failed fsync of a data file PostgreSQL retries "
                               "instead of stopping; the kernel may have dropped the failed pages, so "
                               "acknowledged commits can be lost silently",
}


class CheckpointOrSwitch(WriteBack):
    """Every other request a WAL segment switch, else a checkpoint."""

    def ask(self, conn: Any, k: int) -> str:
        cur = conn.cursor()
        if k % 2:
            cur.execute("SELECT pg_switch_wal()")
            what = "a WAL segment switch"
        else:
            cur.execute("CHECKPOINT")
            what = "a checkpoint"
        conn.commit()
        return what


class PostgreSQL(Database):
    name = database = service = "postgresql"
    setting_shapes = {
        "shared_buffers": PG_SIZE,
        "max_wal_size": PG_SIZE,
        "checkpoint_timeout": ValueShape("5min", r"[0-9]{1,9}(us|ms|s|min|h|d)?", case_sensitive=True),
        "fsync": ValueShape("on", choices=BOOL),
        "full_page_writes": ValueShape("on", choices=BOOL),
        "data_sync_retry": ValueShape("off", choices=BOOL),
        "synchronous_commit": ValueShape("on", choices=(*BOOL, "local", "remote_write", "remote_apply")),
        "wal_sync_method": ValueShape("fdatasync", choices=("fsync", "fdatasync", "open_sync", "open_datasync",
                                                             "fsync_writethrough")),
    }
    driver = Driver("psycopg", "psycopg[binary]")
    dialect = Dialect("%s", " FOR UPDATE", " LIMIT 1")
    page_bytes = 8192
    torn_page_settings = (TornPage("full_page_writes", ("off",)),)
    packages = ("postgresql-[0-9]*",)

    def connect(self, args: argparse.Namespace) -> tuple[Any, tuple[type[BaseException], ...]]:
        import psycopg  # deferred: the driver psycopg, in its client only

        conn = psycopg.connect(host=args.host, port=args.port, user=args.user, dbname=args.database)
        return conn, (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected)

    def settle_load(self, tx: Any) -> None:
        # recovery starts after the tables' pages exist: a torn one cannot be rebuilt
        tx.q("CHECKPOINT")
        tx.commit()

    def own_check(self, tx: Any) -> str:
        # a damaged state can leave a transaction that looks running for ever: a query waiting on it is cancelled
        tx.q("SET statement_timeout = '60s'")
        tx.q("CREATE EXTENSION IF NOT EXISTS amcheck")
        for index in ("pickfs_commits_pkey", "pickfs_accounts_pkey"):
            tx.q("SELECT bt_index_parent_check(?::regclass, true)", (index,))
        return "ok"

    def write_back(self, args: argparse.Namespace, every_s: float) -> WriteBack:
        return CheckpointOrSwitch()

    def discarded_check_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        # fsync=off: the start-up's flush of every file of the data directory (about a thousand flushes, each one
        # through the recorder; a failure there is only logged) and the end-of-recovery checkpoint's flushes are
        # left out; the WAL read and replayed, the pages written and what the check reads are the same, and what
        # the checkpoint writes reaches the disk at the unmount all the same
        return {**settings, "fsync": "off"}

    def connection_args(self, datadir: Path, endpoint: Endpoint | None, settings: dict[str, Any],
                        stem: str) -> list[str]:
        assert endpoint is not None, "postgresql needs its server started"
        return ["--host", endpoint.socket_dir, "--port", str(endpoint.port), "--user", endpoint.user,
                "--database", endpoint.database]

    def risks(self, spec: WorkloadSpec) -> list[str]:
        return [risk for (key, bad), risk in RISKS.items() if str(spec.get(key, "")).lower() == bad]

    def installed_settings(self, found: dict[str, str]) -> dict[str, str]:
        paths = sorted(glob.glob("/etc/postgresql/*/main/postgresql.conf"))
        return {f"db.postgresql.{k}": v for k, v in conf_values(paths, FINGERPRINT_KEYS).items()}

    def server_settings(self) -> tuple[str, ...]:
        from pickfs.services.postgresql import SETTINGS  # deferred: cycle with services; no server in clients

        return tuple(SETTINGS)


DATABASE = PostgreSQL()
