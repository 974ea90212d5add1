"""Facts about filesystem types that the analysis, the reports and the search read too (pure: no I/O, imports
nothing of pickfs).

How a filesystem type is built and checked lives with the type itself (stack/filesystems.py `FsType`);
what the analysis must know to judge a stored run, and the search to cover a type, lives here, where
analysis/ and report/ may import it: which types are references rather than candidates, the journals
whose threads and counters the monitors read, and each type's `FsFacts` in `FACTS` (the distribution's
default, a legacy format, fstab's fsck pass, a type with no journal, what moves it from one run to the next
beyond the plan's `rerun_sd`, and the space `pickfs search` covers). `FsType.facts` reads the same registry; a
type not in it has `UNKNOWN`'s facts. A configuration's own run-to-run term is `rerun_floor`: its type's, or that
of a mount option that stops the cache flushes, whichever is larger.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
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


# --- what the search covers of a type: dimensions of values, the first of each the default -----------------------
@dataclass(frozen=True)
class Needs:
    """A value's least versions: of the kernel, or of a tool package (name, version)."""

    what: str  # "kernel" or a package: e2fsprogs, xfsprogs, btrfs-progs
    version: tuple[int, ...]

    def words(self) -> str:
        return f"{self.what} {'.'.join(map(str, self.version))}"


@dataclass(frozen=True)
class Value:
    label: str  # "" for a dimension's default
    mkfs: tuple[str, ...] = ()
    mount: tuple[str, ...] = ()
    scheduler: str | None = None
    needs: tuple[Needs, ...] = ()
    database: tuple[tuple[str, str], ...] = ()  # workload settings, e.g. (("journal_mode", "DELETE"),)

    @property
    def words(self) -> str:
        db = " ".join(f"{k}={v}" for k, v in self.database)
        parts = [*(f"mkfs {' '.join(self.mkfs)}",) * bool(self.mkfs), *(f"mount {','.join(self.mount)}",) *
                 bool(self.mount), *(f"scheduler {self.scheduler}",) * bool(self.scheduler),
                 *(f"database {db}",) * bool(db)]
        return "; ".join(parts) or "the default"


@dataclass(frozen=True)
class Dimension:
    name: str
    values: tuple[Value, ...]  # the first is the default


def value(label: str, mkfs: Sequence[str] = (), mount: Sequence[str] = (), needs: Sequence[Needs] = ()) -> Value:
    """A value of mkfs and mount options, with the versions it needs."""
    return Value(label, tuple(mkfs), tuple(mount), None, tuple(needs))


DEFAULT = Value("")
SCHEDULER_DIMENSION = Dimension("scheduler", (Value("", scheduler="none"), Value("mq-deadline", scheduler="mq-deadline")))
ATIME = Dimension("atime", (DEFAULT, value("noatime", mount=("noatime",))))


# --- each type's facts: one registry the analysis, the search, the risks and FsType read --------------------------
@dataclass(frozen=True)
class RerunFloor:
    """What moves a configuration kind's level from one run to the next, measured: a standard deviation on the log
    scale, the degrees of freedom it is known with, and the figure it comes from."""

    sd: float
    df: float
    source: str


# Over ten quiet reruns on the reference machine (docs/benchmarks.md, benchmarks/rerun_variance.py): comparisons
# against ext4 moved from run to run by tau = 8.2% for btrfs's configurations (btrfs, btrfs-lzo; 13 degrees of
# freedom), 5.1% for ext4-nobarrier (9), 1.5% for every other kind pooled (46; 1% per configuration, the plan's
# rerun_sd). A comparison has two levels, so a kind's own term is sqrt(tau^2 - 1%^2).
BTRFS_RERUN = RerunFloor(0.081, 13.0, "btrfs and btrfs-lzo against ext4 over ten quiet reruns: tau 8.2%")
NO_FLUSH_RERUN = RerunFloor(0.050, 9.0, "ext4-nobarrier against ext4 over ten quiet reruns: tau 5.1%")
# Mount options that stop the filesystem flushing the disk's cache at commit: what such a setup measures moves with
# the host's own write-back from one run to the next.
NO_FLUSH_OPTIONS = frozenset({"nobarrier", "barrier=0"})


# A filesystem trait a disk-fault finding needs (faults/causes.py): the pages a file gains are written back into
# unwritten extents, marked written only when that write succeeds (ext4's dioread_nolock, its default since Linux 5.6;
# the mount options below turn it off).
UNWRITTEN_WRITE_BACK = "unwritten extents at write-back"


