"""Ctrl-C in the middle of a configuration's crash test, then resume: every state checked before the Ctrl-C is kept
and not checked again, and the resumed test checks only the rest."""

import json
import re
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from pickfs.crash.session import fuse_unavailable
from tests.conftest import ledger_entries, loops_under, mounts_under, needs_root, pickfs, start_pickfs

pytestmark = [needs_root, pytest.mark.skipif(fuse_unavailable() is not None, reason=str(fuse_unavailable()))]
STATES = 10


def rows(workdir: Path, phase: str) -> list[tuple[str, int, int, str]]:
    db = workdir / "results.db"
    if not db.exists():
        return []
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute("SELECT run_id, repetition, ok, raw_output FROM trials WHERE phase=? ORDER BY id",
                            (phase,)).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def test_ctrl_c_mid_configuration_keeps_each_checked_state_and_resume_checks_only_the_rest(workdir):
    proc = start_pickfs(workdir, "crashtest", "--fs", "ext4", "--states", str(STATES), "--duration", "2s",
                        "--size", "512M")
    deadline = time.monotonic() + 180
    while len(rows(workdir, "crash-state")) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None and len(rows(workdir, "crash-state")) >= 3, "no state was saved as it was checked"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    saved = rows(workdir, "crash-state")
    assert 3 <= len(saved) < STATES, "the Ctrl-C did not fall in the middle of the configuration's states"
    assert rows(workdir, "crash") == []  # the configuration was not finished
    assert f"{len(saved)} checked crash states kept" in err
    assert mounts_under(workdir) == [] and loops_under(workdir) == [] and ledger_entries(workdir) == []
    run_id = saved[0][0]
    assert re.search(rf"pickfs run --resume {run_id}\b", err), err

    r = pickfs(workdir, "run", "--resume", run_id, "--json", str(workdir / "out.json"))
    assert r.returncode == 0, r.stderr
    assert f"checking {STATES - len(saved)} states ({len(saved)} kept from an interrupted attempt)" in r.stdout + r.stderr
    states = rows(workdir, "crash-state")
    assert sorted(rep for _, rep, _, _ in states) == list(range(STATES))  # each state checked once, none again
    assert states[:len(saved)] == saved  # what was saved before the Ctrl-C is untouched
    (final,) = rows(workdir, "crash")
    doc = json.loads(final[3])
    assert [s["index"] for s in doc["states"]] == list(range(STATES))
    assert [json.dumps(s, sort_keys=True) for s in doc["states"][:len(saved)]] == \
        [json.dumps(json.loads(raw), sort_keys=True) for _, _, _, raw in saved]  # the kept states, as checked
    assert any(f"{len(saved)} of the {STATES} states were checked before an interruption" in n for n in doc["notes"])
    crash = json.loads((workdir / "out.json").read_text())["cells"][0]["crash"]
    assert crash["metrics"]["crash_states"] == STATES, crash
    distinct = int(crash["metrics"]["crash_distinct_states"])
    said = f"none lost in {distinct} distinct states" + ("" if distinct == STATES else f" ({STATES} tried)")
    assert crash["verdict"].startswith(said) or crash["lost_any"], crash


def test_a_budget_resumed_after_its_first_states_goes_on_with_more(workdir):
    proc = start_pickfs(workdir, "crashtest", "--fs", "ext4", "--crash-time", "30s", "--duration", "2s",
                        "--size", "512M")
    deadline = time.monotonic() + 240
    while len(rows(workdir, "crash-state")) < 14 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the test ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    saved = rows(workdir, "crash-state")
    assert len(saved) >= 14  # past the first 12: in the budget's batches
    r = pickfs(workdir, "run", "--resume", saved[0][0])
    assert r.returncode == 0, r.stderr
    states = rows(workdir, "crash-state")
    assert states[:len(saved)] == saved and len(states) > len(saved)  # kept, and more checked within the budget
    assert sorted(rep for _, rep, _, _ in states) == list(range(len(states)))
    (final,) = rows(workdir, "crash")
    assert len(json.loads(final[3])["states"]) == len(states)
