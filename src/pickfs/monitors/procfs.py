"""Parsers for /proc files (pure): one function per file format."""

from __future__ import annotations

import re
from dataclasses import dataclass

SECTOR = 512


@dataclass(frozen=True)
class CpuTimes:
    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @property
    def total(self) -> int:
        return self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal


def parse_cpu(text: str) -> CpuTimes:
    """The aggregate 'cpu' line of /proc/stat, in clock ticks."""
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == "cpu":
            vals = [int(x) for x in f[1:9]] + [0] * (8 - len(f[1:9]))
            return CpuTimes(*vals)
    raise ValueError("no cpu line in /proc/stat")


def parse_psi(text: str) -> tuple[int, int]:
    """/proc/pressure/io -> (some total, full total) in microseconds."""
    totals = {"some": 0, "full": 0}
    for line in text.splitlines():
        f = line.split()
        if f and f[0] in totals:
            for kv in f[1:]:
                if kv.startswith("total="):
                    totals[f[0]] = int(kv.split("=", 1)[1])
    return totals["some"], totals["full"]


def parse_pid_io(text: str) -> dict[str, int]:
    """/proc/<pid>/io -> {'rchar': .., 'wchar': .., 'read_bytes': .., 'write_bytes': .., ...}."""
    out = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k.strip()] = int(v)
    return out


def parse_pid_stat(text: str) -> tuple[str, str]:
    """/proc/<pid>/stat -> (comm, state letter: R running, S sleeping, D waiting on I/O, ...)."""
    open_paren, close_paren = text.index("("), text.rindex(")")
    return text[open_paren + 1:close_paren], text[close_paren + 2:close_paren + 3]


@dataclass(frozen=True)
class DiskCounters:
    reads: int
    sectors_read: int
    writes: int
    sectors_written: int
    in_flight: int
    io_ticks_ms: int
    queue_ms: int
    discards: int
    flushes: int

    @property
    def bytes_written(self) -> int:
        return self.sectors_written * SECTOR

    @property
    def bytes_read(self) -> int:
        return self.sectors_read * SECTOR


def parse_disk(text: str, name: str) -> DiskCounters | None:
    """One device's line of /proc/diskstats (discard and flush fields when the kernel has them)."""
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 14 and f[2] == name:
            v = [int(x) for x in f[3:]] + [0] * 17
            return DiskCounters(reads=v[0], sectors_read=v[2], writes=v[4], sectors_written=v[6], in_flight=v[8],
                                io_ticks_ms=v[9], queue_ms=v[10], discards=v[11], flushes=v[15])
    return None



def parse_stat_fields(text: str) -> tuple[str, str, int]:
    """/proc/<pid>/stat -> (comm, state letter, parent pid)."""
    open_paren, close_paren = text.index("("), text.rindex(")")
    rest = text[close_paren + 2:].split()
    return text[open_paren + 1:close_paren], rest[0], int(rest[1])


def parse_jbd2_info(text: str, block_size: int) -> int | None:
    """/proc/fs/jbd2/<dev>-8/info -> bytes the journal has logged since mount: transactions times
    the logged blocks per transaction (each an integer average since mount, so an estimate)."""
    tx = re.search(r"^(\d+) transactions", text, re.MULTILINE)
    logged = re.search(r"^\s*(\d+) logged blocks per transaction", text, re.MULTILINE)
    if not tx or not logged:
        return None
    return int(tx.group(1)) * int(logged.group(1)) * block_size


def parse_xfs_log(text: str) -> int | None:
    """/sys/fs/xfs/<dev>/stats/stats -> bytes written to the log (its 'log' line counts 512-byte blocks)."""
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0] == "log":
            return int(f[2]) * SECTOR
    return None
