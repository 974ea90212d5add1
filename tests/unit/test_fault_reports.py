"""A fault run kept in the results database cell by cell, listed by `pickfs results` and drawn again by `pickfs
report` in every format; the document read back whole; the table's words. The cells are finished ones handed to
the CLI as the matrix hands them (the matrix itself runs in the integration tests)."""

import csv
import io
import json
import sqlite3

import pytest
from click.testing import CliRunner

import pickfs.cli.faults as cli_faults
from pickfs.cli.main import cli
from pickfs.faults.document import SCHEMA, Damaged, cell_doc, cell_from_doc, from_ranges, ranges
from pickfs.faults.outcome import Behaviour, Ended, FaultCell, Truth, classify, parse_client_log, verdict
from pickfs.faults.render import matrices, quiet_lines, render_html, row, sentences, summary
from tests.conftest import needs_root

LOG = "1 A 100\n2 A 200\n3 E 300 OperationalError: disk I/O error\n4 A 400\n5 A 500\n"


def cell(**kw):
    log = parse_client_log(LOG)
    truth = Truth(True, frozenset({1, 2, 3, 4}), newest=4, own_check="ok", invariant="ok", fsck_ok=True)
    base = dict(config="ext4", database="postgresql", settings="data_sync_retry=on", fault="write:data",
                plan="a write to the data files' blocks fails: the first such request after 1.20 s of commits, "
                     "then once (seed 1)",
                outcome=Ended.MEASURED, injected=1, counts=classify(log, truth),
                behaviour=Behaviour("stopped (PANIC), then restarted",
                                    "said nothing (the kernel logged the block I/O error)",
                                    ("I/O error, dev loop7, sector 2048 op 0x1:(WRITE)",),
                                    ("PANIC:  could not fsync file \"base/5/16384\": Input/output error",)),
                truth=truth, first_error=log.first_error, told_after_s=0.004, notes=("a note",), seconds=12.5)
    return FaultCell(**{**base, **kw})


def test_a_cells_document_reads_back_whole_and_a_damaged_one_is_refused():
    c = cell(truth=Truth(True, frozenset({1, 2, 3, 4, 9, 10}), newest=10, own_check="ok", invariant="ok"))
    doc = json.loads(json.dumps(cell_doc(c)))
    assert doc["truth"]["present"] == 6 and doc["truth"]["present_ranges"] == [[1, 4], [9, 10]]
    assert cell_from_doc(doc) == c
    assert cell_from_doc(json.loads(json.dumps(cell_doc(cell(outcome=Ended.NOT_RUN, counts=None, behaviour=None,
                                                                  truth=None))))).outcome is Ended.NOT_RUN
    assert ranges([5, 1, 2, 3, 7]) == [[1, 3], [5, 5], [7, 7]] and from_ranges([[1, 3]]) == frozenset({1, 2, 3})
    for damage in ({"outcome": "exploded"}, {"injected": -1}, {"notes": "x"}, {"told_after_s": "soon"},
                   {"counts": {**doc["counts"], "acked_lost": 1.5}},
                   {"truth": {**doc["truth"], "present_ranges": [[4, 1]]}},
                   {"truth": {**doc["truth"], "present_ranges": [[0, 10**12]]}},
                   {"truth": {**doc["truth"], "present": 99}}):
        with pytest.raises(Damaged):
            cell_from_doc({**doc, **damage})


def test_the_server_column_keeps_the_panic_and_the_restart():
    """The server column cut everything from the first ' (' on: 'stopped (PANIC), then restarted' read 'stopped',
    the same as a server that ended quietly."""
    assert row(cell())[7] == "PANIC, then restarted"
    assert row(cell(behaviour=Behaviour("stopped (a server process crashed; its log was not written), then restarted "
                                        "but did not come back up", "said nothing")))[7] == \
        "crashed, then restarted but did not come back up"
    assert row(cell(behaviour=Behaviour("aborted, and stayed down", "shut down (xfs)")))[7:9] == \
        ("aborted, and stayed down", "shut down (xfs)")
    assert row(cell(behaviour=Behaviour("embedded in the client: the library's answers are the client's",
                                        "said nothing")))[7] == "none (embedded)"


def test_configurations_that_did_alike_share_a_sentence_and_nothing_is_called_safe():
    cells = [cell(), cell(config="xfs"), cell(config="btrfs", truth=Truth(False, problem="would not start"),
                                              counts=classify(parse_client_log(LOG), Truth(False)))]
    (m,) = matrices(cells)
    assert m.configs == ("ext4", "xfs", "btrfs") and [db for db, _ in m.rows] == ["postgresql (data_sync_retry=on)"]
    (said,) = sentences(cells)
    assert said.startswith("When a write to the data files' blocks fails, postgresql (data_sync_retry=on): on ext4 "
                           "and xfs, the server stopped (PANIC), then restarted")
    assert "on btrfs, the server stopped (PANIC), then restarted, the client was given an error, after restart the " \
           "database did not come up" in said
    assert "safe" not in said.lower()
    assert summary(cells) == "fault test: 3 cells; acknowledged commits lost in 3 cells; 1 database did not come up"


