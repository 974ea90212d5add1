"""Where a file's blocks are on the device: the filesystem's own mapping (FIEMAP), checked by reading the device."""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
from collections.abc import Iterable
from pathlib import Path

FS_IOC_FIEMAP = 0xC020660B
HEADER = struct.Struct("=QQIIII")  # fm_start, fm_length, fm_flags, fm_mapped_extents, fm_extent_count, reserved
EXTENT = struct.Struct("=QQQQQI12x")  # logical, physical, length, reserved64[2], flags, reserved[3]
# an extent whose place on the device is not (yet) known or not its own: delayed allocation, unknown, encoded
# (compressed), inline in metadata, not block-aligned
NOT_PLACED = 0x2 | 0x4 | 0x8 | 0x100 | 0x200
MAX_EXTENTS = 512
CHECK = 4096


def parse_fiemap(buf: bytes) -> list[tuple[int, int, int, int]]:
    """(logical, physical, length, flags) of each extent a FIEMAP answer holds (pure)."""
    mapped = HEADER.unpack_from(buf)[3]
    out = []
    for i in range(mapped):
        logical, physical, length, _, _, flags = EXTENT.unpack_from(buf, HEADER.size + i * EXTENT.size)
        out.append((logical, physical, length, flags))
    return out


def extents(path: Path) -> list[tuple[int, int, int]]:
    """(logical, physical, length) of every placed extent of a file, in bytes (delayed or inline ones left out)."""
    buf = bytearray(HEADER.pack(0, 2**64 - 1, 0, 0, MAX_EXTENTS, 0) + bytes(EXTENT.size * MAX_EXTENTS))
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, FS_IOC_FIEMAP, buf)
    finally:
        os.close(fd)
    return [(lo, ph, n) for lo, ph, n, flags in parse_fiemap(bytes(buf)) if not flags & NOT_PLACED]


def merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """(start, end) byte ranges, overlapping and touching ones joined (pure)."""
    out: list[list[int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def device_ranges(files: Iterable[Path]) -> list[tuple[int, int]]:
    """The device's byte ranges holding the files' placed blocks (files that went away are skipped)."""
    spans = []
    for f in files:
        try:
            spans += [(ph, ph + n) for _, ph, n in extents(f)]
        except OSError:
            continue
    return merged(spans)


def _read_direct(fd: int, offset: int) -> bytes:
    buf = mmap.mmap(-1, CHECK)  # page-aligned, as O_DIRECT needs
    try:
        n = os.preadv(fd, [buf], offset)
        return bytes(buf[:n])
    finally:
        buf.close()


def mapping_disagrees(device: str, files: Iterable[Path]) -> str | None:
    """None when the device holds, where the mapping says, what the files hold (their first non-zero placed block,
    after a sync); else what disagrees: a filesystem whose mapping is not the device's addresses (btrfs gives
    its own logical ones), or files of which no block could be checked (inline, compressed, all zeros)."""
    dev = os.open(device, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
    checked = False
    try:
        for f in files:
            try:
                placed = extents(f)
                with open(f, "rb") as fh:
                    for logical, physical, length in placed:
                        if logical % CHECK or physical % CHECK or length < CHECK:
                            continue
                        fh.seek(logical)
                        content = fh.read(CHECK)
                        if len(content) < CHECK or not content.strip(b"\0"):
                            continue
                        if _read_direct(dev, physical) != content:
                            return f"{f.name}: the block the filesystem maps to byte {physical:,} of {device} holds " \
                                   "something else (its mapping is not the device's addresses)"
                        checked = True
                        break
            except OSError:
                continue
    finally:
        os.close(dev)
    return None if checked else "no block of the database's files could be checked against the device " \
        "(inline, compressed or all zeros), so a write fault could not be aimed"
