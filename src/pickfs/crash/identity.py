"""A crash state's identity: two states whose rebuilt images would be identical have the same one.

Cheap to compute, and never the hash of a whole image: the identity is a digest of the set of
(sector, content) pairs that differ from the image the workload started on, kept up to date as the
durable writes advance (states come in the order of their cuts), with each state's own unflushed
pieces laid over it. Each sector's entry is a 128-bit hash of its number and content; the set's digest is
the exclusive-or of the entries, so a sector written again changes it in constant time. What each piece of
the log contributes is worked out once: a later batch of states from the start of the run hashes nothing again.

Equal identities mean equal images (but for a hash collision, about 2^-64 at these sizes); a sector
written back to its first content counts as changed, which can only make two equal images look
different (checked twice), never the reverse. What the digest cannot follow (a write not on sector
boundaries, a truncation) makes every later identity unknown: those states are all checked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import BinaryIO

from pickfs.crash.log import TRUNCATE, WRITE, ZERO, Piece, Record

SECTOR = 512


ENTRY = 16  # bytes of one sector's entry: a 128-bit hash of its number and content
ZEROS = b"\0" * SECTOR


def _entry(sector: int, content: bytes) -> bytes:
    return hashlib.blake2b(sector.to_bytes(8, "little") + content, digest_size=ENTRY).digest()


class Identities:
    """The identities of states over one recorded log, from record `first` (the start image) on.

    What a piece of a record contributes (each sector's entry) is worked out once and kept, so a later batch of
    states from the start of the run (`rewind`) hashes nothing again: it only lays the kept entries."""

    def __init__(self, log: Path, records: Sequence[Record], first: int) -> None:
        self.log, self.records, self.first = log, records, first
        # (record, skip, length) -> (first sector, each sector's entry: ENTRY bytes each); None: not whole sectors
        self._kept: dict[tuple[int, int, int | None], tuple[int, bytes] | None] = {}
        self.rewind()

    def rewind(self) -> None:
        """Back to the start image, for states from the start of the run again (the entries worked out are kept)."""
        self.at = self.first
        self.sectors: dict[int, int] = {}  # changed sector -> its entry now (durable writes)
        self.digest = 0
        self.exact = True

    def _entries(self, piece: Piece, fh: BinaryIO) -> tuple[int, bytes] | None:
        """(first sector, each sector's entry) of what one piece writes; None when it is not whole sectors."""
        key = (piece.record, piece.skip, piece.length)
        if key in self._kept:
            return self._kept[key]
        r = self.records[piece.record]
        found: tuple[int, bytes] | None
        if r.kind not in (WRITE, ZERO):
            found = None if r.kind == TRUNCATE else (0, b"")
        else:
            length = r.length - piece.skip if piece.length is None else piece.length
            start = r.offset + piece.skip
            if start % SECTOR or length % SECTOR:
                found = None
            else:
                first, n = start // SECTOR, length // SECTOR
                if r.kind == ZERO:
                    found = (first, b"".join(_entry(first + k, ZEROS) for k in range(n)))
                else:
                    fh.seek(r.data_pos + piece.skip)
                    data = fh.read(length)
                    found = (first, b"".join(_entry(first + k, data[k * SECTOR:(k + 1) * SECTOR]) for k in range(n)))
        self._kept[key] = found
        return found

    def _lay(self, base: dict[int, int], overlay: dict[int, int], digest: int, pieces: Iterable[Piece]) -> int | None:
        """Lay pieces over `base` into `overlay` (changed in place; the same dict as `base` to change it) and
        return the new digest; None when it cannot be followed."""
        with open(self.log, "rb") as fh:
            for piece in pieces:
                found = self._entries(piece, fh)
                if found is None:
                    return None
                first, entries = found
                for k in range(len(entries) // ENTRY):
                    sector = first + k
                    entry = int.from_bytes(entries[k * ENTRY:(k + 1) * ENTRY], "little")
                    before = overlay.get(sector, base.get(sector))
                    if before is not None:
                        digest ^= before
                    overlay[sector] = entry
                    digest ^= entry
        return digest

    def advance(self, durable: int) -> None:
        """The durable writes up to record `durable` (never back, but through `rewind`)."""
        if durable <= self.at:
            return
        pieces = [Piece(i) for i in range(self.at, durable)]
        self.at = durable
        if self.exact:
            digest = self._lay(self.sectors, self.sectors, self.digest, pieces)
            if digest is None:
                self.exact, self.sectors = False, {}
            else:
                self.digest = digest

    def of(self, durable: int, kept: Iterable[Piece]) -> int | None:
        """The identity of the image: the durable writes up to `durable`, then the `kept` pieces; None: unknown."""
        self.advance(durable)
        if not self.exact:
            return None
        return self._lay(self.sectors, {}, self.digest, kept)
