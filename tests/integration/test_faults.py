"""I/O errors injected under real filesystems on real loop devices: the recorder's failed fsync is a failed flush,
and what PostgreSQL and SQLite on this kernel then do with the commits they acknowledged."""

import json
import mmap
import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from pickfs.crash.runner import Program, fsck
from pickfs.crash.session import fuse_unavailable
from pickfs.crash.station import namespaces_holding
from pickfs.databases.firebird import firebird_unavailable
from pickfs.errors import CommandFailed
from pickfs.faults import runner as fault_runner
from pickfs.faults.disk import faulty_disk
from pickfs.faults.outcome import Ended, Truth, verdict
from pickfs.faults.plan import parse_faults
from pickfs.faults.program import program_cell
from pickfs.faults.runner import fault_cell, truth_after
from pickfs.fsfacts import UNWRITTEN_WRITE_BACK
from pickfs.model import Target, WorkloadSpec
from pickfs.plan import resolve_fs_name
from pickfs.services.mariadb import MariaDB
from pickfs.services.postgresql import PostgreSQL
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import attached, provision
from tests.conftest import ledger_entries, loops_under, mounts_under, needs_root, pickfs, start_pickfs

pytestmark = [needs_root, pytest.mark.skipif(fuse_unavailable() is not None, reason=str(fuse_unavailable()))]
SIZE = 512 * 1024**2


def one_cell(fs, spec, fault, workdir, ledger, duration):
    """One fault cell on a preset with the first fault `fault` names, a 2-minute limit past its commits."""
    return fault_cell(resolve_fs_name(fs), spec, parse_faults(fault)[0], workdir, ledger, SIZE, duration=duration,
                      limit_s=120)


def sqlite_spec(**settings):
    return WorkloadSpec(name="sqlite-tpcb", label="sqlite-tpcb", settings=tuple({"journal_mode": "WAL", "synchronous": "FULL",
                                                            **settings}.items()))


def pgbench_spec(**settings):
    return WorkloadSpec(name="pgbench", label="pgbench", settings=tuple(settings.items()))


def sysbench_spec(**settings):
    return WorkloadSpec(name="sysbench-oltp", label="sysbench-oltp", settings=tuple(settings.items()))


def test_a_failed_backing_fsync_is_a_failed_flush_and_a_failed_write_a_failed_write(workdir):
    """The loop driver passes the recorder's EIO up as a block I/O error: fsync of the device fails, and a direct
    write to the aimed range fails while one beside it succeeds; disarmed, both work again."""
    ledger = Ledger(workdir / "ledger")
    for kind in ("flush", "write:data"):
        fault = parse_faults(kind, lasting="forever")[0]
        with faulty_disk(workdir / kind.replace(":", "-"), 64 * 1024**2, ledger, fault) as disk, \
                attached(disk.image, ledger) as device, ExitStack() as stack:
            disk.ranges.write_text(f"{1 << 20} {2 << 20}\n")
            disk.arm(ledger, stack)
            fd = os.open(device, os.O_RDWR | os.O_DIRECT)
            buf = mmap.mmap(-1, 4096)
            try:
                if kind == "flush":
                    os.pwritev(fd, [buf], 0)
                    with pytest.raises(OSError) as exc:
                        os.fsync(fd)
                    assert exc.value.errno == 5
                else:
                    os.pwritev(fd, [buf], 0)  # outside the range: written
                    with pytest.raises(OSError) as exc:
                        os.pwritev(fd, [buf], 1 << 20)
                    assert exc.value.errno == 5
                disk.disarm()
                os.pwritev(fd, [buf], 1 << 20)
                os.fsync(fd)
            finally:
                os.close(fd)
                buf.close()
            assert len(disk.failures()) >= 1
    assert not [e for e in ledger_entries(workdir)], ledger_entries(workdir)


