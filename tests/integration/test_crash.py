"""Crash tests on real loop devices over the FUSE recorder: what theory says must be found, is found."""

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from pickfs.crash import log as wlog
from pickfs.crash.session import fuse_unavailable, recording
from pickfs.databases.firebird import firebird_unavailable
from pickfs.model import Target
from pickfs.plan import resolve_fs_name
from pickfs.services.mariadb import MariaDB
from pickfs.services.postgresql import PostgreSQL
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import provision
from tests.conftest import ledger_entries, needs_root, pickfs

pytestmark = [needs_root, pytest.mark.skipif(fuse_unavailable() is not None, reason=str(fuse_unavailable()))]
FAST = ("--states", "6", "--duration", "1.5s")


def crash_cells(path: Path) -> dict[tuple[str, str], dict]:
    return {(c["config"], c["workload"]): c["crash"] for c in json.loads(path.read_text())["cells"]}


def plan_file(tmp: Path, configs: list[str], workloads: list[str]) -> Path:
    text = "".join(f'[[config]]\npreset = "{c}"\n' for c in configs) + "".join(workloads)
    path = tmp / "plan.toml"
    path.write_text(text)
    return path


def test_the_recorder_sees_flushes_and_its_log_replays_to_the_image(workdir):
    ledger = Ledger(workdir / "ledger")
    for preset, flushes_expected in (("ext4", True), ("ext4-nobarrier", False)):
        base = workdir / preset
        with recording(base, 256 * 1024**2, ledger) as rec:
            target = Target(workdir=str(workdir), size_bytes=256 * 1024**2)
            with provision(resolve_fs_name(preset), target, ledger, image=rec.image) as prov:
                os.sync()
                t0 = time.monotonic_ns()
                for _ in range(10):
                    fd = os.open(prov.datadir / "f", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
                    os.write(fd, b"x" * 4096)
                    os.fdatasync(fd)
                    os.close(fd)
                t1 = time.monotonic_ns()
        during = [r for r in wlog.read_log(rec.log) if t0 < r.t_ns <= t1]
        flushes = sum(1 for r in during if r.kind == wlog.FLUSH)
        assert (flushes >= 10) == flushes_expected, (preset, flushes)
        # fdatasync writes the data to the device with or without barriers; only the cache flush goes
        assert sum(r.length for r in during if r.kind == wlog.WRITE) >= 10 * 4096, (preset, len(during))
        replayed = base / "replayed.img"
        with open(replayed, "wb") as fh:
            fh.truncate(256 * 1024**2)
        wlog.apply(rec.log, wlog.read_log(rec.log), replayed)
        assert subprocess.run(["cmp", "-s", str(replayed), str(rec.backing)]).returncode == 0
    assert ledger_entries(workdir) == []


def test_sqlite_full_loses_nothing_on_default_mounts_but_nobarrier_and_synchronous_off_lose(workdir):
    plan = plan_file(workdir, ["ext4", "ext4-nobarrier", "xfs", "btrfs"], [
        '[[workload]]\nname = "sqlite-tpcb"\nlabel = "full"\nsynchronous = "FULL"\n',
        '[[workload]]\nname = "sqlite-tpcb"\nlabel = "off"\nsynchronous = "OFF"\n'])
    out = workdir / "crash.json"
    r = pickfs(workdir, "crashtest", "--plan", str(plan), *FAST, "--json", str(out), timeout=1200)
    assert r.returncode == 0, r.stderr
    cells = crash_cells(out)
    for fs in ("ext4", "xfs", "btrfs"):
        c = cells[fs, "full"]
        assert not c["lost_any"], (fs, c["verdict"], [s["problem"] for s in c["states"]])
        # what the sample rules out, counting only the distinct states cut at random moments
        distinct, drawn = int(c["metrics"]["crash_distinct_states"]), int(c["metrics"]["crash_drawn_states"])
        assert c["verdict"].startswith(f"none lost in {distinct} distinct states")
        assert f"would have shown with 95% confidence, counting the {drawn} cut at random moments" in c["verdict"]
        assert c["metrics"]["crash_flushes"] > 0 and c["metrics"]["crash_commits"] > 0
    nobarrier = cells["ext4-nobarrier", "full"]
    assert nobarrier["lost_any"] and nobarrier["metrics"]["crash_max_lost"] > 0
    assert nobarrier["metrics"]["crash_flushes"] == 0
    for fs in ("ext4", "xfs", "btrfs"):
        assert cells[fs, "off"]["lost_any"], fs
    assert not re.search(r"\bsafe\b", r.stdout)  # "none lost in N states", never "safe"
    assert "crash-test model:" in r.stdout and "volatile write cache" in cells["ext4", "full"]["model"]
    assert ledger_entries(workdir) == [] and not list((workdir / "crash").iterdir())


@pytest.mark.skipif(PostgreSQL.unavailable_reason() is not None, reason=str(PostgreSQL.unavailable_reason()))
def test_postgresql_default_loses_nothing_and_fsync_off_loses(workdir):
    plan = plan_file(workdir, ["ext4"], ['[[workload]]\nname = "pgbench"\nlabel = "default"\n',
                                         '[[workload]]\nname = "pgbench"\nlabel = "nofsync"\nfsync = "off"\n'])
    out = workdir / "crash.json"
    r = pickfs(workdir, "crashtest", "--plan", str(plan), *FAST, "--json", str(out), timeout=1200)
    assert r.returncode == 0, r.stderr
    cells = crash_cells(out)
    assert not cells["ext4", "default"]["lost_any"], cells["ext4", "default"]["verdict"]
    assert cells["ext4", "nofsync"]["lost_any"] and cells["ext4", "nofsync"]["metrics"]["crash_max_lost_s"] > 0
    assert ledger_entries(workdir) == []


@pytest.mark.skipif(MariaDB.unavailable_reason() is not None, reason=str(MariaDB.unavailable_reason()))
def test_mariadb_and_firebird(workdir):
    workloads = ['[[workload]]\nname = "sysbench-oltp"\nlabel = "innodb-1"\n',
                 '[[workload]]\nname = "sysbench-oltp"\nlabel = "innodb-2"\ninnodb_flush_log_at_trx_commit = 2\n']
    if firebird_unavailable() is None:
        workloads += ['[[workload]]\nname = "firebird-tpcb"\nlabel = "fb-sync"\n',
                      '[[workload]]\nname = "firebird-tpcb"\nlabel = "fb-async"\nforced_writes = "off"\n']
    out = workdir / "crash.json"
    # the worst case only (every unflushed write lost), so that the unsafe settings lose in every state
    # cut after an acknowledged commit, whichever moments the states fall on
    r = pickfs(workdir, "crashtest", "--plan", str(plan_file(workdir, ["xfs"], workloads)), "--states", "5",
               "--strategies", "unflushed lost", "--duration", "1.5s", "--json", str(out), timeout=1200)
    assert r.returncode == 0, r.stderr
    cells = crash_cells(out)
    assert not cells["xfs", "innodb-1"]["lost_any"], cells["xfs", "innodb-1"]["verdict"]
    assert cells["xfs", "innodb-2"]["lost_any"]
    if firebird_unavailable() is None:
        assert not cells["xfs", "fb-sync"]["lost_any"], cells["xfs", "fb-sync"]["verdict"]
        assert cells["xfs", "fb-async"]["lost_any"]


def test_a_run_joins_speed_and_a_crash_test(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4,ext4-nobarrier", "--blocks", "1", "--runs", "1", "--warmup", "0", "--duration", "1s",
               "--size", "1G", "--crash-states", "3", "--json", str(out), "--html", str(workdir / "r.html"))
    assert r.returncode == 0, r.stderr
    cells = {c["config"]: c for c in json.loads(out.read_text())["cells"]}
    assert cells["ext4"]["values"] and cells["ext4"]["crash"]["verdict"].startswith("none lost in ")
    assert cells["ext4-nobarrier"]["values"] and cells["ext4-nobarrier"]["crash"]["lost_any"]
    assert "of a crash test" in r.stdout  # the recommendation cites it
    html = (workdir / "r.html").read_text()
    assert "Crash test" in html and "lost commits in a crash test" in html


def test_ctrl_c_during_a_crash_test_leaves_nothing(workdir):
    from tests.conftest import loops_under, mounts_under, start_pickfs

    proc = start_pickfs(workdir, "crashtest", "--fs", "ext4", "--states", "20", "--duration", "20s")
    deadline = time.monotonic() + 90
    while not any("recorder" in m for m in mounts_under(workdir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert any("recorder" in m for m in mounts_under(workdir)), "the recorder never started"
    time.sleep(2)  # commits are being recorded
    proc.send_signal(2)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert mounts_under(workdir) == [] and loops_under(workdir) == []
    assert ledger_entries(workdir) == []
    daemons = subprocess.run(["pgrep", "-f", f"pickfs.crash.recorder {workdir}"], capture_output=True, text=True)
    assert daemons.stdout.strip() == ""


def test_kill_9_during_a_crash_test_then_cleanup_undoes_all(workdir):
    from tests.conftest import loops_under, mounts_under, start_pickfs

    proc = start_pickfs(workdir, "crashtest", "--fs", "ext4", "--states", "20", "--duration", "20s")
    deadline = time.monotonic() + 90
    while len(mounts_under(workdir)) < 2 and time.monotonic() < deadline:  # the recorder and the ext4 on it
        time.sleep(0.2)
    assert len(mounts_under(workdir)) == 2, mounts_under(workdir)
    proc.kill()
    proc.wait(timeout=30)
    assert mounts_under(workdir) and ledger_entries(workdir)  # left behind, and known
    r = pickfs(workdir, "cleanup")
    assert r.returncode == 0, r.stderr
    assert mounts_under(workdir) == [] and loops_under(workdir) == [] and ledger_entries(workdir) == []
    daemons = subprocess.run(["pgrep", "-f", f"pickfs.crash.recorder {workdir}"], capture_output=True, text=True)
    assert daemons.stdout.strip() == ""


def test_every_write_of_a_check_without_barriers_is_undone(workdir):
    """A check on a filesystem mounted without barriers sends no flush: its writes must still all be seen and
    undone, or they leak into the next states (they did: a check's CREATE EXTENSION turned up in later states)."""
    from pickfs.crash.runner import Workbench

    ledger = Ledger(workdir / "ledger")
    size = 256 * 1024**2
    start = workdir / "start.img"
    with open(start, "wb") as fh:
        fh.truncate(size)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(start)], check=True)
    working = workdir / "working.img"
    subprocess.run(["cp", "--sparse=always", str(start), str(working)], check=True)
    mnt = workdir / "mnt"
    mnt.mkdir()
    with recording(workdir / "checks", size, ledger, image=working) as served:
        bench = Workbench(served.log, [], start, 0, served)
        subprocess.run(["mount", "-o", "loop,nobarrier", str(served.image), str(mnt)], check=True)
        try:
            for i in range(50):
                (mnt / f"f{i}").write_bytes(os.urandom(8192))
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
        assert bench.checked()
        bench.reset()
        assert subprocess.run(["cmp", "-s", str(start), str(served.backing)]).returncode == 0
    assert ledger_entries(workdir) == []
