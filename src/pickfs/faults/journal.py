"""Where a filesystem's journal is on its device, as the filesystem's own tools read it: ext3/ext4's journal inode
(dumpe2fs, debugfs), xfs's internal log (xfs_db). A registry by the type's journal fact (fsfacts.Journal); a type
without one has no journal pickfs can aim a write fault at (btrfs's log tree lives among its other metadata, ext2 has none)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pickfs.errors import CommandFailed
from pickfs.faults.extents import merged
from pickfs.fsfacts import JBD2, XFS_LOG, Journal
from pickfs.proc import run
from pickfs.stack.filesystems import KNOWN, fs_type

Ranges = list[tuple[int, int]]


def parse_ext_header(text: str) -> tuple[int, int]:
    """(block size, journal inode) from `dumpe2fs -h` (pure); ValueError when the journal is not an inode here."""
    size = re.search(r"^Block size:\s+(\d+)", text, re.M)
    inode = re.search(r"^Journal inode:\s+(\d+)", text, re.M)
    if size is None or inode is None:
        raise ValueError("no journal inode (an external journal, or none)")
    return int(size.group(1)), int(inode.group(1))


def parse_ext_blocks(text: str, block_size: int) -> Ranges:
    """The byte ranges of the blocks `debugfs -R 'blocks <N>'` lists (pure)."""
    blocks = [int(x) for x in text.split() if x.isdigit()]
    if not blocks:
        raise ValueError("debugfs listed no journal block")
    return merged((b * block_size, (b + 1) * block_size) for b in blocks)


def ext_journal(device: str) -> Ranges:
    size, inode = parse_ext_header(run(["dumpe2fs", "-h", device], timeout=60).text)
    return parse_ext_blocks(run(["debugfs", "-R", f"blocks <{inode}>", device], timeout=60).text, size)


XFS_FIELDS = ("logstart", "logblocks", "blocksize", "agblocks", "agblklog")


def parse_xfs_log(text: str) -> Ranges:
    """The byte range of xfs's internal log from `xfs_db -c 'sb 0' -c 'print ...'` (pure): its start is a
    filesystem block number (allocation group << agblklog | block in the group)."""
    got = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+) = (\d+)\s*$", text, re.M)}
    if any(k not in got for k in XFS_FIELDS):
        raise ValueError(f"xfs_db did not print {', '.join(k for k in XFS_FIELDS if k not in got)}")
    if got["logstart"] == 0:
        raise ValueError("the log is external")
    ag, block = got["logstart"] >> got["agblklog"], got["logstart"] & ((1 << got["agblklog"]) - 1)
    start = (ag * got["agblocks"] + block) * got["blocksize"]
    return [(start, start + got["logblocks"] * got["blocksize"])]


def xfs_log(device: str) -> Ranges:
    return parse_xfs_log(run(["xfs_db", "-r", "-c", "sb 0", "-c", "print " + " ".join(XFS_FIELDS), device],
                             timeout=60).text)


@dataclass(frozen=True)
class JournalPlace:
    words: str  # what it is, in words
    find: Callable[[str], Ranges]  # the device -> its byte ranges (ValueError, CommandFailed when it cannot)


JOURNAL_PLACES: dict[Journal, JournalPlace] = {
    JBD2: JournalPlace("the journal (its journal inode's blocks)", ext_journal),
    XFS_LOG: JournalPlace("the internal log", xfs_log),
}


def journal_place(fstype: str) -> JournalPlace | None:
    """Where a type's journal is found on its device, asked of the type's own journal fact (None: it keeps none a
    fault can be aimed at)."""
    journal = fs_type(fstype).journal
    return JOURNAL_PLACES.get(journal) if journal is not None else None


def journalled_types() -> list[str]:
    """The known types whose journal a write fault can be aimed at, by name (for a refusal's hint)."""
    return [t.name for t in KNOWN.values() if t.journal in JOURNAL_PLACES]


def find_journal(fstype: str, device: str) -> tuple[Ranges, str | None]:
    """A type's journal on the device, as its own tools read it (write:journal), and None; or no ranges and why
    not. Only for a type with a journal place: fault_unavailable refuses the others before anything is made."""
    place = journal_place(fstype)
    assert place is not None
    try:
        return place.find(device), None
    except (ValueError, CommandFailed) as exc:
        why = exc.one_line() if isinstance(exc, CommandFailed) else str(exc)
        return [], f"{place.words} could not be found on the device: {why}"[:300]
