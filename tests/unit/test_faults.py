"""The fault plan, the recorder's fault switch, the client's log, the classification and the verdict words."""

import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pickfs.crash.recorder import FaultSwitch
from pickfs.errors import PlanError
from pickfs.faults.document import cell_doc, cell_from_doc
from pickfs.faults.extents import EXTENT, HEADER, mapping_disagrees, merged, parse_fiemap
from pickfs.faults.outcome import (
    Behaviour,
    Ended,
    FaultCell,
    Truth,
    classify,
    committed_after_error,
    filesystem_said,
    parse_client_log,
    server_said,
    told_after,
    verdict,
)
from pickfs.faults.plan import KINDS, parse_faults, parse_lasting
from pickfs.faults.render import row
from pickfs.faults.watch import alive
from pickfs.fsfacts import UNWRITTEN_WRITE_BACK, traits


def test_the_fault_plan_is_parsed_and_stated():
    (plan,) = parse_faults("flush", nth=3, lasting="2s", seed=7)
    assert (plan.kind, plan.nth, plan.times, plan.for_s) == (KINDS["flush"], 3, 0, 2.0)
    assert "the 3rd such request" in plan.text and "every one for 2 s" in plan.text and "seed 7" in plan.text
    assert parse_faults("flush", seed=7)[0].arm_after_s == plan.arm_after_s  # the seed fixes the moment
    assert [p.kind.name for p in parse_faults("flush,write:wal,flush")] == ["flush", "write:wal"]
    assert parse_lasting("once") == (1, 0.0) and parse_lasting("forever") == (0, 0.0) and parse_lasting("4") == (4, 0.0)


@pytest.mark.parametrize(("kinds", "nth", "lasting", "said"), [
    ("bogus", 1, "once", "no fault pickfs injects"),
    ("", 1, "once", "names no fault"),
    ("flush", 0, "once", "counts from 1"),
    ("flush", 1, "sometimes", "not once, a count"),
])
def test_bad_fault_plans_are_refused_with_the_fix(kinds, nth, lasting, said):
    with pytest.raises(PlanError) as exc:
        parse_faults(kinds, nth, lasting)
    assert said in exc.value.message and exc.value.exit_code == 2


def switch(tmp_path, **spec):
    (tmp_path / "ranges").write_text("4096 8192\n")
    return FaultSwitch({"switch": str(tmp_path / "armed"), "ranges": str(tmp_path / "ranges"),
                        "injected": str(tmp_path / "injected"), **spec})


def test_the_switch_fails_the_kth_request_once_and_only_while_armed(tmp_path):
    s = switch(tmp_path, kind="flush", nth=2, times=1)
    assert not s.fails("flush")  # not armed
    (tmp_path / "armed").mkdir()
    assert [s.fails("flush") for _ in range(4)] == [False, True, False, False]
    assert not s.fails("write", 4096, 512)  # another kind
    assert len((tmp_path / "injected").read_text().splitlines()) == 1


def test_the_switch_fails_writes_that_touch_its_ranges_from_then_on_until_disarmed(tmp_path):
    s = switch(tmp_path, kind="write", nth=1, times=0)
    (tmp_path / "armed").mkdir()
    assert not s.fails("write", 0, 4096) and not s.fails("write", 8192, 4096)  # beside the range
    assert s.fails("write", 4000, 200) and s.fails("write", 8000, 4096) and s.fails("write", 5000, 1)
    (tmp_path / "armed").rmdir()
    assert not s.fails("write", 4096, 4096)


def test_the_switch_fails_for_a_while(tmp_path):
    s = switch(tmp_path, kind="flush", for_s=0.05)
    (tmp_path / "armed").mkdir()
    assert s.fails("flush") and s.fails("flush")
    time.sleep(0.08)
    assert not s.fails("flush")


