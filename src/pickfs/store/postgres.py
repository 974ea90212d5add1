"""The results database in PostgreSQL (`--results postgresql://...`): a team store for runs from many
machines and dates. The same tables, schema version and migrations as the SQLite file (store/results.py),
written through the same methods; only connecting, the SQL dialect's two type names and locking differ."""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from pickfs.errors import ResultsUnusable, ResultsWriteFailed
from pickfs.store.results import SCHEMA, SCHEMA_VERSION, ResultStore
from pickfs.store.sqlitefile import schema_problem

URL_PREFIXES = ("postgresql://", "postgres://")
FIX_URL = "check the URL (postgresql://USER@HOST/DB), that the server runs and that it lets this user in"


def is_postgres_url(spec: str) -> bool:
    return spec.startswith(URL_PREFIXES)


def masked(url: str) -> str:
    """The URL with its password, if any, replaced (pure): what messages and reports show."""
    url = re.sub(r"^(postgres(?:ql)?://[^:/@]*):[^@]*@", r"\1:***@", url)  # user:password@ (any character but @)
    return re.sub(r"([?&](?:ssl)?password=)[^&]*", r"\1***", url)  # ?password=... among the parameters


def pg_dialect(sql: str, with_params: bool = True) -> str:
    """SQLite's statements in PostgreSQL's words (pure): placeholders, 8-byte floats, a serial key."""
    sql = sql.replace("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY")
    sql = sql.replace(" REAL", " DOUBLE PRECISION")
    return sql.replace("%", "%%").replace("?", "%s") if with_params else sql


class _Connection:
    """The few calls ResultStore makes on an sqlite3 connection, on a psycopg one (autocommit: the store
    issues BEGIN and COMMIT itself)."""

    def __init__(self, raw: psycopg.Connection) -> None:
        self.raw = raw

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> psycopg.Cursor:
        return self.raw.execute(pg_dialect(sql, bool(params)), params or None)

    def executescript(self, script: str) -> None:
        for stmt in script.split(";"):
            if stmt.strip():
                self.execute(stmt)

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        self.raw.close()


class PostgresStore(ResultStore):
    errors = (psycopg.Error,)

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = masked(url)
        self.conn = None
        self._failed: ResultsWriteFailed | None = None
        try:
            raw = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ResultsUnusable(f"cannot use the results database {self.path}: {reason}", FIX_URL) from None
        self.conn = _Connection(raw)
        try:
            self._migrate(self._existing_version())
        except psycopg.Error as exc:
            self.conn.close()
            raise ResultsUnusable(f"cannot set up the results database {self.path}: {exc}", FIX_URL) from None

    def _existing_version(self) -> int | None:
        """The stored schema version; None for an empty database. Refuses another program's tables."""
        tables = {r[0] for r in self._conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()").fetchall()}
        row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() \
            if "meta" in tables else None
        version = None if row is None else str(row[0])
        problem = schema_problem(tables & {"meta", "runs", "trials"} or tables, version, SCHEMA_VERSION)
        if problem:
            raise ResultsUnusable(f"results database {self.path} {problem}",
                                  "use another database (or schema) for pickfs's results")
        return int(version) if version is not None else None

    # -- backend ---------------------------------------------------------------------------
    def _create_tables(self) -> None:
        self._conn.executescript(SCHEMA)

    def _begin_exclusive(self) -> None:
        self._conn.execute("BEGIN")
        # Two pickfs creating or migrating the same database at once: the second waits for the first.
        self._conn.execute("SELECT pg_advisory_xact_lock(7261636)")

    def _in_transaction(self) -> bool:
        return self._conn.in_transaction

    def _failure(self, exc: BaseException, run_id: str | None) -> ResultsWriteFailed:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        fix = "check the server and its disk"
        if run_id:
            fix += f"; the trials saved so far are kept: continue with pickfs run --resume {run_id}"
        return ResultsWriteFailed(f"cannot write the results database {self.path}: {reason}", fix)
