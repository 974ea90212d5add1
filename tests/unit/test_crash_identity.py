"""A crash state's identity: equal exactly when the rebuilt images are equal (checked against the images
themselves, rebuilt from a real log), computed without reading a whole image."""

import hashlib
import random
from pathlib import Path

from pickfs.crash import log as wlog
from pickfs.crash.identity import Identities
from pickfs.crash.states import generate

W, F, Z = wlog.WRITE, wlog.FLUSH, wlog.ZERO
SIZE = 64 * 4096


def _log(path: Path, seed: int) -> list[wlog.Record]:
    """A workload's log: a few pages written again and again (often with the same content), some zeroed, flushes."""
    rng = random.Random(seed)
    with open(path, "wb") as fh:
        for t in range(1, 400):
            roll = rng.random()
            if roll < 0.2:
                fh.write(wlog.encode(F, t))
            elif roll < 0.25:
                fh.write(wlog.encode(Z, t, 4096 * rng.randrange(16), 4096))
            else:
                pages = rng.choice((1, 1, 2, 4))
                data = bytes([rng.randrange(3)]) * (4096 * pages)  # three contents: images repeat
                fh.write(wlog.encode(W, t, 4096 * rng.randrange(16), len(data)) + data)
    return wlog.read_log(path)


def _image(tmp: Path, log: Path, records: list[wlog.Record], durable: int, kept) -> str:
    image = tmp / "img"
    image.write_bytes(b"\x07" * SIZE)
    wlog.apply_pieces(log, records, [*(wlog.Piece(i) for i in range(durable)), *kept], image)
    return hashlib.sha256(image.read_bytes()).hexdigest()


def test_equal_identities_exactly_when_the_images_are_equal(tmp_path: Path):
    duplicates = 0
    for seed in range(4):
        log = tmp_path / f"w{seed}.log"
        records = _log(log, seed)
        states = generate(records, 0, 10**6, 120, seed=seed, unit=4096)
        ids = Identities(log, records, 0)
        by_id: dict[int, str] = {}
        by_image: dict[str, int] = {}
        for st in states:
            identity = ids.of(st.durable, st.kept)
            assert identity is not None
            digest = _image(tmp_path, log, records, st.durable, st.kept)
            duplicates += identity in by_id
            assert by_id.setdefault(identity, digest) == digest  # the same identity: the same image
            assert by_image.setdefault(digest, identity) == identity  # the same image: the same identity
        # (one image could have two identities only where a sector went back to its first content: the start
        # image's content, 7s, is never written here)
    assert duplicates > 20  # many states were duplicates (else the test shows nothing)


def test_a_write_off_sector_boundaries_makes_the_identity_unknown(tmp_path: Path):
    log = tmp_path / "w.log"
    with open(log, "wb") as fh:
        fh.write(wlog.encode(W, 1, 0, 4096) + b"a" * 4096)
        fh.write(wlog.encode(F, 2))
        fh.write(wlog.encode(W, 3, 100, 5) + b"hello")
        fh.write(wlog.encode(F, 4))
    records = wlog.read_log(log)
    ids = Identities(log, records, 0)
    assert ids.of(2, ()) is not None
    assert ids.of(2, (wlog.Piece(2),)) is None  # its own piece: unknown
    assert ids.of(4, ()) is None  # once durable, every later identity is unknown


def test_a_rewound_batch_gets_the_same_identities_without_hashing_again(tmp_path: Path, monkeypatch):
    log = tmp_path / "w.log"
    records = _log(log, 7)
    states = generate(records, 0, 10**6, 60, seed=7, unit=4096)
    ids = Identities(log, records, 0)
    first = [ids.of(st.durable, st.kept) for st in states]
    import pickfs.crash.identity as identity

    hashed = []
    monkeypatch.setattr(identity, "_entry", lambda *a: hashed.append(a) or b"\0" * 16)
    ids.rewind()
    assert [ids.of(st.durable, st.kept) for st in states] == first
    assert not hashed  # every piece's entries were kept from the first batch
    fresh = Identities(log, records, 0)
    monkeypatch.undo()
    assert [fresh.of(st.durable, st.kept) for st in states] == first
