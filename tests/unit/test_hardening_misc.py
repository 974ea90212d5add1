"""Hardening: the command's leftovers and user, the results file's checks, Markdown escaping, lazy startup."""

import hashlib
import importlib
import json
import os
import sqlite3
import stat
import subprocess
import sys

import click
import pytest

from pickfs.errors import EXIT_USAGE, PlanError, ResultsUnusable
from pickfs.model import Method, Plan, Target, Trial, WorkloadSpec
from pickfs.report.markdown import md_code, md_text, render_markdown
from pickfs.stack.presets import PRESETS
from pickfs.store import ResultStore
from pickfs.store.results import SCHEMA_VERSION
from pickfs.store.sqlitefile import header_problem, schema_problem, write_failure
from pickfs.workloads.command import ROOT_NOTE, Command, ended_note, session_members
from pickfs.workloads.sqlite_tpcb import SqliteTpcb
from tests.records import fill, make_plan, record_dict


def stat_line(pid: int, state: str, ppid: int, pgrp: int, session: int, comm: str = "sleep") -> str:
    return f"{pid} ({comm}) {state} {ppid} {pgrp} {session} 0 -1 4194560 0 0"


# -- 1 and 6: the command workload ------------------------------------------------------------

def test_session_members_are_the_live_processes_of_the_session_or_group():
    stats = {
        10: stat_line(10, "Z", 1, 10, 10),  # the command's shell, exited: a zombie
        11: stat_line(11, "S", 1, 10, 10),  # its background sleep
        12: stat_line(12, "S", 11, 12, 10),  # a job-controlled child: another group, same session
        13: stat_line(13, "S", 1, 13, 10, comm="odd) name"),
        20: stat_line(20, "S", 1, 20, 20),  # unrelated
        21: "garbage",
    }
    assert session_members(stats, 10) == [11, 12, 13]


def test_notes_say_root_and_what_was_ended():
    raw = json.dumps({"client": "pickfs-command", "step": "command", "exit": 0, "elapsed_s": 1.0, "cpu_s": 0.1,
                      "user": "root", "ended": ["sleep 300"]})
    assert Command.notes_from(raw) == [ROOT_NOTE, "ended 1 process the command left running: sleep 300"]
    quiet = json.dumps({"client": "pickfs-command", "user": "nobody", "ended": []})
    assert Command.notes_from(quiet) == []
    assert ended_note(["a", "b"]).startswith("ended 2 processes")


def test_run_as_an_unknown_user_is_refused_with_the_fix():
    with pytest.raises(PlanError) as exc:
        Command.normalize({"command": "true", "run_as": "no-such-user-pickfs"})
    assert exc.value.exit_code == EXIT_USAGE
    assert "no-such-user-pickfs" in exc.value.message and "useradd" in exc.value.hint


def test_run_as_is_kept_and_root_is_warned_about():
    settings = Command.normalize({"command": "true", "run_as": "nobody"})
    assert settings["run_as"] == "nobody"
    as_nobody = WorkloadSpec("command", "command", tuple(sorted(settings.items())))
    as_root = WorkloadSpec("command", "command", tuple(sorted(Command.normalize({"command": "true"}).items())))
    assert Command.root_warning(as_nobody) is None
    assert ROOT_NOTE in Command.root_warning(as_root)


# -- 3: the results database ----------------------------------------------------------------

def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_results_file_is_created_private(tmp_path):
    path = tmp_path / "results.db"
    old = os.umask(0)
    try:
        ResultStore(path).close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_garbage_file_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "results.db"
    path.write_bytes(b"this is not a database\n" * 100)
    before = digest(path)
    with pytest.raises(ResultsUnusable) as exc:
        ResultStore(path)
    assert exc.value.exit_code == EXIT_USAGE
    assert str(path) in exc.value.message and "not an SQLite database" in exc.value.message
    assert "--results" in exc.value.hint
    assert digest(path) == before and not (tmp_path / "results.db-wal").exists()


def test_truncated_file_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "results.db"
    store = ResultStore(path)
    fill(store, make_plan())
    store.close()
    data = path.read_bytes()
    assert len(data) > 8192
    path.write_bytes(data[: len(data) // 2 + 100])
    before = digest(path)
    with pytest.raises(ResultsUnusable, match="truncated") as exc:
        ResultStore(path)
    assert str(path) in exc.value.message
    assert digest(path) == before


def test_newer_schema_is_refused_without_a_byte_changed(tmp_path):
    path = tmp_path / "results.db"
    conn = sqlite3.connect(path)  # as a newer pickfs might leave it: rollback journal, a later schema
    conn.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                       "CREATE TABLE runs (id TEXT PRIMARY KEY); CREATE TABLE trials (id INTEGER PRIMARY KEY);"
                       f"INSERT INTO meta VALUES ('schema_version', '{SCHEMA_VERSION + 1}');")
    conn.close()
    before = digest(path)
    with pytest.raises(ResultsUnusable, match="newer pickfs") as exc:
        ResultStore(path)
    assert exc.value.exit_code == EXIT_USAGE and "upgrade pickfs" in exc.value.hint
    assert digest(path) == before
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # never switched to WAL


def test_another_programs_database_is_refused(tmp_path):
    path = tmp_path / "results.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE photos (id INTEGER)")
    conn.commit()
    conn.close()
    before = digest(path)
    with pytest.raises(ResultsUnusable, match="not a pickfs results database"):
        ResultStore(path)
    assert digest(path) == before


