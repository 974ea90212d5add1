"""Causes pickfs has measured for a loss under a disk fault, for a cell's verdict to name when the cell matches (pure).

Each cause names the database, the fault kinds and the filesystem behaviour (a trait of the configuration, from
fsfacts) it needs; docs/disk-errors.md gives the runs behind it and the integration test that pins it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pickfs.fsfacts import UNWRITTEN_WRITE_BACK


@dataclass(frozen=True)
class Cause:
    database: str
    faults: tuple[str, ...]  # the fault kinds it speaks of
    trait: str  # what the configuration's filesystem does (fsfacts.traits)
    says: str


CAUSES = (
    Cause("postgresql", ("write:table", "write:data"), UNWRITTEN_WRITE_BACK,
          "ext4's unwritten extents (dioread_nolock, its default): the pages a failed write-back had newly "
          "allocated stayed unwritten, and the rewrite by PostgreSQL's WAL replay after its PANIC, though it reached "
          "the disk and its fsync succeeded, reads as zeros after a restart; with the mount option dioread_lock "
          "pickfs measured no loss in 4 runs of 4"),
)


def causes_for(database: str, fault: str, traits: Iterable[str]) -> list[str]:
    """The measured causes that fit a cell that lost acknowledged commits (pure)."""
    have = set(traits)
    return [c.says for c in CAUSES if c.database == database and fault in c.faults and c.trait in have]