def test_the_html_page_states_the_plan_the_matrix_and_the_verdicts_escaped():
    page = render_html([cell(), cell(config="x<fs>", counts=classify(parse_client_log(LOG),
                                                                      Truth(True, frozenset({1}))))],
                       [cell().plan], {"id": "20261127-1", "status": "complete", "started": "2026-11-27T21:00:00Z",
                                       "host": {"kernel": "6.18"}})
    assert "x&lt;fs&gt;" in page and "<fs>" not in page
    assert cell().plan.replace("'", "&#x27;") in page  # the fault plan stated
    assert '<td class="lost"' in page and "3 of 4 acknowledged lost" in page  # the cell that lost commits
    assert "1 of 4 acknowledged lost" in page and "What the literature says" in page and "data_sync_retry" in page
    assert "safe" not in page.lower() and "run 20261127-1 (complete)" in page


@pytest.fixture
def fault_cli(tmp_path, monkeypatch):
    """`pickfs` in-process with a fault matrix that ends two cells (or is interrupted after the first)."""
    monkeypatch.delenv("PICKFS_RESULTS", raising=False)
    state = {"interrupt": False}

    def matrix(cells, faults, workdir, ledger, size, duration, limit, progress, done):
        done(0, 0, cell())
        if state["interrupt"]:
            raise KeyboardInterrupt
        done(1, 0, cell(config="xfs", behaviour=Behaviour("kept running", "shut down (xfs)")))
        return []

    monkeypatch.setattr(cli_faults, "run_matrix", matrix)

    def run(*args):
        return CliRunner().invoke(cli, [*args, "--workdir", str(tmp_path / "w")])

    return run, state, tmp_path


@needs_root
def test_a_fault_run_is_kept_listed_and_drawn_again_in_every_format(fault_cli):
    run, _, tmp = fault_cli
    r = run("crashtest", "--fs", "ext4,xfs", "--workload", "pgbench", "--set", "data_sync_retry=on",
            "--fault", "write:data", "--markdown", str(tmp / "f.md"))
    assert r.exit_code == 0, r.output
    assert (tmp / "f.md").read_text().startswith("# what the database kept when the disk failed")
    rows = sqlite3.connect(tmp / "w" / "results.db").execute(
        "SELECT r.status, t.phase, t.ok, t.raw_output, r.plan_json FROM trials t JOIN runs r ON r.id = t.run_id").fetchall()
    assert [(s, p, ok) for s, p, ok, _, _ in rows] == [("complete", "fault", 1)] * 2
    assert json.loads(rows[0][4])["method"]["faults"]["kinds"] == "write:data"  # stored nested, by its part

    listed = run("results", "--json", "-")
    assert listed.exit_code == 0, listed.output
    assert (json.loads(listed.stdout)[0]["measured"], json.loads(listed.stdout)[0]["answer"]) == (2, None)
    assert "fault test: 2 cells" in " ".join(run("results").stdout.split())

    shown = run("report", "latest", "--explain")
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.count("with ext4 and postgresql") == 1 and "PANIC, then restarted" in shown.stdout
    assert "kernel: I/O error, dev loop7" in shown.stdout and "model:" in shown.stdout

    doc = json.loads(run("report", "latest", "--json", "-").stdout)
    assert doc["schema"] == SCHEMA and [c["config"] for c in doc["faults"]["cells"]] == ["ext4", "xfs"]
    assert doc["faults"]["plans"] == [cell().plan] and doc["faults"]["run"]["status"] == "complete"
    assert cell_from_doc(doc["faults"]["cells"][0]) == cell()

    r = run("report", "latest", "--html", str(tmp / "f.html"), "--csv", str(tmp / "f.csv"), "--table-csv",
            str(tmp / "t.csv"), "--markdown", "-")
    assert r.exit_code == 0, r.output
    assert "| postgresql (data\\_sync\\_retry=on) |" in r.stdout
    assert "<h3>a write to the data files&#x27; blocks fails" in (tmp / "f.html").read_text()
    (first, second) = list(csv.DictReader(io.StringIO((tmp / "f.csv").read_text())))
    assert (first["configuration"], first["acknowledged_lost"], second["filesystem"]) == ("ext4", "1", "shut down (xfs)")
    assert (tmp / "t.csv").read_text().splitlines()[0].startswith("configuration,database,fault,acknowledged")
    assert run("report", "latest", "--quiet").stdout.splitlines() == [
        "ext4 postgresql write:data: measured, 1 of 4 lost", "xfs postgresql write:data: measured, 1 of 4 lost"]