def test_fiemap_answers_are_read():
    buf = HEADER.pack(0, 0, 0, 2, 2, 0) + EXTENT.pack(0, 1 << 20, 8192, 0, 0, 0) + \
        EXTENT.pack(8192, 0, 4096, 0, 0, 0x4)
    assert parse_fiemap(buf) == [(0, 1 << 20, 8192, 0), (8192, 0, 4096, 4)]
    assert merged([(10, 20), (0, 5), (5, 8), (19, 30)]) == [(0, 8), (10, 30)]
    assert struct.calcsize("=QQQQQI12x") == 56


LOG = """1 A 100
2 A 200
3 E 300 OperationalError: disk I/O error
- C 350 OperationalError: connection refused
4 E 400 OperationalError: disk I/O error
5 A 500
- K 510 a WAL checkpoint
- k 520 OperationalError: disk I/O error
6 A"""


def test_every_transaction_is_classified_against_the_truth():
    log = parse_client_log(LOG)
    assert sorted(log.acked) == [1, 2, 5] and sorted(log.failed) == [3, 4] and log.unconnected == 1
    assert log.write_backs == 1 and log.write_back_errors and log.first_error.endswith("disk I/O error")
    c = classify(log, Truth(True, frozenset({1, 2, 3}), newest=2, own_check="ok", invariant="ok"))
    assert (c.acked, c.acked_present, c.acked_lost, c.failed, c.false_failures) == (3, 2, 1, 2, 1)
    assert c.lost_ids == (5,) and c.false_ids == (3,)
    assert "reads commit 2, but commit 3 is there" in c.old_value and c.corruption == ""
    bad = classify(log, Truth(True, frozenset({1, 2, 5}), newest=5, own_check="row 3 missing", invariant="ok"))
    assert bad.corruption == "row 3 missing" and bad.old_value == ""
    down = classify(log, Truth(False, problem="would not start"))
    assert down.acked_lost == 3
    assert told_after(log, [250, 260]) == pytest.approx(50e-9) and told_after(log, [450]) is None
    assert told_after(log, []) is None
    assert committed_after_error(log) and not committed_after_error(parse_client_log("1 A 100\n2 E 200 x"))


def test_the_filesystem_and_the_server_are_described_from_what_they_said():
    assert filesystem_said(["XFS (loop3): Filesystem has been shut down due to log error (0x2)."], False) \
        == "shut down (xfs)"
    assert filesystem_said(["EXT4-fs error (device loop3): ...", "EXT4-fs (loop3): Remounting filesystem read-only"],
                           True) == "remounted itself read-only (ext4)"
    assert "said nothing" in filesystem_said(["I/O error, dev loop3, sector 0 op 0x1:(WRITE) flags 0x800"], False)
    assert filesystem_said([], True) == "went read-only"
    pg = ["PANIC:  could not fdatasync file \"000000010000000000000001\": Input/output error",
          "LOG:  all server processes terminated; reinitializing",
          "LOG:  database system is ready to accept connections"]
    assert server_said(pg, True, False) == "stopped (PANIC), then restarted"
    assert server_said(pg[:1], False, False) == "stopped (PANIC), and stayed down"
    assert server_said([], True, False) == "kept running"
    told = ["client: OperationalError: server closed the connection unexpectedly",
            "client: OperationalError: FATAL:  the database system is in recovery mode"]
    assert server_said(told, True, False, committed_after=True) == \
        "stopped (a server process crashed; its log was not written), then restarted"
    assert server_said(told, True, False).endswith("but did not come back up")
    io = ["client: IoError: could not fdatasync file \"000000010000000000000001\": Input/output error",
          "client: OperationalError: FATAL: the database system is in recovery mode"]
    assert server_said(io, False, False).startswith("failed on the I/O error") and \
        server_said(io, False, False).endswith("then restarted but did not come back up")
    assert server_said([], False, True).startswith("embedded")


