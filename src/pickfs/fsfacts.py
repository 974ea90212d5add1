"""Facts about filesystem types that reports read too (pure: no I/O, imports nothing of pickfs).

How a filesystem type is built and checked lives with the type itself (stack/filesystems.py `FsType`);
what a report must know to render a stored run lives here, where report/ and stats/ may import it:
which types are references rather than candidates, and the journals whose threads and counters the
monitors read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

SECTOR = 512

# The types that stand differently from a filesystem made on a block device: they are references
# (upper bounds and yardsticks), never a candidate for the answer.
IN_MEMORY = frozenset({"tmpfs"})  # mounted with no device: the upper bound, keeps nothing on power loss
RAW = "raw"  # the block device itself, no filesystem: the yardstick fio workloads score against (= 100)
NO_FILESYSTEM = frozenset({RAW})
REFERENCES = IN_MEMORY | NO_FILESYSTEM


def is_reference(fstype: str) -> bool:
    """An upper bound or yardstick (in memory, the raw device), not a candidate."""
    return fstype in REFERENCES


def in_memory(fstype: str) -> bool:
    """Kept in memory: as fast as no disk at all, and nothing survives a power cut."""
    return fstype in IN_MEMORY


def has_filesystem(fstype: str) -> bool:
    """A filesystem a database can live on; not the block device itself (raw)."""
    return fstype not in NO_FILESYSTEM


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


@dataclass(frozen=True)
class Journal:
    """A filesystem's journal: the kernel thread that writes it and the counters that say how much it wrote.

    A journal thread's writes are in no process's /proc/<pid>/io, so the kernel's own counters are the
    only source: the monitors read `counters` (with the device's kernel name) and `parse` it.
    """

    name: str  # as recorded with each trial's monitor totals ("journal")
    thread: str  # the kernel thread's name starts with this ("jbd2/loop3-8")
    group: str  # the process group reports list that thread under
    source: str  # where the counters are read, as a report names it
    counters: str  # the counters file, {disk} the device's kernel name (loop3)
    parse: Callable[[str, int], int | None]  # (the file's text, the filesystem's block size) -> bytes written


JBD2 = Journal("jbd2 (ext4 journal)", "jbd2/", "jbd2 (ext4 journal)", "/proc/fs/jbd2",
               "/proc/fs/jbd2/{disk}-8/info", parse_jbd2_info)
XFS_LOG = Journal("xfs log", "xfsaild/", "xfsaild (xfs log)", "/sys/fs/xfs", "/sys/fs/xfs/{disk}/stats/stats",
                  lambda text, _block: parse_xfs_log(text))
JOURNALS: tuple[Journal, ...] = (JBD2, XFS_LOG)


def journal_named(name: str) -> Journal | None:
    """The journal a trial's totals name (pure)."""
    return next((j for j in JOURNALS if j.name == name), None)


def journal_thread_group(comm: str) -> str | None:
    """The process group of a journal's kernel thread (jbd2/loop3-8 -> jbd2 (ext4 journal)); None for others."""
    return next((j.group for j in JOURNALS if comm.startswith(j.thread)), None)


JOURNAL_GROUPS = frozenset(j.group for j in JOURNALS)
