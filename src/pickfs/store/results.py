"""Results in an SQLite file: runs, their cells, and every trial with its raw output."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pickfs.errors import NotFound, ResultsUnusable, ResultsWriteFailed
from pickfs.model import RESULT_PHASES, RaceRound, RunRecord, Trial
from pickfs.store import stored
from pickfs.store.fleets import FLEET_SCHEMA, FleetMixin
from pickfs.store.sqlitefile import (
    OPEN_HERE,
    OTHER_FILE,
    columns_problem,
    create_private,
    existing_version,
    full_disk,
    no_space,
    read_only_connection,
    remove_created,
    remove_side_files,
    side_files,
    strict_text,
    writable_path,
    write_failure,
)

SCHEMA_VERSION = 5

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    status TEXT NOT NULL,
    pickfs_version TEXT NOT NULL,
    plan_json TEXT NOT NULL,
    host_json TEXT NOT NULL,
    notes_json TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    cell_index INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    phase TEXT NOT NULL,
    started REAL NOT NULL,
    elapsed_s REAL NOT NULL,
    ok INTEGER NOT NULL,
    metrics_json TEXT NOT NULL,
    raw_output TEXT NOT NULL,
    mount_json TEXT NOT NULL,
    notes_json TEXT NOT NULL,
    error TEXT NOT NULL,
    monitor_json TEXT NOT NULL DEFAULT '{}',
    block INTEGER NOT NULL DEFAULT 0,
    round INTEGER
);
CREATE INDEX IF NOT EXISTS trials_run ON trials(run_id, cell_index);
"""
# The decision trail of every race (engine/race.py): each round's decision as it was acted on, and why it stopped.
RACE_ROUNDS = ("CREATE TABLE IF NOT EXISTS race_rounds (id INTEGER PRIMARY KEY AUTOINCREMENT, "
               "run_id TEXT NOT NULL REFERENCES runs(id), workload TEXT NOT NULL, round INTEGER NOT NULL, "
               "decision_json TEXT NOT NULL, stop TEXT)",
               "CREATE INDEX IF NOT EXISTS race_rounds_run ON race_rounds(run_id)")
SCHEMA += "".join(f"{stmt};\n" for stmt in RACE_ROUNDS)
SCHEMA += "".join(f"{stmt};\n" for stmt in FLEET_SCHEMA)

# _MIGRATIONS[v]: statements that take schema v to v + 1
_MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: ("ALTER TABLE trials ADD COLUMN monitor_json TEXT NOT NULL DEFAULT '{}'",),
    2: ("ALTER TABLE trials ADD COLUMN block INTEGER NOT NULL DEFAULT 0", "ALTER TABLE trials ADD COLUMN round INTEGER"),
    3: FLEET_SCHEMA,
    4: RACE_ROUNDS,
}


@functools.cache
def schema_columns() -> dict[str, set[str]]:
    """Every table of this schema with its columns, read from a database made with it in memory."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(SCHEMA)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE "
                                             "'sqlite_%'")]
        return {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t in tables}
    finally:
        conn.close()


def check_columns(conn: sqlite3.Connection, path: Path) -> None:
    """ResultsUnusable when a table lacks a column this pickfs reads (a file that claims a schema it has not)."""
    want = schema_columns()
    have = {t: {str(r[1]) for r in conn.execute(f"PRAGMA table_info({t})")} for t in want}
    problem = columns_problem(have, want)
    if problem:
        raise ResultsUnusable(f"results database {path} {problem}", OTHER_FILE)


@dataclass(frozen=True)
class RunSummaryRow:
    id: str
    created: float
    status: str
    configs: int
    workloads: str
    trials_ok: int
    trials_failed: int


class StoreCursor(Protocol):
    """The rows of a statement: an sqlite3 or a psycopg cursor."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class StoreConnection(Protocol):
    """The calls a store makes on its connection: an sqlite3 one, or store/postgres.py's over psycopg."""

    def execute(self, sql: str, parameters: tuple[Any, ...] = ..., /) -> StoreCursor: ...

    def executescript(self, sql_script: str, /) -> object: ...

    @property
    def in_transaction(self) -> bool: ...

    def close(self) -> None: ...


def new_run_id(now: float | None = None) -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + "-" + uuid.uuid4().hex[:4]