def test_mariadbs_abort_on_a_failed_fdatasync_is_named_and_so_is_a_server_that_exited_unreaped(tmp_path):
    """InnoDB treats a failed flush of its redo log as fatal and aborts; its log says so in its own words. Until
    the process that started it reaps it, the aborted server is a zombie, which is not running."""
    maria = ["2026-11-27 18:15:37 8 [ERROR] [FATAL] InnoDB: fdatasync() returned 5",
             "261127 18:15:37 [ERROR] /usr/sbin/mariadbd got signal 6 ;",
             "client: OperationalError: (2013, 'Lost connection to MySQL server during query')"]
    assert server_said(maria, False, False) == "aborted, and stayed down"
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    (tmp_path / "pid").write_text(f"{child.pid}\n")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and ") Z " not in Path(f"/proc/{child.pid}/stat").read_text():
        time.sleep(0.02)
    try:
        assert not alive(str(tmp_path / "pid"))  # exited, not yet reaped
    finally:
        child.wait()
    (tmp_path / "pid").write_text(f"{os.getpid()}\n")
    assert alive(str(tmp_path / "pid"))


def cell(**kw):
    log = parse_client_log(LOG)
    truth = Truth(True, frozenset({1, 2, 3}), newest=3, own_check="ok", invariant="ok")
    base = dict(config="ext4", database="postgresql", settings="data_sync_retry=on", fault="flush",
                plan="a cache flush fails", outcome=Ended.MEASURED, injected=1, counts=classify(log, truth),
                behaviour=Behaviour("kept running", "said nothing"), truth=truth, first_error=log.first_error)
    return FaultCell(**{**base, **kw})


def test_the_verdict_says_what_was_lost_and_never_calls_anything_safe():
    said = verdict(cell())
    assert "with ext4 and postgresql (data_sync_retry=on)" in said and "the server kept running" in said
    assert "1 acknowledged commit of 3 was lost" in said and "1 commit the client was told failed was there" in said
    assert "safe" not in said and "a sample, not a guarantee" in said
    assert "2 errors, 5 ms after the first injected one" in verdict(cell(told_after_s=0.005))
    assert "a write-back it asked for failed (checkpoint request failed)" in \
        verdict(cell(write_back_errors=("checkpoint request failed",)))
    assert "fault never fired" in verdict(cell(injected=0))
    assert "hung: the cell did not end within its time limit (limit 2m): 1 injected error" in \
        verdict(cell(outcome=Ended.HUNG, notes=("limit 2m",)))
    assert "did not come up" in verdict(cell(truth=Truth(False, problem="PANIC at startup")))
    assert "safe" not in json.dumps(cell_doc(cell()))
    assert row(cell())[4] == "1"


def test_a_loss_that_fits_a_measured_cause_names_it_and_only_then():
    """PostgreSQL losing commits under a failed table write on ext4 with its default unwritten extents: the verdict
    names dioread_nolock and the fix; the same loss on a filesystem without that trait, under another fault, by
    another database, or with nothing lost, names nothing; the trait survives the stored document."""
    ext4 = traits("ext4", ())
    assert ext4 == (UNWRITTEN_WRITE_BACK,)
    for options in (("dioread_lock",), ("noatime,data=journal",), ("nodelalloc",)):
        assert traits("ext4", options) == ()
    assert traits("xfs", ()) == traits("btrfs", ()) == ()
    lost = cell(fault="write:table", traits=ext4)
    assert "the likely cause, measured by pickfs: ext4's unwritten extents (dioread_nolock" in verdict(lost)
    assert "dioread_lock" in verdict(lost)
    for other in (cell(fault="write:table"), cell(fault="flush", traits=ext4),
                  cell(fault="write:table", traits=ext4, database="mariadb"),
                  cell(fault="write:table", traits=ext4, counts=classify(parse_client_log(LOG), Truth(
                      True, frozenset({1, 2, 3, 5}), newest=5)))):
        assert "likely cause" not in verdict(other), other
    assert cell_from_doc(json.loads(json.dumps(cell_doc(lost)))).traits == ext4
    old = json.loads(json.dumps(cell_doc(lost)))
    del old["traits"]  # a cell stored before the trait was kept: none
    assert cell_from_doc(old).traits == ()