@pytest.mark.parametrize(("options", "lost"), [((), True), (("dioread_lock",), False)])
def test_ext4_loses_a_rewrite_that_succeeded_of_blocks_whose_first_write_back_failed(workdir, options, lost):
    """Why PostgreSQL with defaults loses commits under write:table on ext4: a file's new pages are written back into
    blocks ext4 allocates as unwritten extents (dioread_nolock, its default), to be marked written when the write
    succeeds; the write fails (the recorder writes none of it), fsync says EIO. The same pages written again then
    reach the disk and fsync succeeds, yet once the cache is dropped the file reads zeros: the extent was never
    marked written. With dioread_lock (no unwritten extents at write-back) the rewrite is there."""
    ledger = Ledger(workdir / "ledger")
    ext4 = resolve_fs_name("ext4")
    config = replace(ext4, mount_options=ext4.mount_options + options)
    size = 256 * 1024**2
    with faulty_disk(workdir / "disk", size, ledger, parse_faults("write:data")[0]) as disk, ExitStack() as stack, \
            provision(config, Target(kind="image", workdir=str(workdir), size_bytes=size), ledger,
                      image=disk.image) as prov:
        fd = os.open(prov.datadir / "table", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.fsync(fd)
            disk.aim_ranges([(0, size)])  # the first write after arming fails, once: the file's write-back
            os.pwrite(fd, b"A" * 65536, 0)  # new pages: their blocks are allocated at write-back
            disk.arm(ledger, stack)
            with pytest.raises(OSError) as exc:
                os.fsync(fd)
            assert exc.value.errno == 5
            disk.disarm()
            (failed,) = [line.split() for line in disk.injected.read_text().splitlines()]
            os.pwrite(fd, b"B" * 65536, 0)
            os.fsync(fd)  # the rewrite succeeds
            with open(disk.image, "rb") as device:
                device.seek(int(failed[2]))
                assert device.read(4) == b"BBBB"  # and is on the disk, where the failed write was
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            assert os.pread(fd, 4, 0) == (b"\0" * 4 if lost else b"BBBB")
        finally:
            os.close(fd)
    assert not ledger_entries(workdir) and not mounts_under(workdir) and not loops_under(workdir)


@pytest.mark.skipif(PostgreSQL.unavailable_reason() is not None, reason=str(PostgreSQL.unavailable_reason()))
def test_postgresql_with_defaults_panics_on_a_failed_flush_and_loses_no_acknowledged_commit(workdir):
    ledger = Ledger(workdir / "ledger")
    cell = one_cell("ext4", pgbench_spec(), "flush", workdir, ledger, 4.0)
    said = verdict(cell)
    assert cell.outcome is Ended.MEASURED, said
    assert cell.injected == 1, said
    assert cell.behaviour is not None and cell.behaviour.server.startswith("stopped (PANIC)"), said
    assert any("PANIC" in line for line in cell.behaviour.server_log), cell.behaviour.server_log
    assert cell.truth is not None and cell.truth.came_up, said
    assert cell.counts is not None and cell.counts.acked > 0 and cell.counts.acked_lost == 0, said
    assert cell.counts.corruption == "", said
    assert not ledger_entries(workdir) and not mounts_under(workdir) and not loops_under(workdir)


@pytest.mark.skipif(PostgreSQL.unavailable_reason() is not None, reason=str(PostgreSQL.unavailable_reason()))
def test_postgresql_with_data_sync_retry_keeps_running_after_a_failed_data_file_fsync(workdir):
    """The setting fsyncgate added: on, a failed checkpoint fsync is an ERROR and the server goes on; off (the
    default, covered above for the WAL) it PANICs."""
    ledger = Ledger(workdir / "ledger")
    cell = one_cell("ext4", pgbench_spec(data_sync_retry="on"), "write:data", workdir, ledger, 4.0)
    said = verdict(cell)
    assert cell.outcome is Ended.MEASURED and cell.injected == 1, said
    assert cell.behaviour is not None and cell.behaviour.server == "kept running", said
    assert any("ERROR" in x and "could not fsync" in x for x in cell.behaviour.server_log), cell.behaviour.server_log
    assert cell.write_back_errors, said  # the checkpoint the client asked for failed
    assert cell.truth is not None and cell.truth.came_up, said


@pytest.mark.skipif(PostgreSQL.unavailable_reason() is not None, reason=str(PostgreSQL.unavailable_reason()))
def test_fsyncgate_a_failed_write_back_of_pages_never_written_again_then_a_checkpoint_that_succeeds(workdir):
    """The case data_sync_retry decides: a checkpoint's write-back of the commits table's blocks (rows written once,
    never changed again) fails once; the next checkpoint is left to succeed. With the default the server stops
    (PANIC) and replays its WAL from the checkpoint before: nothing acknowledged is lost. With data_sync_retry=on
    it logs an ERROR and goes on; the next checkpoint succeeds without the failed pages, which the kernel had
    marked clean; after the restart (the page cache gone with the loop device) the commits on those pages are
    gone: lost with data_sync_retry=on in every run here. With the default, nothing was lost in three runs of eight; in
    the others the rows on the pages whose write-back failed (the request held the table's blocks only): the
    rows on pages first written in the failed request: the restarted server's recovery wrote them again and its
    fsync succeeded, yet ext4 had left their blocks marked unwritten, so they read as zeros after the restart
    (the test above pins that; with dioread_lock nothing was lost in four runs): not pinned here, only the PANIC."""
    ledger = Ledger(workdir / "ledger")
    default = one_cell("ext4", pgbench_spec(), "write:table", workdir, ledger, 5.0)
    said = verdict(default)
    assert default.outcome is Ended.MEASURED and default.injected >= 1, said
    assert default.behaviour is not None and default.behaviour.server.startswith("stopped (PANIC), then restarted"), said
    assert any("PANIC" in x and "could not fsync" in x for x in default.behaviour.server_log), said
    assert default.traits == (UNWRITTEN_WRITE_BACK,), said  # ext4's defaults: the cause a loss here is named by
    assert default.counts is not None and ("dioread_nolock" in said) == (default.counts.acked_lost > 0), said
    retry = one_cell("ext4", pgbench_spec(data_sync_retry="on"), "write:table", workdir, ledger, 5.0)
    said = verdict(retry)
    assert retry.outcome is Ended.MEASURED and retry.injected >= 1, said
    assert retry.behaviour is not None and retry.behaviour.server == "kept running", said
    assert retry.write_back_errors and retry.write_back_ok_after_error, said  # failed, then a checkpoint succeeded
    assert retry.counts is not None and retry.truth is not None and retry.truth.came_up, said
    assert retry.counts.acked_lost > 0, said  # PINNED
    assert not ledger_entries(workdir) and not mounts_under(workdir) and not loops_under(workdir)


@pytest.mark.parametrize(("fs", "did"), [("ext4", "remounted itself read-only (ext4)"), ("xfs", "shut down (xfs)")])
def test_a_failed_journal_write_stops_the_filesystem_and_sqlite_is_told(workdir, fs, did):
    """write:journal: the journal's blocks as the filesystem's own tools place them (ext4's journal inode, xfs's
    internal log); a failed journal write is one the filesystem cannot go on from."""
    ledger = Ledger(workdir / "ledger")
    cell = one_cell(fs, sqlite_spec(), "write:journal", workdir, ledger, 4.0)
    said = verdict(cell)
    assert cell.outcome is Ended.MEASURED and cell.injected >= 1, said
    assert cell.behaviour is not None and cell.behaviour.filesystem.startswith(did), said
    assert cell.counts is not None and cell.counts.failed > 0, said  # the client was told
    assert cell.truth is not None and cell.truth.came_up and cell.counts.acked_lost == 0, said
    assert not ledger_entries(workdir) and not mounts_under(workdir) and not loops_under(workdir)


@pytest.mark.skipif(MariaDB.unavailable_reason() is not None, reason=str(MariaDB.unavailable_reason()))
@pytest.mark.parametrize("flush_method", ["", "fsync"])
def test_mariadb_aborts_on_a_failed_flush_of_its_redo_log_and_stays_down(workdir, flush_method):
    """InnoDB (O_DIRECT, its default, or fsync) takes a failed fdatasync of its redo log as fatal: the server
    aborts and, with no supervisor, stays down; the client is told the connection was lost; after restart
    (InnoDB's crash recovery) no acknowledged commit is missing and CHECK TABLE passes. When the flush that
    fails is ext4's own journal commit instead (which one comes first after the fault is armed is a race),
    ext4 aborts its journal and goes read-only, and the server stops with its log (on that filesystem)
    unwritten: the same truth after restart."""
    ledger = Ledger(workdir / "ledger")
    settings = {"innodb_flush_method": flush_method} if flush_method else {}
    cell = one_cell("ext4", sysbench_spec(**settings), "flush", workdir, ledger, 4.0)
    said = verdict(cell)
    assert cell.outcome is Ended.MEASURED and cell.injected == 1, said
    b = cell.behaviour
    assert b is not None, said
    if b.filesystem.startswith("remounted itself read-only"):
        assert b.server == "stopped" and any("aborted journal" in x for x in b.kernel), said
    else:
        assert b.server == "aborted, and stayed down", said
        assert any("[FATAL] InnoDB: fdatasync() returned 5" in x for x in b.server_log), b.server_log
    assert "Lost connection" in cell.first_error, said
    assert cell.truth is not None and cell.truth.came_up and cell.truth.own_check == "ok", said
    assert cell.counts is not None and cell.counts.acked > 0 and cell.counts.acked_lost == 0, said
    assert cell.counts.failed == 1 and cell.counts.corruption == "", said
    assert not ledger_entries(workdir) and not mounts_under(workdir) and not loops_under(workdir)


@pytest.mark.skipif(MariaDB.unavailable_reason() is not None, reason=str(MariaDB.unavailable_reason()))
def test_mariadb_aborts_on_a_failed_write_of_its_redo_log(workdir):
    """The redo log is written with O_DIRECT: the failed block write is the server's own pwrite error, and fatal."""
    ledger = Ledger(workdir / "ledger")
    cell = one_cell("ext4", sysbench_spec(), "write:wal", workdir, ledger, 4.0)
    said = verdict(cell)
    assert cell.outcome is Ended.MEASURED and cell.injected == 1, said
    assert cell.behaviour is not None and cell.behaviour.server == "aborted, and stayed down", said
    assert any('pwrite("ib_logfile0") returned -1, operating system error 5' in x
               for x in cell.behaviour.server_log), cell.behaviour.server_log
    assert cell.truth is not None and cell.truth.came_up, said
    assert cell.counts is not None and cell.counts.acked > 0 and cell.counts.acked_lost == 0, said
    assert cell.counts.false_failures == 0 and cell.counts.corruption == "", said
    assert not ledger_entries(workdir)


@pytest.mark.skipif(firebird_unavailable() is not None, reason=str(firebird_unavailable()))
@pytest.mark.parametrize("kind", ["flush", "write:data"])
def test_firebird_with_forced_writes_under_a_failed_flush_or_data_write(workdir, kind):
    """Firebird (embedded, forced writes: its file opened O_DSYNC) has no write-ahead log: a write fault is aimed
    at the database file. Whether the committing client is told depends on which write meets the fault (its own
    O_DSYNC write: 'I/O error during "write" operation'; another thread's or the journal's: nothing); after
    restart no acknowledged commit was lost and gfix -v found nothing."""
    ledger = Ledger(workdir / "ledger")
    spec = WorkloadSpec(name="firebird-tpcb", label="firebird-tpcb",
                        settings=(("backend", "firebird"), ("clients", 1), ("forced_writes", "on")))
    cell = one_cell("ext4", spec, kind, workdir, ledger, 4.0)
    said = verdict(cell)
    assert cell.outcome is Ended.MEASURED and cell.injected == 1, said
    assert cell.settings == "forced_writes=on" and cell.behaviour is not None, said
    assert cell.behaviour.server.startswith("embedded"), said
    assert cell.counts is not None and cell.counts.failed <= 1, said
    assert cell.counts.failed == 0 or "I/O error" in cell.first_error, said
    assert cell.truth is not None and cell.truth.came_up and cell.truth.own_check == "ok", said
    assert cell.counts.acked > 0 and cell.counts.acked_lost == 0 and cell.counts.corruption == "", said
    assert not ledger_entries(workdir) and not mounts_under(workdir) and not loops_under(workdir)


def test_firebird_has_no_write_ahead_log_to_fail(workdir):
    if firebird_unavailable():
        pytest.skip(str(firebird_unavailable()))
    spec = WorkloadSpec(name="firebird-tpcb", label="firebird-tpcb", settings=(("backend", "firebird"), ("clients", 1)))
    cell = one_cell("ext4", spec, "write:wal", workdir, Ledger(workdir / "ledger"), 3.0)
    assert cell.outcome is Ended.NOT_RUN and cell.notes == ("firebird keeps no wal files to fail writes to",), \
        cell.notes
    assert cell.seconds < 5, cell.seconds  # refused before anything was made
    assert not ledger_entries(workdir)


def test_sqlite_returns_an_io_error_for_the_commit_whose_flush_failed(workdir):
    ledger = Ledger(workdir / "ledger")
    cell = one_cell("ext4", sqlite_spec(), "flush", workdir, ledger, 3.0)
    said = verdict(cell)
    assert cell.outcome is Ended.MEASURED and cell.injected == 1, said
    assert cell.counts is not None and cell.counts.failed >= 1, said
    assert "disk I/O error" in cell.first_error, said
    assert cell.counts.acked_lost == 0 and cell.truth is not None and cell.truth.came_up, said
    assert not ledger_entries(workdir)


def test_a_write_fault_on_the_wal_reaches_sqlite_as_an_error(workdir):
    ledger = Ledger(workdir / "ledger")
    cell = one_cell("ext4", sqlite_spec(), "write:wal", workdir, ledger, 3.0)
    said = verdict(cell)
    assert cell.outcome is Ended.MEASURED and cell.injected == 1, said
    assert cell.counts is not None and cell.counts.failed >= 1, said
    assert cell.truth is not None and cell.truth.came_up and cell.counts.acked_lost == 0, said


@pytest.mark.skipif(PostgreSQL.unavailable_reason() is not None, reason=str(PostgreSQL.unavailable_reason()))
def test_a_write_fault_is_never_aimed_where_the_mapping_is_not_the_devices(workdir):
    """btrfs maps files to its own logical addresses (through its chunk tree): PostgreSQL's files there are not
    where FIEMAP says on the device, so a write fault would fail some other block; the cell is not run, and says
    why."""
    ledger = Ledger(workdir / "ledger")
    cell = one_cell("btrfs", pgbench_spec(), "write:data", workdir, ledger, 3.0)
    assert cell.outcome is Ended.NOT_RUN and cell.injected == 0, verdict(cell)
    assert any("not the device's addresses" in n for n in cell.notes), cell.notes
    assert not ledger_entries(workdir)


def test_crashtest_fault_reports_each_cell_in_words_and_json(workdir, tmp_path):
    out = tmp_path / "faults.json"
    r = pickfs(workdir, "crashtest", "--fs", "ext4", "--fault", "flush", "--duration", "3s", "--json", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(out.read_text())["faults"]
    (cell,) = doc["cells"]
    assert cell["fault"] == "flush" and cell["outcome"] == "measured" and cell["injected"] == 1
    assert "safe" not in cell["verdict"] and "a sample, not a guarantee" in cell["verdict"]
    assert "with ext4 and sqlite" in r.stdout and "model:" in r.stdout
    assert r.stdout.count("with ext4 and sqlite") == 1 and "with ext4 and sqlite" not in r.stderr  # said once
    # kept in the results database: listed, and drawn again from it in every format
    listed = pickfs(workdir, "results", "--json", "-")
    assert listed.returncode == 0 and json.loads(listed.stdout)[-1]["measured"] == 1, listed.stderr
    page, md = tmp_path / "faults.html", tmp_path / "faults.md"
    again = pickfs(workdir, "report", "latest", "--html", str(page), "--markdown", str(md), "--json", "-")
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["faults"]["cells"][0]["verdict"] == cell["verdict"]
    assert "<table>" in page.read_text() and "a cache flush fails" in page.read_text()
    assert "| sqlite" in md.read_text()


def test_tpcc_is_fault_tested_on_its_database_with_the_fault_clients_transactions(workdir, tmp_path):
    """As the power-cut test does: TPC-C's database with TPC-C's settings, the commits the fault client numbers."""
    out = tmp_path / "faults.json"
    r = pickfs(workdir, "crashtest", "--fs", "ext4", "--workload", "tpcc", "--fault", "flush", "--json", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    (cell,) = json.loads(out.read_text())["faults"]["cells"]
    assert (cell["database"], cell["outcome"], cell["injected"]) == ("sqlite", "measured", 1), cell["verdict"]
    assert cell["counts"]["acked"] > 0 and cell["counts"]["acked_lost"] == 0, cell["verdict"]


WRITER = """import os, sys, time
acks = open(os.environ["PICKFS_ACKS"], "w", buffering=1)
fd = os.open("log.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
deadline, n = time.monotonic() + 4, 0
while time.monotonic() < deadline:
    n += 1
    os.write(fd, f"{n}\\n".encode())
    try:
        os.fsync(fd)
    except OSError as exc:
        sys.exit(f"fsync of line {n} failed: {exc}")
    acks.write(f"{n}\\n")
"""
CHECK = """import os, sys
owed = [x.strip() for x in open(os.environ["PICKFS_ACKS"]) if x.strip()]
have = set(open("log.txt").read().split()) if os.path.exists("log.txt") else set()
missing = [x for x in owed if x not in have]
sys.exit(f"{len(missing)} acknowledged lines missing" if missing else 0)
"""


def test_your_own_command_under_a_failed_flush_is_judged_by_your_check(workdir, tmp_path):
    """The user's command writes a line, fsyncs it, acknowledges it; the flush fails once: the command is told
    (its fsync fails) and ends; after the restart the user's check, given every acknowledged line, judges."""
    writer, check, out = tmp_path / "writer.py", tmp_path / "check.py", tmp_path / "faults.json"
    writer.write_text(WRITER)
    check.write_text(CHECK)
    r = pickfs(workdir, "crashtest", "--fs", "ext4", "--workload", "command", "--set",
               f'command="{sys.executable} {writer}"', "--check", f"{sys.executable} {check}", "--fault", "flush",
               "--json", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    (cell,) = json.loads(out.read_text())["faults"]["cells"]
    assert (cell["outcome"], cell["injected"], cell["judged"]) == ("measured", 1, True), cell["verdict"]
    assert cell["counts"]["acked"] > 0 and cell["counts"]["failed"] == 1, cell["verdict"]
    assert "fsync of line" in cell["first_error"] and cell["counts"]["corruption"] == "", cell["verdict"]
    assert "your check, given the acknowledged lines, passed" in cell["verdict"]
    assert not ledger_entries(workdir) and not mounts_under(workdir) and not loops_under(workdir)


def test_a_plans_fault_key_runs_the_fault_matrix(workdir, tmp_path):
    plan, out = tmp_path / "plan.toml", tmp_path / "faults.json"
    plan.write_text('[method]\nfault = "flush"\nfault_seed = 3\n[[config]]\npreset = "xfs"\n'
                    '[[workload]]\nname = "sqlite-tpcb"\n')
    r = pickfs(workdir, "crashtest", "--plan", str(plan), "--json", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    (cell,) = json.loads(out.read_text())["faults"]["cells"]
    assert (cell["config"], cell["fault"], cell["outcome"]) == ("xfs", "flush", "measured")
    assert "(seed 3)" in cell["plan"] and cell["injected"] == 1


def test_kill_9_while_a_fault_is_armed_then_cleanup_leaves_nothing(workdir):
    proc = start_pickfs(workdir, "crashtest", "--fs", "ext4", "--fault", "flush", "--fault-for", "forever",
                        "--duration", "30s")
    deadline = time.monotonic() + 180
    def armed() -> list[dict]:
        return [e for e in ledger_entries(workdir) if str(e["fields"].get("path", "")).endswith("/armed")]

    while time.monotonic() < deadline and not armed():
        time.sleep(0.2)
    seen = armed()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert seen, ledger_entries(workdir)
    r = pickfs(workdir, "cleanup", timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert not ledger_entries(workdir) and not mounts_under(workdir) and not loops_under(workdir)
    assert not subprocess.run(["pgrep", "-f", f"pickfs.crash.recorder {workdir}"], capture_output=True).stdout


def test_errors_panic_is_refused_before_anything_is_made(workdir, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('[[config]]\nname = "ext4-panic"\nfs = "ext4"\nmount = ["errors=panic"]\n'
                    '[[workload]]\nname = "sqlite-tpcb"\n')
    r = pickfs(workdir, "crashtest", "--plan", str(plan), "--fault", "flush")
    assert r.returncode == 2, r.stderr
    assert "errors=panic" in r.stderr and "Traceback" not in r.stderr
    assert not ledger_entries(workdir)




def test_the_mount_after_the_fault_copied_into_another_namespace_is_unmounted_there_before_fsck(workdir, monkeypatch):
    """A mount namespace made while the cell's image was mounted again (unshare --mount, ip netns exec) kept its
    filesystem alive after the unmount: fsck would read it half written. The check after the fault unmounts such a
    copy before fsck, as a crash test's station does."""
    ledger, image = Ledger(workdir / "ledger"), workdir / "cell.img"
    with open(image, "wb") as fh:
        fh.truncate(256 * 1024**2)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    others: list[subprocess.Popen[bytes]] = []
    held_at_fsck: list[list[int]] = []

    def judge(datadir: Path) -> Truth:
        (datadir.parent / "f").write_bytes(b"x" * 65536)
        # another program makes a mount namespace now: it copies every mount, this one too
        others.append(subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sleep", "60"]))
        for _ in range(100):
            if str(datadir.parent) in Path(f"/proc/{others[0].pid}/mountinfo").read_text():
                break
            time.sleep(0.05)
        assert str(datadir.parent) in Path(f"/proc/{others[0].pid}/mountinfo").read_text()
        return Truth(True, own_check="ok")

    def watched_fsck(fstype: str, device: str) -> tuple[bool | None, str]:
        held_at_fsck.append(namespaces_holding(device))
        return fsck(fstype, device)

    monkeypatch.setattr(fault_runner, "fsck", watched_fsck)
    try:
        truth = truth_after(image, workdir, ledger, resolve_fs_name("ext4"), judge)
        assert held_at_fsck == [[]]  # nothing held the filesystem when fsck read it
        assert others and others[0].poll() is None  # the other program goes on, without the copy
        assert (truth.fsck_ok, truth.problem) == (True, ""), truth
    finally:
        for other in others:
            other.kill()
            other.wait()
    assert ledger_entries(workdir) == []


def test_your_own_commands_cell_is_kept_when_its_server_cannot_stop_cleanly(workdir, tmp_path, monkeypatch):
    """A server that fails to stop after the fault (its stop command fails) is the cell's note, as for a database
    pickfs knows: the measured cell is not thrown away."""
    writer, check = tmp_path / "writer.py", tmp_path / "check.py"
    writer.write_text(WRITER)
    check.write_text(CHECK)
    started = Program.server

    @contextmanager
    def failing_stop(self, datadir, ledger, rundir, fresh):
        with started(self, datadir, ledger, rundir, fresh) as endpoint:
            yield endpoint
        if fresh:
            raise CommandFailed(["stop"], 1, "the server would not stop")

    monkeypatch.setattr(Program, "server", failing_stop)
    spec = WorkloadSpec(name="command", label="command", settings=(
        ("command", f"{sys.executable} {writer}"), ("check", f"{sys.executable} {check}")))
    cell = program_cell(resolve_fs_name("ext4"), spec, parse_faults("flush")[0], workdir, Ledger(workdir / "ledger"),
                        SIZE, duration=4.0, limit_s=120)
    assert (cell.outcome, cell.injected, cell.judged) == (Ended.MEASURED, 1, True), cell.notes
    assert any(n.startswith("stopping the server: ") and "would not stop" in n for n in cell.notes), cell.notes
    assert cell.counts.acked > 0 and cell.truth is not None and cell.truth.own_check == "ok", cell
    assert not ledger_entries(workdir) and not mounts_under(workdir) and not loops_under(workdir)


CREATOR = """import os, time
acks = open(os.environ["PICKFS_ACKS"], "w", buffering=1)
os.makedirs("files", exist_ok=True)
deadline, n = time.monotonic() + 8, 0  # ends by itself well within the cell's 3 s + 15 s
while time.monotonic() < deadline:
    n += 1
    try:
        os.close(os.open(f"files/{n}", os.O_CREAT | os.O_WRONLY, 0o644))
    except OSError:
        continue
    if n % 1000 == 0:
        try:
            os.sync()
            acks.write(f"{n}\\n")
        except OSError:
            pass
"""
FILES_CHECK = """import os, sys
owed = [x.strip() for x in open(os.environ["PICKFS_ACKS"]) if x.strip()]
missing = [x for x in owed if not os.path.exists(f"files/{x}")]
sys.exit(f"{len(missing)} acknowledged files missing" if missing else 0)
"""


def test_xfs_retrying_its_failed_metadata_writes_for_ever_is_a_hung_cell_and_everything_is_undone(workdir, tmp_path):
    """Every write but the journal's fails from then on, under a command that creates files: xfs retries the failed
    write-back of its metadata for ever (its default for EIO), its journal cannot move on, and the command waits:
    the cell's time limit ends it, it is reported as hung, and the disk is disarmed, the filesystem unmounted, the
    loop device detached, the recorder stopped. (SQLite, whose writes fail at once with EIO and which makes little
    metadata, was told its errors and did not hang in 3 s.)"""
    creator, check, out = tmp_path / "creator.py", tmp_path / "check.py", tmp_path / "faults.json"
    creator.write_text(CREATOR)
    check.write_text(FILES_CHECK)
    r = pickfs(workdir, "crashtest", "--fs", "xfs", "--workload", "command", "--set",
               f'command="{sys.executable} {creator}"', "--check", f"{sys.executable} {check}",
               "--fault", "write:outside-journal", "--fault-for", "forever", "--fault-limit", "15s",
               "--duration", "3s", "--json", str(out), timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    (cell,) = json.loads(out.read_text())["faults"]["cells"]
    assert cell["outcome"] == "hung", cell["verdict"]
    assert "hung" in cell["verdict"] and cell["injected"] > 0, cell["verdict"]
    assert not ledger_entries(workdir) and not mounts_under(workdir) and not loops_under(workdir)
    assert not subprocess.run(["pgrep", "-f", f"pickfs.crash.recorder {workdir}"], capture_output=True).stdout


def test_kill_9_while_xfs_hangs_on_failed_metadata_writes_then_cleanup_leaves_nothing(workdir):
    proc = start_pickfs(workdir, "crashtest", "--fs", "xfs", "--workload", "sqlite-tpcb", "--fault",
                        "write:outside-journal", "--fault-for", "forever", "--fault-limit", "2m", "--duration", "3s")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not [e for e in ledger_entries(workdir)
                                                if str(e["fields"].get("path", "")).endswith("/armed")]:
        time.sleep(0.2)
    time.sleep(8)  # past its 3 s of commits: the client waits on xfs
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    r = pickfs(workdir, "cleanup", timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert not ledger_entries(workdir) and not mounts_under(workdir) and not loops_under(workdir)
    assert not subprocess.run(["pgrep", "-f", f"pickfs.crash.recorder {workdir}"], capture_output=True).stdout