@needs_root
def test_each_verdict_is_said_once(fault_cli):
    """Each cell's verdict was said as it ended (standard error) and again under the table (standard output)."""
    run, _, _ = fault_cli
    r = run("crashtest", "--fs", "ext4,xfs", "--workload", "pgbench", "--fault", "write:data")
    assert r.exit_code == 0, r.output
    said = r.stdout + r.stderr
    assert said.count(verdict(cell())) == 1 and "cell 1 of 2 ended" in r.stderr


@needs_root
def test_an_interrupted_fault_run_keeps_the_cells_that_ended(fault_cli):
    run, state, tmp = fault_cli
    state["interrupt"] = True
    r = run("crashtest", "--fs", "ext4,xfs", "--workload", "pgbench", "--fault", "write:data")
    assert r.exit_code == 130, r.output
    assert "what ended of it (1 cell) is kept" in r.stderr
    shown = run("report", "latest")
    assert shown.exit_code == 0 and "with ext4 and postgresql" in shown.stdout and "run " in shown.stdout
    assert "(interrupted)" in shown.stdout
    resumed = run("run", "--resume", "latest")  # in-process: the error pickfs's main would say, exit 2
    assert getattr(resumed.exception, "exit_code", None) == 2, resumed.output
    assert "is a fault test" in resumed.exception.message and "crashtest --fault write:data" in resumed.exception.hint


def test_your_own_command_is_judged_by_your_check_and_said_so():
    """pickfs cannot tell which of your command's acknowledged lines were lost: the table shows '?', the verdict
    says what your check said, and a failed check counts as a loss."""
    from pickfs.faults.outcome import NO_SERVER, Counts

    passed = cell(database="command", settings="", fault="flush", judged=True, first_error="fsync failed",
                  counts=Counts(120, 0, 0, 1, 0, "", ""), behaviour=Behaviour(NO_SERVER, "said nothing"),
                  truth=Truth(True, own_check="ok", fsck_ok=True))
    failed = cell(database="command", settings="", fault="flush", judged=True,
                  counts=Counts(120, 0, 0, 0, 0, "", "3 acknowledged lines missing"),
                  behaviour=Behaviour(NO_SERVER, "said nothing"), truth=Truth(True, own_check="3 missing"))
    said = verdict(passed)
    assert "your command failed, 4 ms after the first injected one (fsync failed) after 120 acknowledgements" in said
    assert "after restart your check, given the acknowledged lines, passed" in said and "lost" not in said
    assert "failed: 3 acknowledged lines missing" in verdict(failed)
    assert row(passed)[3:7] == ("120", "?", "1", "?") and row(passed)[7] == "none (your command)"
    assert row(failed)[9] == "your check failed"
    assert summary([passed, failed]) == "fault test: 2 cells; acknowledged commits lost (or your check failed) in 1 cell"
    assert cell_from_doc(json.loads(json.dumps(cell_doc(failed)))) == failed
    assert "the server" not in " ".join(sentences([passed]))  # no server to speak of
    assert "after restart your check passed" in sentences([passed])[0]
    # which acknowledged lines were lost cannot be told: the check's answer is what is said, as it ends too
    assert cli_faults.progress_line(passed, 1, 2).endswith("ext4, command, flush: measured: check passed, 1 errors "
                                                           "to the client")
    assert quiet_lines([passed, failed]) == ["ext4 command flush: measured, check passed",
                                             "ext4 command flush: measured, check failed"]


def test_a_fault_run_without_a_cell_yet_is_known_by_its_stored_plan():
    """A fault run stopped before its first cell ended is still a fault run: its plan names the faults, nested in
    the method's part (flat in runs stored before the method was split)."""
    from dataclasses import replace

    from pickfs.faults.document import is_fault_run
    from pickfs.model import RunRecord, method_of, plan_to_dict
    from tests.records import make_plan

    plan = make_plan()
    nested = plan_to_dict(replace(plan, method=method_of(fault="flush")))
    assert nested["method"]["faults"]["kinds"] == "flush"
    record = RunRecord(id="r", created=0.0, updated=0.0, status="interrupted", pickfs_version="0", plan=nested,
                       host={}, notes=(), trials=())
    assert is_fault_run(record)
    flat = {**nested, "method": {"fault": "flush"}}
    assert is_fault_run(replace(record, plan=flat))
    assert not is_fault_run(replace(record, plan=plan_to_dict(plan)))