def test_crashtest_refuses_bad_fault_options_with_exit_2_before_anything_is_made(tmp_path):
    for args, said in ((["--fault", "bogus"], "no fault pickfs injects"),
                       (["--fault", "flush", "--states", "3"], "for power cuts"),
                       (["--fault", "flush", "--duration", "1s"], "too short"),
                       (["--fault-at", "2"], "need --fault"),
                       (["--fault", "flush", "--html", str(tmp_path / "no-such-dir" / "x.html")], "--html")):
        r = subprocess.run([sys.executable, "-m", "pickfs", "crashtest", "--fs", "ext4", *args], capture_output=True,
                           text=True, env={"PICKFS_WORKDIR": str(tmp_path / "w"), "PATH": "/usr/bin:/bin"})
        assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


def test_a_mapping_of_which_no_block_could_be_checked_is_not_trusted(tmp_path):
    """Files with nothing to compare (all zeros, inline, compressed) prove nothing about the mapping: a write fault
    is not aimed on it."""
    zeros = tmp_path / "zeros"
    zeros.write_bytes(bytes(64 * 1024))
    try:
        os.close(os.open(zeros, os.O_RDONLY | os.O_DIRECT))
    except OSError:
        pytest.skip("no O_DIRECT on the temporary directory's filesystem")
    said = mapping_disagrees(str(zeros), [zeros])
    assert said is not None and "could be checked against the device" in said


def test_the_plan_keys_are_checked_and_read_by_crashtest_only(tmp_path):
    def pickfs(*args: str, fault: str = "flush") -> subprocess.CompletedProcess[str]:
        plan = tmp_path / "plan.toml"
        plan.write_text(f'[method]\nfault = "{fault}"\nfault_for = "2s"\n[[config]]\npreset = "ext4"\n'
                        '[[workload]]\nname = "sqlite-tpcb"\n')
        return subprocess.run([sys.executable, "-m", "pickfs", *args, "--plan", str(plan)], capture_output=True,
                              text=True, env={"PICKFS_WORKDIR": str(tmp_path / "w"), "PATH": "/usr/bin:/bin"})

    r = pickfs("run")
    assert r.returncode == 2 and "read by pickfs crashtest" in r.stderr, r.stderr
    r = pickfs("crashtest", fault="write:everything")
    assert r.returncode == 2 and "no fault pickfs injects" in r.stderr, r.stderr


def test_the_fault_client_puts_back_what_a_write_back_changed_for_a_while(tmp_path):
    """After each acknowledged commit the write-back is ticked (InnoDB's page flush returns to its old limit),
    as the crash test's client does; a tick that fails is logged as a failed write-back, not as a failed commit."""
    import argparse

    from pickfs.faults.client import Session

    class Tx:
        conn = "the connection"

        def q(self, *a):
            return []

        def commit(self):
            pass

        def rollback(self):
            pass

    class Back:
        ticks: list[str] = []

        def tick(self, conn):
            self.ticks.append(conn)
            if len(self.ticks) == 2:
                raise RuntimeError("gone")

    fd = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT)
    session = Session(argparse.Namespace(backend="mariadb"), fd)
    session.tx, session.back = Tx(), Back()  # type: ignore[assignment]
    session.commit(1, 5, 1)
    session.commit(2, 5, 1)
    os.close(fd)
    assert Back.ticks == ["the connection", "the connection"]
    lines = (tmp_path / "log").read_text().splitlines()
    assert [x.split()[:2] for x in lines] == [["1", "A"], ["2", "A"], ["-", "k"]]
def test_the_fault_table_cuts_no_word_at_80_columns():
    """At 80 columns the ten-column table was cut to 'conf…', 'data…', 'ackn…' in every header and cell; a narrow
    terminal gets each cell as a block of its own instead, every figure whole."""
    import io

    from rich.console import Console

    from pickfs.cli.faults import table

    cells = [cell(settings="fsync=on, synchronous_commit=on, data_sync_retry=off"), cell(config="ext4-nobarrier",
             behaviour=Behaviour("kept running", "said nothing (the kernel logged the block I/O error)"))]
    for width in (80, 160, 250):
        console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
        console.print(table(cells))
        text = console.export_text()
        assert "…" not in text and all(len(line) <= width for line in text.splitlines())
        assert "ext4-nobarrier" in text and "acknowledged" in text and "synchronous_commit=on" in text
        assert "false failures" in text.replace("\n", " ") or "false" in text


