"""A crash state's identity: two states whose rebuilt images would be identical have the same one.

Cheap to compute, and never the hash of a whole image: the identity is a digest of the set of
(sector, content) pairs that differ from the image the workload started on, kept up to date as the
durable writes advance (states come in the order of their cuts), with each state's own unflushed
pieces laid over it. Each sector's entry is a 128-bit hash of its content; the set's digest is the
exclusive-or of the entries' hashes, so a sector written again changes it in constant time.

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


def _h(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _entry(sector: int, content: bytes) -> int:
    return int.from_bytes(_h(sector.to_bytes(8, "little") + content), "little")


ZEROS = _h(b"\0" * SECTOR)


class Identities:
    """The identities of states over one recorded log, from record `first` (the start image) on."""

    def __init__(self, log: Path, records: Sequence[Record], first: int) -> None:
        self.log, self.records, self.at = log, records, first
        self.sectors: dict[int, bytes] = {}  # changed sector -> hash of its content now (durable writes)
        self.digest = 0
        self.exact = True

    def _hashes(self, piece: Piece, fh: BinaryIO) -> list[tuple[int, bytes]] | None:
        """(sector, content hash) of what one piece writes; None when it is not whole sectors."""
        r = self.records[piece.record]
        if r.kind not in (WRITE, ZERO):
            return None if r.kind == TRUNCATE else []
        length = r.length - piece.skip if piece.length is None else piece.length
        start = r.offset + piece.skip
        if start % SECTOR or length % SECTOR:
            return None
        if r.kind == ZERO:
            return [(start // SECTOR + k, ZEROS) for k in range(length // SECTOR)]
        fh.seek(r.data_pos + piece.skip)
        data = fh.read(length)
        return [(start // SECTOR + k, _h(data[k * SECTOR:(k + 1) * SECTOR])) for k in range(length // SECTOR)]

    def _lay(self, base: dict[int, bytes], overlay: dict[int, bytes], digest: int,
             pieces: Iterable[Piece]) -> int | None:
        """Lay pieces over `base` into `overlay` (changed in place; the same dict as `base` to change it) and
        return the new digest; None when it cannot be followed."""
        with open(self.log, "rb") as fh:
            for piece in pieces:
                hashes = self._hashes(piece, fh)
                if hashes is None:
                    return None
                for sector, h in hashes:
                    before = overlay.get(sector, base.get(sector))
                    if before is not None:
                        digest ^= _entry(sector, before)
                    overlay[sector] = h
                    digest ^= _entry(sector, h)
        return digest

    def advance(self, durable: int) -> None:
        """The durable writes up to record `durable` (never back)."""
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