@dataclass(frozen=True)
class FsFacts:
    """What pickfs knows of a filesystem type beyond how to build it: how it ranks among configurations within the
    margin of each other, its line in fstab, whether it keeps a journal, and the space a search covers of it."""

    # what Debian and most distributions install (plain ext4): within the margin, preferred when nothing is changed
    distribution_default: bool = False
    legacy: bool = False  # an older on-disk format kept for compatibility (ext2, ext3): a current one is preferred
    fsck_pass: int = 0  # fstab's sixth field: 2 when fsck checks it at boot, 0 when it checks itself at mount
    journalled: bool = True  # False: no journal (ext2): after a power cut it needs a full fsck
    journal_off: str = ""  # the mkfs feature that makes it without a journal ("^has_journal"); "": none
    search_space: tuple[Dimension, ...] = ()  # what `pickfs search` tries of it; (): no built-in space
    rerun: RerunFloor | None = None  # what moves its level from run to run, when larger than the plan's rerun_sd
    # mount options that stop it writing new pages back into unwritten extents; None: it never does
    unwritten_unless: frozenset[str] | None = None

    def without_journal(self, mkfs_options: Sequence[str]) -> bool:
        """Made with no journal: a type that has none, or mkfs options that leave it out (pure)."""
        return not self.journalled or (bool(self.journal_off) and self.journal_off in " ".join(mkfs_options))


UNKNOWN = FsFacts()  # a type pickfs has no facts of: checks itself at mount, journalled, no built-in search space

FACTS: dict[str, FsFacts] = {
    "ext2": FsFacts(legacy=True, fsck_pass=2, journalled=False),
    "ext3": FsFacts(legacy=True, fsck_pass=2, journal_off="^has_journal"),
    "ext4": FsFacts(distribution_default=True, fsck_pass=2, journal_off="^has_journal",
                    unwritten_unless=frozenset({"dioread_lock", "data=journal", "nodelalloc"}), search_space=(
        Dimension("journal size", (DEFAULT, value("journal256m", mkfs=("-J", "size=256")))),
        Dimension("fast commit", (DEFAULT, value("fastcommit", mkfs=("-O", "fast_commit"),
                                                 needs=(Needs("kernel", (5, 10)), Needs("e2fsprogs", (1, 46)))))),
        ATIME,
        Dimension("commit interval", (DEFAULT, value("commit30", mount=("commit=30",)))),
        Dimension("data mode", (DEFAULT, value("data-journal", mount=("data=journal",)),
                                value("data-writeback", mount=("data=writeback",)))),
        Dimension("delayed allocation", (DEFAULT, value("nodelalloc", mount=("nodelalloc",)))),
        Dimension("barriers", (DEFAULT, value("nobarrier", mount=("nobarrier",)))),
        SCHEDULER_DIMENSION,
    )),
    "xfs": FsFacts(search_space=(
        Dimension("log size", (DEFAULT, value("log128m", mkfs=("-l", "size=128m")))),
        Dimension("allocation groups", (DEFAULT, value("agcount16", mkfs=("-d", "agcount=16")))),
        Dimension("reflink", (DEFAULT, value("noreflink", mkfs=("-m", "reflink=0"),
                                             needs=(Needs("xfsprogs", (4, 16)),)))),
        ATIME,
        Dimension("log buffer size", (DEFAULT, value("logbsize256k", mount=("logbsize=256k",)))),
        SCHEDULER_DIMENSION,
    )),
    "btrfs": FsFacts(rerun=BTRFS_RERUN, search_space=(
        Dimension("node size", (DEFAULT, value("nodesize32k", mkfs=("-n", "32768")))),
        Dimension("compression", (DEFAULT, value("lzo", mount=("compress=lzo",)),
                                  value("zstd", mount=("compress=zstd",), needs=(Needs("kernel", (4, 14)),)))),
        ATIME,
        Dimension("commit interval", (DEFAULT, value("commit30", mount=("commit=30",)))),
        SCHEDULER_DIMENSION,
    )),
}


def facts_of(fstype: str) -> FsFacts:
    """The type's facts; `UNKNOWN` for a type not in `FACTS` (pure)."""
    return FACTS.get(fstype, UNKNOWN)


def rerun_floor(fstype: str, mount_options: Sequence[str]) -> RerunFloor | None:
    """What moves a configuration's level from one run to the next by its kind, when measured larger than the
    plan's common term: its type's, or a mount option's that stops the cache flushes, the larger (pure)."""
    kinds = [f for f in (facts_of(fstype).rerun, NO_FLUSH_RERUN if NO_FLUSH_OPTIONS & set(mount_options) else None)
             if f is not None]
    return max(kinds, key=lambda f: f.sd, default=None)


def traits(fstype: str, mount_options: Sequence[str]) -> tuple[str, ...]:
    """What a configuration's filesystem does that a measured finding speaks of (pure)."""
    unless = facts_of(fstype).unwritten_unless
    given = {o for option in mount_options for o in option.split(",")}
    return (UNWRITTEN_WRITE_BACK,) if unless is not None and not unless & given else ()


def searchable() -> tuple[str, ...]:
    """The types with a built-in search space, in the registry's order."""
    return tuple(name for name, f in FACTS.items() if f.search_space)
