import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pickfs.safepaths import MARKER

IS_ROOT = os.geteuid() == 0
# CI installs every prerequisite (bootstrap.sh), so under CI a skipped test means a broken set-up:
# it is reported as a failure. A test that may legitimately not apply carries @pytest.mark.may_skip.
UNDER_CI = bool(os.environ.get("CI"))
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root: loop devices, mkfs and mount (CI runs as root)")


def mounts_under(path: Path) -> list[str]:
    return [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[1].startswith(str(path))]


def loops_under(path: Path) -> list[str]:
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(path) in line]


@pytest.fixture
def workdir():
    """A private pickfs work directory; afterwards nothing of it may be mounted or attached."""
    path = Path("/var/tmp") / f"pickfs-test-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    (path / MARKER).touch(mode=0o600)  # as pickfs marks the work directories it makes: tests may add files first
    yield path
    leftovers = mounts_under(path), loops_under(path)
    for mp in reversed(leftovers[0]):
        subprocess.run(["umount", "-l", mp])
    for line in leftovers[1]:
        subprocess.run(["losetup", "-d", line.split(":")[0]])
    shutil.rmtree(path, ignore_errors=True)
    assert leftovers == ([], []), f"pickfs left resources behind: {leftovers}"


def pickfs(workdir: Path, *args: str, timeout: float = 900, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PICKFS_WORKDIR": str(workdir), "CI": "1"}
    return subprocess.run([sys.executable, "-m", "pickfs", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, **kw)


def start_pickfs(workdir: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PICKFS_WORKDIR": str(workdir), "CI": "1"}
    return subprocess.Popen([sys.executable, "-m", "pickfs", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def ledger_entries(workdir: Path) -> list[dict]:
    d = workdir / "ledger"
    return [json.loads(p.read_text()) for p in d.glob("*.json")] if d.is_dir() else []


def measured_trials(workdir: Path) -> list[tuple]:
    db = workdir / "results.db"
    if not db.exists():
        return []
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute("SELECT run_id, cell_index, repetition, started FROM trials"
                            " WHERE phase='measured' AND ok=1 ORDER BY id").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


@pytest.fixture
def store(tmp_path):
    """An empty results database."""
    from pickfs.store import ResultStore

    s = ResultStore(tmp_path / "results.db")
    yield s
    s.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI a skip is a failure (a missing prerequisite), unless the test is marked may_skip."""
    outcome = yield
    report = outcome.get_result()
    if UNDER_CI and report.skipped and not hasattr(report, "wasxfail") and item.get_closest_marker("may_skip") is None:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, which installs every prerequisite: {reason}"