def test_cli_names_the_file_in_one_line_with_exit_2(tmp_path, capsys):
    from pickfs.cli.main import main

    path = tmp_path / "results.db"
    path.write_bytes(b"\x00garbage" * 64)
    with pytest.raises(SystemExit) as exc:
        main(["results", "--results", str(path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and str(path) in err and "internal error" not in err
    assert len(err.splitlines()) == 1


def test_header_problem_and_schema_problem_are_pure():
    good = b"SQLite format 3\x00" + (4096).to_bytes(2, "big") + bytes(6) + (1).to_bytes(4, "big") + \
        (3).to_bytes(4, "big") + bytes(60) + (1).to_bytes(4, "big") + bytes(4)
    assert header_problem(good, 3 * 4096) is None
    assert "truncated" in header_problem(good, 2 * 4096)
    assert "truncated" in header_problem(good, 3 * 4096 - 10)
    assert header_problem(good, 4096, wal_size=8192) is None  # the log holds the pages a checkpoint had not copied
    assert "truncated" in header_problem(b"SQLite f", 8)
    assert "not an SQLite" in header_problem(b"hello", 5)
    assert header_problem(b"", 0) is None
    assert schema_problem(set(), None, 3) is None
    assert schema_problem({"meta", "runs", "trials"}, "3", 3) is None
    assert "newer" in schema_problem({"meta", "runs", "trials"}, "4", 3)
    assert "not a pickfs" in schema_problem({"photos"}, None, 3)


def test_write_failure_names_disk_full_and_resume():
    exc = sqlite3.OperationalError("database or disk is full")
    exc.sqlite_errorname = "SQLITE_FULL"
    err = write_failure("/x/results.db", exc, "RUN1")
    assert "/x/results.db" in err.message and "no space left on the device holding" in err.message
    assert "--results" in err.hint and "--resume RUN1" in err.hint


# -- 4: Markdown ----------------------------------------------------------------------------

def test_markdown_escapes_labels_and_notes(tmp_path):
    wl = WorkloadSpec("sqlite-tpcb", "# x <script>alert(1)</script>",
                      tuple(sorted(SqliteTpcb.normalize({}).items())))
    plan = Plan(Target(), (PRESETS["ext4"], PRESETS["xfs"]), (wl,), Method(runs=2))
    store = ResultStore(tmp_path / "r.db")
    store.create_run("run-1", "0.1.0", record_dict(plan), {"hostname": "<b>box</b>"})
    for rep in range(2):
        for cell in (0, 1):
            store.save_trial(Trial(run_id="run-1", cell_index=cell, repetition=rep, phase="measured",
                                   started=1.0 + rep, elapsed_s=1.0, ok=True, metrics={"tps": 100.0 + cell},
                                   raw_output="raw", mount={}, notes=("a | b ## c [l](http://x) `t`",)))
    store.set_status("run-1", "complete")
    text = render_markdown(store.load("run-1"))
    store.close()
    assert "<script>" not in text and "<b>" not in text and "&lt;script&gt;" in text
    assert not any(line.startswith("# x") for line in text.splitlines())
    assert "## \\# x &lt;script&gt;" in text
    row = next(line for line in text.splitlines() if line.startswith("| ext4 |"))  # the results table's row
    assert row.replace("\\|", "").count("|") == 9  # 8 columns: the notes are under the table
    [note] = [line for line in text.splitlines() if line.startswith("1. ")]
    assert note == "1. a \\| b \\#\\# c \\[l\\](http://x) \\`t\\`"  # escaped: no link, no code


def test_md_helpers():
    assert md_text("a\nb") == "a b"
    assert md_text("x_y*z") == "x\\_y\\*z"
    assert md_code("a`b") == "``a`b``"
    assert md_code("plain") == "`plain`"


# -- 5: startup -----------------------------------------------------------------------------

def test_startup_imports_nothing_heavy():
    code = ("import sys; import pickfs.cli.main; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'rich', 'plotly', 'numpy') "
            "or m.startswith(('pickfs.workloads', 'pickfs.engine', 'pickfs.stats'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_lazy_commands_match_their_modules():
    from pickfs.cli.main import COMMANDS

    for name, (module, summary) in COMMANDS.items():
        command = importlib.import_module(module).command
        assert isinstance(command, click.Command) and command.name == name
        first = command.help.strip().split("\n\n")[0].replace("\n", " ")
        assert " ".join(first.split()).startswith(summary.rstrip(".")), name


def test_only_the_pickfs_command_installs_the_quiet_ctrl_c():
    from pickfs.cli.main import _started_as_pickfs

    assert _started_as_pickfs("/usr/local/bin/pickfs")
    assert _started_as_pickfs("/work/src/pickfs/__main__.py")
    assert not _started_as_pickfs("/venv/bin/pytest") and not _started_as_pickfs("")