class ResultStore(FleetMixin):
    """Runs in an SQLite file. store/postgres.py keeps the same tables in PostgreSQL, behind the same methods;
    the few places where the two differ are the methods marked 'backend' below."""

    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.conn: StoreConnection | None = None
        self._failed: ResultsWriteFailed | None = None  # once a write failed, every later write fails too
        real = writable_path(self.path)  # no other user's link on the way; missing directories made 0700
        version = existing_version(real, SCHEMA_VERSION)  # read-only: a refused file is never changed
        if no_space(real.parent):  # before SQLite makes a -wal and a -shm it could not fill
            raise full_disk(self.path)
        created, open_here, before = False, str(real) in OPEN_HERE, side_files(real)
        try:
            created = create_private(real)
            conn = sqlite3.connect(real, isolation_level=None, timeout=30)
            conn.text_factory = strict_text(self.path)
            self.conn = conn
            OPEN_HERE.add(str(real))
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")
            self._migrate(version)
            check_columns(conn, self.path)
        except (sqlite3.Error, OSError, ResultsUnusable) as exc:
            if self.conn is not None:
                self.conn.close()
            if not open_here:  # this store's own open failed: nothing of it is left beside the user's file
                OPEN_HERE.discard(str(real))
                remove_side_files(real, side_files(real) - before)
            if created:
                remove_created(real)
            if isinstance(exc, ResultsUnusable):
                raise
            if isinstance(exc, sqlite3.DatabaseError) and getattr(exc, "sqlite_errorname", "") in (
                    "SQLITE_CORRUPT", "SQLITE_NOTADB"):
                raise ResultsUnusable(f"results database {self.path} is damaged ({exc})", OTHER_FILE) from None
            raise write_failure(self.path, exc) from None

    @classmethod
    def read_only(cls, path: Path) -> ResultStore:
        """A results file to read runs from (`pickfs merge FILE`, `report`, `results`, `compare`): no file is
        created or changed, beside it or in it. An older schema is brought up to date in a copy in memory."""
        path = Path(path)
        if not path.is_file():
            what = "does not exist" if not os.path.lexists(path) else "is not a regular file"
            raise ResultsUnusable(f"results database {path} {what}", "name a results.db pickfs wrote "
                                  "(pickfs run makes one)")
        version = existing_version(path, SCHEMA_VERSION)  # refuses a damaged file and a newer schema
        if version is None:
            raise ResultsUnusable(f"results database {path} is empty", "name a results.db pickfs wrote")
        store = cls.__new__(cls)
        store.path, store.conn, store._failed = path, None, None
        try:
            conn = read_only_connection(path)
            if version != SCHEMA_VERSION:  # migrated in memory, never in the file
                mem = sqlite3.connect(":memory:", isolation_level=None)
                conn.backup(mem)
                conn.close()
                conn = mem
                store.conn = conn
                store._migrate(version)
            conn.text_factory = strict_text(path)
            store.conn = conn
            check_columns(conn, path)
            store.conn.execute("SELECT 1 FROM runs LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            store.close()
            raise ResultsUnusable(f"results database {path} cannot be read ({exc})", OTHER_FILE) from None
        except ResultsUnusable:
            store.close()
            raise
        return store

    @property
    def _conn(self) -> StoreConnection:
        """The connection, once __init__ has made it."""
        if self.conn is None:
            raise RuntimeError(f"results database {self.path} has no connection")
        return self.conn

    def _migrate(self, version: int | None) -> None:
        """Create the tables of a new database, or take an older schema to this one, in one transaction."""
        if version is None:
            self._create_tables()
        self._begin_exclusive()
        try:
            row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                self._conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:  # a newer pickfs upgraded it meanwhile
                raise ResultsUnusable(f"results database {self.path} was written by a newer pickfs (schema "
                                      f"{row[0]})", "upgrade pickfs, or pass --results PATH to use another file")
            elif int(row[0]) < SCHEMA_VERSION:
                for step in range(int(row[0]), SCHEMA_VERSION):
                    for stmt in _MIGRATIONS[step]:
                        self._conn.execute(stmt)
                self._conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
            self._conn.execute("COMMIT")
        except BaseException:
            if self._in_transaction():
                self._conn.execute("ROLLBACK")
            raise

    # -- backend ---------------------------------------------------------------------------
    def _create_tables(self) -> None:
        self._conn.executescript(SCHEMA)

    def _begin_exclusive(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def _in_transaction(self) -> bool:
        return bool(self._conn.in_transaction)

    def _failure(self, exc: BaseException, run_id: str | None) -> ResultsWriteFailed:
        return write_failure(self.path, exc, run_id)

    # -- writing ---------------------------------------------------------------------------
    def _write(self, run_id: str, *statements: tuple[str, tuple[Any, ...]], running: bool = True) -> None:
        """The statements in one transaction (one commit, one sync); a failure (disk full, I/O error)
        rolls it back, names the file and the fix, and sticks. A run this pickfs is `running` is then marked
        failed, and the fix says how to resume it."""
        if self._failed is not None:
            raise self._failed
        try:
            self._conn.execute("BEGIN")
            for sql, params in statements:
                self._conn.execute(sql, params)
            self._conn.execute("COMMIT")
        except self.errors as exc:
            if self._in_transaction():
                self._conn.execute("ROLLBACK")
            self._failed = self._failure(exc, run_id if running else None)
            if running:
                self._mark_failed(run_id)
            raise self._failed from None

    def _mark_failed(self, run_id: str) -> None:
        """Best effort: a run whose trial could not be saved is not left 'running'."""
        try:
            self._conn.execute("UPDATE runs SET status='failed', updated=? WHERE id=? AND status='running'",
                               (time.time(), run_id))
        except self.errors:
            pass

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()

    # -- writing -----------------------------------------------------------------------
    def create_run(self, run_id: str, version: str, plan: dict[str, Any], host: dict[str, Any]) -> None:
        now = time.time()
        self._write(run_id, ("INSERT INTO runs (id, created, updated, status, pickfs_version, plan_json, host_json)"
                             " VALUES (?, ?, ?, 'running', ?, ?, ?)",
                             (run_id, now, now, version, json.dumps(plan), json.dumps(host))))

    def write_statements(self, run_id: str, *statements: tuple[str, tuple[Any, ...]]) -> None:
        """Statements of the run's in one transaction, as the store writes its own (store/merge.py's rows): a run
        this pickfs is not running, neither marked failed nor offered to resume when they fail."""
        self._write(run_id, *statements, running=False)

    def set_status(self, run_id: str, status: str) -> None:
        self._write(run_id, ("UPDATE runs SET status=?, updated=? WHERE id=?", (status, time.time(), run_id)))

    def add_note(self, run_id: str, note: str) -> None:
        notes = list(self._row(run_id)["notes"])
        if note not in notes:
            notes.append(note)
            self._write(run_id, ("UPDATE runs SET notes_json=? WHERE id=?", (json.dumps(notes), run_id)))

    def save_trial(self, t: Trial) -> None:
        """One transaction per trial, durable before the next trial starts."""
        self._write(
            t.run_id,
            ("INSERT INTO trials (run_id, cell_index, repetition, phase, started, elapsed_s, ok, metrics_json,"
             " raw_output, mount_json, notes_json, error, monitor_json, block, round)"
             " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
             (t.run_id, t.cell_index, t.repetition, t.phase, t.started, t.elapsed_s, int(t.ok),
              json.dumps(t.metrics), t.raw_output, json.dumps(t.mount), json.dumps(list(t.notes)), t.error,
              json.dumps(t.monitor), t.block, t.round)),
            ("UPDATE runs SET updated=? WHERE id=?", (time.time(), t.run_id)))

    def save_race_round(self, run_id: str, step: RaceRound) -> None:
        """A race's decision after a round, durable as the trials are, before the race acts on it."""
        self._write(run_id, race_round_insert(run_id, step))

    # -- reading -----------------------------------------------------------------------
    def _row(self, run_id: str) -> dict[str, Any]:
        row = self._conn.execute(
            "SELECT id, created, updated, status, pickfs_version, plan_json, host_json, notes_json"
            " FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise NotFound(f"no run {run_id!r} in {self.path}", "list runs with: pickfs results")
        try:
            notes = stored.loads(row[7], list, "notes")
            if not all(isinstance(n, str) for n in notes) or not isinstance(row[3], str) or \
                    not all(isinstance(t, (int, float)) for t in (row[1], row[2])):
                raise stored.Damaged("its status, times or notes are not what pickfs writes")
            return {"id": row[0], "created": row[1], "updated": row[2], "status": row[3], "version": str(row[4]),
                    "plan": stored.check_plan(stored.loads(row[5], dict, "plan")),
                    "host": stored.check_host(stored.loads(row[6], dict, "host record")), "notes": notes}
        except stored.Damaged as exc:
            raise self._damaged(run_id, str(exc)) from None

    def _damaged(self, run_id: str, why: str) -> ResultsUnusable:
        return ResultsUnusable(f"{self.path} holds a damaged run {run_id}: {why}",
                               "report another run, or restore the file from a copy pickfs wrote")

    def resolve(self, ref: str) -> str:
        """A run id, a unique prefix of one, or 'latest'."""
        if ref == "latest":
            row = self._conn.execute("SELECT id FROM runs ORDER BY created DESC LIMIT 1").fetchone()
            if row is None:
                raise NotFound(f"no runs in {self.path}", "start one with: pickfs run")
            return str(row[0])
        rows = [r for r in self._conn.execute("SELECT id FROM runs").fetchall() if r[0].startswith(ref)]
        if any(r[0] == ref for r in rows):  # a whole id, though it is also the start of another's
            return ref
        if len(rows) == 1:
            return str(rows[0][0])
        if not rows:
            raise NotFound(f"no run {ref!r} in {self.path}", "list runs with: pickfs results")
        raise NotFound(f"{ref!r} matches {len(rows)} runs", "give more of the run id")

    def load(self, ref: str) -> RunRecord:
        run_id = self.resolve(ref)
        r = self._row(run_id)
        try:
            trials = tuple(self._trial(run_id, row) for row in self._conn.execute(
                "SELECT cell_index, repetition, phase, started, elapsed_s, ok, metrics_json, raw_output,"
                " mount_json, notes_json, error, monitor_json, block, round FROM trials WHERE run_id=? ORDER BY id",
                (run_id,)))
            race_rounds = tuple(stored.race_round(row) for row in self._conn.execute(
                "SELECT workload, round, decision_json, stop FROM race_rounds WHERE run_id=? ORDER BY id", (run_id,)))
        except stored.Damaged as exc:
            raise self._damaged(run_id, str(exc)) from None
        return RunRecord(run_id, r["created"], r["updated"], r["status"], r["version"], r["plan"], r["host"],
                         tuple(r["notes"]), trials, race_rounds)

    @staticmethod
    def _trial(run_id: str, row: Any) -> Trial:
        stored.check_trial_row(row)
        notes = stored.loads(row[9], list, "trial notes")
        return Trial(run_id=run_id, cell_index=row[0], repetition=row[1], phase=row[2], started=row[3],
                     elapsed_s=row[4], ok=bool(row[5]),
                     metrics=stored.check_metrics(stored.loads(row[6], dict, "trial metrics")),
                     raw_output=str(row[7]), mount=stored.check_mount(stored.loads(row[8], dict, "trial mount")),
                     notes=tuple(str(n) for n in notes), error=str(row[10]),
                     monitor=stored.check_monitor(stored.loads(row[11], dict, "trial monitors")), block=row[12] if isinstance(row[12], int)
                     else 0, round=row[13] if isinstance(row[13], int) else None)

    def run_ids(self) -> set[str]:
        return {r[0] for r in self._conn.execute("SELECT id FROM runs").fetchall()}

    def list_runs(self) -> list[RunSummaryRow]:
        out = []
        for row in self._conn.execute(
            "SELECT r.id, r.created, r.status, r.plan_json,"
            " (SELECT COUNT(*) FROM trials t WHERE t.run_id=r.id AND t.ok=1 AND t.phase IN"
            f" ({', '.join('?' for _ in RESULT_PHASES)})),"
            " (SELECT COUNT(*) FROM trials t WHERE t.run_id=r.id AND t.ok=0)"
            " FROM runs r ORDER BY r.created", RESULT_PHASES
        ):
            try:
                plan = stored.check_plan(stored.loads(row[3], dict, "plan"))
                configs, workloads = len(plan["configs"]), ",".join(w["label"] for w in plan["workloads"])
            except stored.Damaged as exc:
                configs, workloads = 0, f"(damaged: {exc})"
            out.append(RunSummaryRow(str(row[0]), row[1] if isinstance(row[1], (int, float)) else 0.0, str(row[2]),
                                     configs, workloads, row[4], row[5]))
        return out


def race_round_insert(run_id: str, step: RaceRound) -> tuple[str, tuple[Any, ...]]:
    """The statement that stores a race's round (pure): here as the race runs, and when runs are merged."""
    return ("INSERT INTO race_rounds (run_id, workload, round, decision_json, stop) VALUES (?, ?, ?, ?, ?)",
            (run_id, step.label, step.round, json.dumps(step.decision), step.stop))


def default_results_path(workdir: str) -> Path:
    return Path(os.environ.get("PICKFS_RESULTS") or Path(workdir) / "results.db")
