"""Parsers for /proc files (pure): one function per file format."""

from __future__ import annotations

from dataclasses import dataclass

from pickfs.fsfacts import parse_jbd2_info as parse_jbd2_info  # the journals' counters: pickfs.fsfacts
from pickfs.fsfacts import parse_xfs_log as parse_xfs_log

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
    cpus: int = 1  # the CPUs online (the cpuN lines)

    @property
    def total(self) -> int:
        return self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal


def parse_cpu(text: str) -> CpuTimes:
    """The aggregate 'cpu' line of /proc/stat, in clock ticks, and the number of CPUs online."""
    vals: list[int] | None = None
    cpus = 0
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == "cpu":
            vals = [int(x) for x in f[1:9]] + [0] * (8 - len(f[1:9]))
        elif f and f[0].startswith("cpu") and f[0][3:].isdigit():
            cpus += 1
    if vals is None:
        raise ValueError("no cpu line in /proc/stat")
    user, nice, system, idle, iowait, irq, softirq, steal = vals
    return CpuTimes(user, nice, system, idle, iowait, irq, softirq, steal, cpus=max(1, cpus))


def parse_psi(text: str) -> tuple[int, int]:
    """/proc/pressure/io or /proc/pressure/cpu -> (some total, full total) in microseconds (a kernel
    whose cpu file has no 'full' line gives 0 for it)."""
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


@dataclass(frozen=True)
class TaskStat:
    """One process or kernel thread as /proc/<pid>/stat shows it."""

    comm: str
    state: str  # R running, S sleeping, D waiting on I/O, ...
    ppid: int
    cpu_ticks: int  # user + system time so far, in clock ticks (its reaped children's not included)


def parse_task_stat(text: str) -> TaskStat:
    """/proc/<pid>/stat -> its name, state, parent and CPU time (fields 3, 4, 14 and 15 of proc(5))."""
    open_paren, close_paren = text.index("("), text.rindex(")")
    rest = text[close_paren + 2:].split()
    return TaskStat(text[open_paren + 1:close_paren], rest[0], int(rest[1]), int(rest[11]) + int(rest[12]))


def parse_stat_fields(text: str) -> tuple[str, str, int]:
    """/proc/<pid>/stat -> (comm, state letter, parent pid)."""
    open_paren, close_paren = text.index("("), text.rindex(")")
    rest = text[close_paren + 2:].split()
    return text[open_paren + 1:close_paren], rest[0], int(rest[1])


