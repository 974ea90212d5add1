"""A real results file (tests/data/real-runs.db.gz) damaged one byte at a time, then read by every command that
reads results: each ends with exit 0 or 2 and one line, never an internal error or a traceback.

Seeded, so a failure names its case (the byte's offset and the command). PICKFS_FUZZ_FLIPS sets how many
bytes are flipped (60 by default; 300 were run when it was written).
"""

from __future__ import annotations

import gzip
import os
import random
import time
from pathlib import Path

import pytest

from tests.unit.test_plan_validation import pickfs
from tests.unit.test_trust_fuzz import one_line_or_ok

SEED = 20261127
REAL = Path(__file__).parent.parent / "data" / "real-runs.db.gz"
SQLITE_RUN, TREE_RUN, TPCB_RUN = "20261122-164420-6bb2", "20261122-164741-a9ed", "20261122-172811-bf83"


@pytest.fixture(scope="module")
def real_bytes() -> bytes:
    return gzip.decompress(REAL.read_bytes())


def flips(data: bytes, rng: random.Random, n: int) -> list[tuple[int, int]]:
    """(offset, xor mask) pairs: two in three on a letter of stored text (a flip there makes it invalid UTF-8
    or changes a JSON key), the rest anywhere past the header."""
    letters = [i for i in range(100, len(data)) if 0x61 <= data[i] <= 0x7A]
    out = []
    for k in range(n):
        pos = rng.choice(letters) if k % 3 else rng.randrange(100, len(data))
        out.append((pos, rng.choice([0x80, 0xC0, 0xFF, 0x01, 0x20])))
    return out


def read_commands(tmp: Path, db: Path, k: int) -> list[list[str]]:
    cmds = [["results"], ["report", "latest"], ["report", SQLITE_RUN], ["report", SQLITE_RUN, "--explain"],
            ["report", SQLITE_RUN, "--quiet"], ["report", SQLITE_RUN, "--json", "-"], ["report", SQLITE_RUN, "--csv", "-"],
            ["report", SQLITE_RUN, "--markdown", "-"], ["report", SQLITE_RUN, "--table-csv", "-"],
            ["compare", SQLITE_RUN, TPCB_RUN], ["env", "diff", SQLITE_RUN, TPCB_RUN], ["fleet", "list"]]
    if k % 6 == 0:  # the slow ones (plotly) on every sixth file
        cmds += [["report", TREE_RUN, "--html", str(tmp / "r.html")], ["report", "--site", str(tmp / f"site{k}")]]
    out = [[*c, "--results", str(db)] for c in cmds]
    out.append(["merge", str(db), "--results", str(tmp / f"merged{k}.db")])
    return out


def test_every_read_of_a_results_file_with_one_byte_flipped_is_one_line(tmp_path, capsys, real_bytes):
    rng = random.Random(SEED)
    db = tmp_path / "r.db"
    failures, started = [], time.monotonic()
    n = int(os.environ.get("PICKFS_FUZZ_FLIPS", "60"))
    for k, (pos, mask) in enumerate(flips(real_bytes, rng, n)):
        damaged = bytearray(real_bytes)
        damaged[pos] ^= mask
        db.write_bytes(damaged)
        for args in read_commands(tmp_path, db, k):
            code, _, err = pickfs([*args, "--workdir", str(tmp_path / "wd")], capsys)
            if not one_line_or_ok(code, err, (1, 2)):  # 1: a run without a fingerprint to compare (NotFound)
                failures.append(f"byte {pos} ^ {mask:#x}, {' '.join(args[:2])}: exit {code}: {err.strip()[:160]}")
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("r.db")) == ["r.db"]  # nothing beside it
    assert not failures, f"{len(failures)} failed:\n" + "\n".join(failures[:8])
    assert not (tmp_path / "wd").exists()
    assert time.monotonic() - started < 2.5 * n  # about 0.7 s a file here