def test_a_fault_run_nothing_of_which_can_run_is_refused_as_the_power_cut_test_refuses_it(tmp_path):
    """`--fs tmpfs --fault flush` printed 'not run' for every cell and exited 0, where the power-cut test of the
    same cells refuses with exit 3 before anything is made."""
    r = subprocess.run([sys.executable, "-m", "pickfs", "crashtest", "--fs", "tmpfs", "--fault", "flush"],
                       capture_output=True, text=True, env={"PICKFS_WORKDIR": str(tmp_path / "w"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
    assert "nothing in this plan can run" in r.stderr and "a fault needs a filesystem on a block device" in r.stderr
    assert not (tmp_path / "w").exists()


def test_json_to_stdout_is_the_json_alone(tmp_path, monkeypatch):
    """`crashtest --fault flush --json -` printed the table, the verdicts, the notes and the model on standard output
    before the JSON: a script could not parse it. The cell here is a finished one handed to the CLI as the matrix
    hands it (the matrix itself runs in the integration tests)."""
    from click.testing import CliRunner

    import pickfs.cli.faults as cli_faults
    from pickfs.cli.main import cli

    def matrix(cells, faults, workdir, ledger, size, duration, limit, progress, done):
        done(0, 0, cell(config="ext4", notes=("a note",)))
        return []

    monkeypatch.setattr(cli_faults, "run_matrix", matrix)
    monkeypatch.delenv("PICKFS_RESULTS", raising=False)
    r = CliRunner().invoke(cli, ["crashtest", "--fs", "ext4", "--workload", "pgbench", "--fault", "flush",
                                  "--json", "-", "--workdir", str(tmp_path / "w")])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["faults"]["cells"][0]["config"] == "ext4" and "model" in doc["faults"]
    assert "model: " in r.stderr and "note: a note" in r.stderr


def test_the_commits_tables_file_is_the_one_the_database_names(tmp_path):
    """write:table is aimed at one relation's file, which PostgreSQL names once its tables exist
    (pg_relation_filepath); a pattern whose name is not yet known matches nothing; SQLite keeps no such file."""
    from pickfs.faults.plan import LAYOUTS
    from pickfs.faults.runner import fault_unavailable
    from pickfs.model import FsConfig, WorkloadSpec

    (tmp_path / "pgdata" / "base" / "5").mkdir(parents=True)
    for name in ("16384", "16390", "16390_fsm"):
        (tmp_path / "pgdata" / "base" / "5" / name).write_bytes(b"x")
    table = KINDS["write:table"]
    pg = LAYOUTS["postgresql"]
    assert table.files(tmp_path, pg, {"commits_table": "base/5/16390"}) == [tmp_path / "pgdata/base/5/16390"]
    assert table.files(tmp_path, pg) == []
    assert "commits_table" in pg.queries and len(KINDS["write:data"].files(tmp_path, pg)) == 3
    said = fault_unavailable(FsConfig("ext4", "ext4"), WorkloadSpec("sqlite-tpcb", "sqlite-tpcb"),
                             parse_faults("write:table")[0])
    assert said is not None and "sqlite keeps no table files" in said


def test_a_write_back_that_succeeds_after_one_that_failed_is_noted():
    log = parse_client_log("1 A 100\n- k 200 ERROR: checkpoint request failed\n2 A 300\n- K 400 a checkpoint\n")
    assert log.write_back_errors and log.write_back_ok_after_error
    assert not parse_client_log("- K 100 a checkpoint\n- k 200 ERROR: failed\n").write_back_ok_after_error
    said = verdict(cell(write_back_errors=("ERROR: checkpoint request failed",), write_back_ok_after_error=True))
    assert "a write-back it asked for failed (ERROR: checkpoint request failed), and a later one succeeded" in said


def test_the_journal_is_found_where_the_filesystems_own_tools_say():
    from pickfs.faults.journal import parse_ext_blocks, parse_ext_header, parse_xfs_log
    from pickfs.faults.runner import fault_unavailable
    from pickfs.model import FsConfig, WorkloadSpec

    assert parse_ext_header("Block size:               4096\nJournal inode:            8\n") == (4096, 8)
    with pytest.raises(ValueError):
        parse_ext_header("Block size:               4096\nJournal device:	0x0801\n")
    assert parse_ext_blocks("1026 1027 1028 2000\n", 4096) == [(1026 * 4096, 1029 * 4096), (2000 * 4096, 2001 * 4096)]
    said = "logstart = 65542\nlogblocks = 3859\nblocksize = 4096\nagblocks = 32768\nagblklog = 15\n"
    start = (2 * 32768 + 6) * 4096  # block 6 of allocation group 2
    assert parse_xfs_log(said) == [(start, start + 3859 * 4096)]
    with pytest.raises(ValueError):
        parse_xfs_log(said.replace("logstart = 65542", "logstart = 0"))
    journal = parse_faults("write:journal")[0]
    sqlite = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb")
    spared = parse_faults("write:outside-journal")[0]
    assert fault_unavailable(FsConfig("btrfs", "btrfs"), sqlite, spared).startswith("btrfs keeps no journal")
    assert fault_unavailable(FsConfig("btrfs", "btrfs"), sqlite, journal).startswith("btrfs keeps no journal")
    assert fault_unavailable(FsConfig("ext2", "ext2"), sqlite, journal).startswith("ext2 keeps no journal")


def test_a_command_cell_its_fault_cannot_reach_is_not_run_and_nothing_is_made(tmp_path):
    """Your own command under write:journal on btrfs (no journal to aim at): the cell is 'not run', said why, as
    a database's cell is; before, it went on to make its disk and failed an assertion (a traceback)."""
    from pickfs.faults.program import program_cell
    from pickfs.model import FsConfig, WorkloadSpec
    from pickfs.stack.ledger import Ledger
    from pickfs.workloads.command import Command

    spec = WorkloadSpec("command", "command", tuple(sorted(Command.normalize({"command": "true"}).items())))
    cell = program_cell(FsConfig("btrfs", "btrfs"), spec, parse_faults("write:journal")[0], tmp_path,
                        Ledger(tmp_path / "ledger"))
    assert cell.outcome is Ended.NOT_RUN and cell.notes[0].startswith("btrfs keeps no journal"), cell
    assert not (tmp_path / "faults").exists()


def test_a_cell_states_the_settings_its_outcome_depends_on_your_commands_its_server():
    from pickfs.faults.runner import settings_text
    from pickfs.model import WorkloadSpec

    pg = WorkloadSpec("pgbench", "pgbench", (("data_sync_retry", "on"), ("fsync", ""), ("scale", "5")))
    assert settings_text(pg) == "data_sync_retry=on"
    own = WorkloadSpec("command", "command", (("command", "./writer"), ("check", "./check")))
    assert settings_text(own) == ""
    assert settings_text(WorkloadSpec("command", "command", (*own.settings, ("server", "postgresql")))) == \
        "server=postgresql"


def test_a_fault_outside_the_journal_is_aimed_at_every_byte_but_the_journals():
    from pickfs.faults.plan import END, outside

    assert outside([(100, 200)]) == [(0, 100), (200, END)]
    assert outside([(0, 50), (40, 60), (90, 100)], 100) == [(60, 90)]
    assert outside([]) == [(0, END)]
    kinds = {k: parse_faults(k)[0].kind for k in ("write:journal", "write:outside-journal")}
    assert kinds["write:journal"].journal_ranges([(8, 16)]) == [(8, 16)]
    assert kinds["write:outside-journal"].journal_ranges([(8, 16)]) == [(0, 8), (16, END)]
