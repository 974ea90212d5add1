"""Crash fidelity on real loop devices over the FUSE recorder: torn pages, the user's own program."""

import json
import sys
from pathlib import Path

import pytest

from pickfs.crash.session import fuse_unavailable
from tests.conftest import ledger_entries, needs_root, pickfs

pytestmark = [needs_root, pytest.mark.skipif(fuse_unavailable() is not None, reason=str(fuse_unavailable()))]

# The user's program: numbered records appended to a file on the filesystem under test, each
# acknowledged on $PICKFS_ACKS after it was written (and, with "sync", after fsync returned).
WRITER = """
import os, sys, time
sync = sys.argv[1] == "sync"
fd = os.open("records", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
acks = open(os.environ["PICKFS_ACKS"], "w", buffering=1)
deadline = time.monotonic() + 1.5
n = 0
while time.monotonic() < deadline:
    n += 1
    os.write(fd, b"%d\\n" % n)
    if sync:
        os.fsync(fd)
    acks.write(f"{n}\\n")
    time.sleep(0.01)
"""
# Its check: every record acknowledged before the power cut is in the file.
CHECKER = """
import os, sys
owed = [int(x) for x in open(os.environ["PICKFS_ACKS"]).read().split()]
try:
    have = {int(x) for x in open("records").read().split() if x.isdigit()}
except FileNotFoundError:
    have = set()
missing = [n for n in owed if n not in have]
if missing:
    print(f"{len(missing)} of {len(owed)} acknowledged records missing")
    sys.exit(1)
"""


def test_a_program_without_fsync_is_caught_and_one_with_fsync_is_not(workdir):
    writer, checker = workdir / "writer.py", workdir / "checker.py"
    writer.write_text(WRITER)
    checker.write_text(CHECKER)
    plan = workdir / "plan.toml"
    plan.write_text('[[config]]\npreset = "ext4"\n' + "".join(
        f'[[workload]]\nname = "command"\nlabel = "{label}"\ncommand = "{sys.executable} {writer} {label}"\n'
        f'check = "{sys.executable} {checker}"\n' for label in ("nosync", "sync")))
    out, keep = workdir / "crash.json", workdir / "kept"
    r = pickfs(workdir, "crashtest", "--plan", str(plan), "--states", "6", "--keep-states", str(keep),
               "--json", str(out), timeout=900)
    assert r.returncode == 0, r.stderr
    cells = {c["workload"]: c["crash"] for c in json.loads(out.read_text())["cells"]}
    nosync, synced = cells["nosync"], cells["sync"]
    assert nosync["lost_any"] and nosync["metrics"]["crash_inconsistent"] > 0, nosync["verdict"]
    assert "your check failed" in nosync["verdict"]
    assert not synced["lost_any"], [s["problem"] for s in synced["states"]]
    assert synced["metrics"]["crash_flushes"] > 0 and synced["metrics"]["crash_commits"] > 0
    failing = [s for s in nosync["states"] if s["consistent"] is False]
    assert all(s["kept_as"] and Path(s["kept_as"]).stat().st_size > 0 for s in failing)  # kept for inspection
    assert "acknowledged records missing" in failing[0]["problem"]
    assert not any(s["kept_as"] for s in synced["states"])
    assert ledger_entries(workdir) == []


TEARING = ("--strategies", "torn writes,random subset", "--recovery-crashes", "0")


def test_torn_pages_corrupt_or_lose_only_without_the_databases_protection(workdir):
    """full_page_writes=off and innodb_doublewrite=OFF are found losing or corrupting; their defaults are not."""
    from pickfs.services.mariadb import MariaDB
    from pickfs.services.postgresql import PostgreSQL

    for service in (PostgreSQL, MariaDB):
        if service.unavailable_reason():
            pytest.skip(service.unavailable_reason())
    plan = workdir / "plan.toml"
    plan.write_text('[[config]]\npreset = "ext4"\n'
                    '[[workload]]\nname = "pgbench"\nlabel = "pg"\n'
                    '[[workload]]\nname = "pgbench"\nlabel = "pg-fpw-off"\nfull_page_writes = "off"\n'
                    '[[workload]]\nname = "sysbench-oltp"\nlabel = "innodb"\n'
                    '[[workload]]\nname = "sysbench-oltp"\nlabel = "innodb-dblwr-off"\ninnodb_doublewrite = "OFF"\n')
    out = workdir / "crash.json"
    r = pickfs(workdir, "crashtest", "--plan", str(plan), "--states", "10", "--duration", "3s", *TEARING,
               "--json", str(out), timeout=1200)
    assert r.returncode == 0, r.stderr
    cells = {c["workload"]: c["crash"] for c in json.loads(out.read_text())["cells"]}
    for protected, unprotected in (("pg", "pg-fpw-off"), ("innodb", "innodb-dblwr-off")):
        assert not cells[protected]["lost_any"], (protected, [s["problem"] for s in cells[protected]["states"]])
        assert cells[protected]["metrics"]["crash_torn_states"] > 0  # its pages were torn too, and it coped
        assert cells[unprotected]["lost_any"], (unprotected, cells[unprotected]["verdict"])
        losing = [s for s in cells[unprotected]["states"] if s["lost"] or not s["db_opened"] or s["consistent"] is False]
        assert all(s["when"].endswith(")") or "s into the run" in s["when"] for s in losing)
    assert "4 KiB units" in r.stdout and "acknowledges a flush it has not done" in r.stdout
    assert ledger_entries(workdir) == []
