"""The fault plan: which requests the disk fails, which occurrence, for how long, from which seed (pure)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from pickfs.errors import PlanError
from pickfs.units import parse_duration


@dataclass(frozen=True)
class FaultKind:
    """A kind of fault: the request the recorder fails ("write" or "flush"), and for writes which files' blocks."""

    name: str
    request: str
    text: str  # what fails, in words
    part: str = ""  # for writes: the part of the database whose blocks fail ("wal", "data")
    of_filesystem: bool = False  # for writes: aimed by the filesystem's own journal (faults/journal.py finds it)
    spares_journal: bool = False  # with of_filesystem: every write but the journal's fails, instead of the journal's

    def journal_ranges(self, journal: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The device's byte ranges a write must touch to fail, given the journal's (pure)."""
        return outside(journal) if self.spares_journal else journal

    def files(self, datadir: Path, layout: Layout, resolved: dict[str, str] | None = None) -> list[Path]:
        """The files whose blocks a write must touch to fail (none for a flush)."""
        return layout.files(datadir, self.part, resolved or {}) if self.part else []


@dataclass(frozen=True)
class Layout:
    """Where a database keeps each part under its data directory (glob patterns, which may name a file the
    database resolves once its tables exist: `queries`, each asked by the client after loading), and the
    settings a fault's outcome depends on (stated with every cell)."""

    parts: dict[str, tuple[str, ...]]
    shown: tuple[str, ...]
    queries: dict[str, str] = field(default_factory=dict)

    def files(self, datadir: Path, part: str, resolved: dict[str, str]) -> list[Path]:
        """The part's files now (a pattern naming a query not answered matches none)."""
        out: set[Path] = set()
        for pattern in self.parts.get(part, ()):
            try:
                named = pattern.format_map(resolved)
            except (KeyError, ValueError):
                continue
            out |= {p for p in datadir.glob(named) if p.is_file()}
        return sorted(out)


LAYOUTS = {
    "sqlite": Layout({"wal": ("commits.db-wal", "commits.db-journal"), "data": ("commits.db",)},
                     ("journal_mode", "synchronous")),
    # the commits table's own file (its rows written once, never changed again): the relation's file node
    "postgresql": Layout({"wal": ("pgdata/pg_wal/[0-9A-F]*",), "data": ("pgdata/base/*/[0-9]*",),
                          "table": ("pgdata/{commits_table}",)},
                         ("fsync", "synchronous_commit", "data_sync_retry"),
                         {"commits_table": "SELECT pg_relation_filepath('pickfs_commits')"}),
    "mariadb": Layout({"wal": ("mysql/ib_logfile[0-9]*",), "data": ("mysql/ibdata1", "mysql/sbtest/pickfs_*.ibd"),
                       "table": ("mysql/sbtest/pickfs_commits.ibd",)},
                      ("innodb_flush_method", "innodb_flush_log_at_trx_commit", "innodb_doublewrite")),
    # no write-ahead log: Firebird orders its page writes (careful write), all in the database file
    "firebird": Layout({"data": ("commits.fdb",)}, ("forced_writes",)),
    # the user's own command (crash/runner.py's PROGRAM): no files pickfs knows of; its server, if it has one
    "command": Layout({}, ("server",)),
}

KINDS = {k.name: k for k in (
    FaultKind("flush", "flush", "a cache flush fails"),
    FaultKind("write:wal", "write", "a write to the write-ahead log's blocks fails", "wal"),
    FaultKind("write:data", "write", "a write to the data files' blocks fails", "data"),
    # the case PostgreSQL's data_sync_retry decides ("fsyncgate"): a page written back once, failed, never again
    FaultKind("write:table", "write", "a write-back of the commits table's blocks fails (rows written once and "
              "never changed again; the next checkpoint is left to succeed)", "table"),
    FaultKind("write:journal", "write", "a write to the filesystem's journal fails", of_filesystem=True),
    # xfs retries a failed write-back of its metadata for ever by default: with --fault-for forever, a cell that hangs
    FaultKind("write:outside-journal", "write", "a write anywhere but the filesystem's journal fails (its metadata "
              "written back in place, and the data)", of_filesystem=True, spares_journal=True),
)}


@dataclass(frozen=True)
class FaultPlan:
    kind: FaultKind
    nth: int = 1  # the k-th matching request after commits flow is the first to fail
    times: int = 1  # how many fail (0: every one from then on)
    for_s: float = 0.0  # instead of `times`: every matching request for this long
    seed: int = 1
    arm_after_s: float = 1.0  # commits flowing this long before the fault is armed (drawn from the seed)

    @property
    def text(self) -> str:
        """The plan in words (pure)."""
        which = "the first" if self.nth == 1 else f"the {ordinal(self.nth)}"
        span = (f"every one for {self.for_s:g} s" if self.for_s else "every one from then on" if self.times == 0
                else "once" if self.times == 1 else f"{self.times} times")
        return (f"{self.kind.text}: {which} such request after {self.arm_after_s:.2f} s of commits, then {span} "
                f"(seed {self.seed})")

    def switch_spec(self, switch: Path, ranges: Path, injected: Path) -> dict[str, object]:
        """What the recorder is told (crash/recorder.py's FaultSwitch)."""
        return {"kind": self.kind.request, "nth": self.nth, "times": self.times, "for_s": self.for_s,
                "switch": str(switch), "ranges": str(ranges), "injected": str(injected)}


END = 2**62  # past the end of any device


def outside(ranges: list[tuple[int, int]], end: int = END) -> list[tuple[int, int]]:
    """The byte ranges [0, end) not in `ranges` (sorted, not overlapping) (pure)."""
    out, at = [], 0
    for start, stop in sorted(ranges):
        if start > at:
            out.append((at, start))
        at = max(at, stop)
    return out + ([(at, end)] if at < end else [])


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def parse_lasting(text: str) -> tuple[int, float]:
    """--fault-for: 'once', a count ('3'), a duration ('2s') or 'forever' -> (times, for_s) (pure)."""
    t = text.strip().lower()
    if t == "once":
        return 1, 0.0
    if t == "forever":
        return 0, 0.0
    if re.fullmatch(r"[0-9]{1,6}", t) and int(t) > 0:
        return int(t), 0.0
    try:
        seconds = parse_duration(t)
    except PlanError:
        seconds = 0.0
    if seconds <= 0:
        raise PlanError(f"--fault-for {text!r} is not once, a count, a duration or forever",
                        "e.g. --fault-for once, --fault-for 3, --fault-for 2s or --fault-for forever")
    return 0, seconds


def parse_faults(kinds: str, nth: int = 1, lasting: str = "once", seed: int = 1) -> list[FaultPlan]:
    """The fault plans --fault names (comma-separated kinds), checked (PlanError, exit 2) (pure)."""
    names = [k.strip() for k in kinds.split(",") if k.strip()]
    if not names:
        raise PlanError("--fault names no fault", f"use one or more of: {', '.join(KINDS)}")
    for name in names:
        if name not in KINDS:
            raise PlanError(f"--fault {name!r} is no fault pickfs injects", f"use one of: {', '.join(KINDS)}")
    if nth < 1:
        raise PlanError(f"--fault-at {nth}: the occurrence counts from 1", "e.g. --fault-at 3 (the third)")
    times, for_s = parse_lasting(lasting)
    arm = round(random.Random(seed).uniform(0.8, 1.6), 2)
    return [FaultPlan(KINDS[n], nth, times, for_s, seed, arm) for n in dict.fromkeys(names)]
