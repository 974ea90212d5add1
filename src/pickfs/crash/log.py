"""The recorder's log: every write, discard and flush the image file received, in order (pure but for I/O).

A record is a fixed header, then the data of a write:
    kind (1 byte: W write, Z zeroed/discarded range, T truncate, F flush), t_ns (CLOCK_MONOTONIC),
    offset, length (8 bytes each, little-endian).
F is an fsync of the image: what a flush (a write barrier, a FUA write) sent to the loop device
becomes. Z has no data: the range reads back as zeros.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

HEADER = struct.Struct("<cQQQ")
WRITE, ZERO, TRUNCATE, FLUSH = b"W", b"Z", b"T", b"F"
CHANGES = (WRITE, ZERO, TRUNCATE)


@dataclass(frozen=True)
class Record:
    kind: bytes
    t_ns: int
    offset: int
    length: int
    data_pos: int  # where a write's data starts in the log file

    @property
    def changes(self) -> bool:
        return self.kind in CHANGES


@dataclass(frozen=True)
class Piece:
    """What of one record reaches the disk: all of it, or `length` bytes of a write from `skip` on (a torn write)."""

    record: int
    skip: int = 0
    length: int | None = None  # None: the whole record


def encode(kind: bytes, t_ns: int, offset: int = 0, length: int = 0) -> bytes:
    return HEADER.pack(kind, t_ns, offset, length)


def read_log(path: Path, start: int = 0) -> list[Record]:
    """Every record of a log file (from byte `start`); a record cut short at the end is dropped."""
    out: list[Record] = []
    size = path.stat().st_size
    with open(path, "rb") as fh:
        pos = start
        while pos + HEADER.size <= size:
            fh.seek(pos)
            kind, t_ns, offset, length = HEADER.unpack(fh.read(HEADER.size))
            data_pos = pos + HEADER.size
            end = data_pos + (length if kind == WRITE else 0)
            if kind not in (WRITE, ZERO, TRUNCATE, FLUSH) or end > size:
                break
            out.append(Record(kind, t_ns, offset, length, data_pos))
            pos = end
    return out


def _zero(fd: int, offset: int, length: int) -> None:
    chunk = b"\0" * min(length, 1 << 20)
    done = 0
    while done < length:
        n = min(len(chunk), length - done)
        os.pwrite(fd, chunk[:n], offset + done)
        done += n


def apply(log_path: Path, records: Iterable[Record], image: Path) -> int:
    """Apply records, in the order given, to an image file; return how many changed it."""
    listed = list(records)
    return apply_pieces(log_path, listed, [Piece(i) for i in range(len(listed))], image)


def apply_pieces(log_path: Path, records: Sequence[Record], pieces: Iterable[Piece], image: Path) -> int:
    """Apply pieces of records, in the order given, to an image file; return how many changed it.

    A piece of a write writes only its part of the data (a torn write); a truncation is ignored by
    a piece that keeps part of it (it has no parts). Returns the number of pieces applied.
    """
    applied = 0
    with open(log_path, "rb") as log:
        fd = os.open(image, os.O_RDWR)
        try:
            for p in pieces:
                r = records[p.record]
                if r.kind == WRITE:
                    length = r.length - p.skip if p.length is None else p.length
                    log.seek(r.data_pos + p.skip)
                    os.pwrite(fd, log.read(length), r.offset + p.skip)
                elif r.kind == ZERO:
                    length = r.length - p.skip if p.length is None else p.length
                    _zero(fd, r.offset + p.skip, length)
                elif r.kind == TRUNCATE:
                    os.ftruncate(fd, r.offset)
                else:
                    continue
                applied += 1
        finally:
            os.close(fd)
    return applied


def ranges(records: Sequence[Record], pieces: Iterable[Piece]) -> list[tuple[int, int]]:
    """The (offset, length) byte ranges of the image the pieces change (pure)."""
    out = []
    for p in pieces:
        r = records[p.record]
        if r.kind in (WRITE, ZERO):
            out.append((r.offset + p.skip, r.length - p.skip if p.length is None else p.length))
    return out

