"""What the literature says a database does when the disk fails a write or a flush, for the reports to set beside
what was measured (pure). Each finding names the database and the faults it speaks of; nothing here is measured."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

REBELLO = "Rebello et al., \"Can Applications Recover from fsync Failures?\", USENIX ATC 2020"


@dataclass(frozen=True)
class Finding:
    database: str
    faults: tuple[str, ...]  # the fault kinds it speaks of
    says: str


FINDINGS = (
    Finding("postgresql", ("flush", "write:wal"),
            "PostgreSQL since 11.2, 10.7 and 9.6.12 stops (PANIC) when an fsync fails and replays its WAL on restart "
            "(data_sync_retry=off, the default); before, a retried fsync could succeed after Linux had dropped the "
            "failed pages (\"fsyncgate\", 2018). " + REBELLO + ", found no acknowledged commit lost after the PANIC."),
    Finding("postgresql", ("write:data", "write:table"),
            "A failed write-back of a data file is reported by the checkpoint's fsync. With data_sync_retry=off "
            "(the default) PostgreSQL stops (PANIC) and replays its WAL on restart. With data_sync_retry=on it logs "
            "an ERROR and retries at the next checkpoint; ext4 and xfs have meanwhile marked the failed pages clean, "
            "their content kept in memory only (" + REBELLO + "), so that checkpoint succeeds without writing them, "
            "and the WAL before it is recycled: a change to a page written no more is lost once the page leaves "
            "memory (the \"fsyncgate\" loss, 2018)."),
    Finding("sqlite", ("flush", "write:wal"),
            "SQLite returns an I/O error (SQLITE_IOERR) for the commit whose write or fsync failed and rolls it back "
            "(" + REBELLO + ")."),
)


def findings_for(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """What the literature says of the (database, fault kind) pairs given, each finding once, in order (pure)."""
    wanted = set(pairs)
    return [f.says for f in FINDINGS if any((f.database, k) in wanted for k in f.faults)]
