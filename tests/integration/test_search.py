"""A tiny search for real (4 configurations on two filesystems, one a database setting): Ctrl-C keeps what was
measured and leaves nothing mounted, attached or running; --resume continues the same stage's run and gives
the answer."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

from tests.conftest import ledger_entries, loops_under, mounts_under, needs_root, pickfs, start_pickfs

pytestmark = needs_root
SPACE = """[search]
filesystems = ["ext4", "xfs"]
[search.ext4]
atime = ["", "mount:noatime"]
[search.xfs]
journal = ["", "set:journal_mode=DELETE"]
[search.database]
"""


def measured(workdir: Path) -> list[tuple[str, int, int, int]]:
    db = workdir / "results.db"
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT run_id, cell_index, block, round FROM trials WHERE phase='measured' AND ok=1 "
                            "AND round IS NOT NULL").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def journal_modes(workdir: Path, run_id: str) -> dict[str, set[str]]:
    """The journal mode each configuration's measured slices ran in, as the client reported it."""
    conn = sqlite3.connect(workdir / "results.db")
    try:
        plan = json.loads(conn.execute("SELECT plan_json FROM runs WHERE id=?", (run_id,)).fetchone()[0])
        rows = conn.execute("SELECT cell_index, raw_output FROM trials WHERE run_id=? AND phase='measured' AND ok=1",
                            (run_id,)).fetchall()
    finally:
        conn.close()
    names = [c["name"] for c in plan["configs"]]
    out: dict[str, set[str]] = {}
    for cell, raw in rows:
        out.setdefault(names[cell], set()).add(json.loads(raw)["journal_mode"])
    return out


def nothing_left(workdir: Path) -> None:
    assert mounts_under(workdir) == []
    assert loops_under(workdir) == []
    assert ledger_entries(workdir) == []
    servers = [p for p in Path("/proc").glob("[0-9]*/cmdline")
               if str(workdir) in p.read_bytes().decode(errors="replace") and "pytest" not in p.read_bytes().decode(errors="replace")]
    assert servers == []


def test_a_tiny_search_interrupted_then_resumed(workdir, tmp_path):
    plan = tmp_path / "space.toml"
    plan.write_text(SPACE)
    out = tmp_path / "search.json"
    args = ("search", "--plan", str(plan), "--max-time", "2m", "--no-presets", "--slice", "0.5s", "--json", str(out))
    proc = start_pickfs(workdir, *args)
    try:
        t0 = time.monotonic()
        while len(measured(workdir)) < 3 and time.monotonic() - t0 < 120 and proc.poll() is None:
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    nothing_left(workdir)
    kept = measured(workdir)
    assert len(kept) >= 3
    search_id = err.split("pickfs search --resume ")[1].split()[0]
    record = json.loads((workdir / "searches" / f"{search_id}.json").read_text())
    screening_run = record["stages"]["screening"]["run_id"]
    assert {k[0] for k in kept} == {screening_run}

    r = pickfs(workdir, "search", "--resume", search_id, "--json", str(out), timeout=400)
    assert r.returncode == 0, r.stderr
    nothing_left(workdir)
    after = measured(workdir)
    assert set(kept) <= set(after)  # nothing measured is lost
    d = json.loads(out.read_text())
    assert d["search"] == search_id
    assert d["stages"][0]["name"] == "screening" and d["stages"][0]["run_id"] == screening_run
    assert d["stages"][0]["configurations"] == ["ext4+defaults", "ext4+noatime", "xfs+defaults", "xfs+journal-delete"]
    assert journal_modes(workdir, screening_run) == {"ext4+defaults": {"WAL"}, "ext4+noatime": {"WAL"},
                                                     "xfs+defaults": {"WAL"}, "xfs+journal-delete": {"DELETE"}}
    assert d["configurations_built"] == 4 and d["space"]["size"] == 4
    assert d["answer"] is not None and d["answer"]["setup"]["mkfs"].endswith("/dev/DEVICE")
    assert "The answer: " in r.stdout + r.stderr and "What mattered" in r.stdout + r.stderr
