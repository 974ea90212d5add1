"""Results files: a command that only reads creates and changes no file; a damaged file is refused on open."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest

from pickfs.errors import ResultsUnusable
from pickfs.store import ResultStore
from tests.records import fill, make_plan, record_dict
from tests.unit.test_plan_validation import pickfs

RUN = "20260101-000000-abcd"


def state(d: Path) -> dict[str, str]:
    """Every file in `d` with the sha256 of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir()) if p.is_file()}


def results_file(d: Path, name: str = "r.db") -> Path:
    d.mkdir(exist_ok=True)
    store = ResultStore(d / name)
    fill(store, make_plan(), RUN)
    store.close()
    assert sorted(os.listdir(d)) == [name]  # WAL mode, closed: no side file
    return d / name


READS = [["results"], ["report", RUN], ["report", RUN, "--explain"], ["env", "diff", RUN, RUN],
         ["compare", RUN, RUN], ["fleet", "list"]]


@pytest.mark.parametrize("args", READS, ids=lambda a: " ".join(a[:2]))
def test_a_read_creates_no_file_beside_a_wal_results_file(tmp_path, capsys, args):
    f = results_file(tmp_path / "d")
    before = state(f.parent)
    pickfs([*args, "--results", str(f), "--workdir", str(tmp_path / "wd")], capsys)
    assert state(f.parent) == before
    assert not (tmp_path / "wd").exists()


def test_compare_and_merge_never_write_into_the_other_file(tmp_path, capsys):
    f = results_file(tmp_path / "d")
    other = results_file(tmp_path / "o")
    before = state(other.parent)
    code, _, err = pickfs(["compare", RUN, RUN, "--results", str(f), "--results-b", str(other)], capsys)
    assert code == 0, err
    empty = tmp_path / "o" / "empty.db"
    empty.write_bytes(b"")
    code, _, err = pickfs(["compare", RUN, RUN, "--results", str(f), "--results-b", str(empty)], capsys)
    assert code == 2 and "empty" in err
    assert empty.read_bytes() == b""
    pickfs(["merge", str(other), "--results", str(tmp_path / "m" / "m.db")], capsys)
    assert state(other.parent) == {**before, "empty.db": hashlib.sha256(b"").hexdigest()}


def test_a_read_beside_a_live_writer_uses_its_log_and_adds_nothing(tmp_path, capsys):
    f = results_file(tmp_path / "d")
    writer = ResultStore(f)  # another pickfs writing right now: its -wal and -shm are there
    try:
        names = sorted(os.listdir(f.parent))
        code, out, err = pickfs(["results", "--results", str(f)], capsys)
        assert code == 0 and RUN in out, err
        assert sorted(os.listdir(f.parent)) == names
    finally:
        writer.close()


def test_report_on_a_file_in_a_missing_directory_creates_nothing(tmp_path, capsys):
    code, _, err = pickfs(["report", "--results", str(tmp_path / "new" / "x.db")], capsys)
    assert code != 0 and "no results database" in err
    assert not (tmp_path / "new").exists()


def test_a_refused_file_gets_no_side_files(tmp_path, capsys):
    f = results_file(tmp_path / "d")
    live = sqlite3.connect(f)  # a newer pickfs's last writes, still in its log: a -wal without its -shm
    live.execute("PRAGMA wal_autocheckpoint=0")
    live.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    live.commit()
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("r.db", "r.db-wal"):
        (copy / name).write_bytes((f.parent / name).read_bytes())
    live.close()
    f = copy / "r.db"
    before = state(copy)
    for args in (["results"], ["report"], ["merge", str(f)]):
        code, _, err = pickfs([*args, "--results", str(f)], capsys)
        assert "newer pickfs" in err, (args, err)
    with pytest.raises(ResultsUnusable, match="newer pickfs"):
        ResultStore(f)
    assert state(copy) == before


def test_a_results_file_with_damaged_pages_is_refused_before_any_write(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    store = ResultStore(d / "r.db")
    fill(store, make_plan(), RUN)
    for i in range(60):  # many pages of trials after the schema's
        fill(store, make_plan(), f"20260101-000000-{i:04x}")
    store.close()
    f = d / "r.db"
    data = bytearray(f.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for at in range(len(data) // 2 // page * page, len(data), page):  # the second half's pages: b-tree headers
        data[at:at + 12] = b"\xde\xad\xbe\xef" * 3
    f.write_bytes(bytes(data))
    before = state(f.parent)
    with pytest.raises(ResultsUnusable, match="damaged"):
        ResultStore(f)
    with pytest.raises(ResultsUnusable, match="damaged"):
        ResultStore.read_only(f)
    assert state(f.parent) == before


@pytest.mark.parametrize("plan_json", ["null", "not json", "[]", '{"configs": 5}', '{"configs": [1], "workloads": 2}',
                                       '"x"', "1e999", json.dumps({"configs": [{"name": None}], "workloads": [{}]})])
def test_a_stored_plan_that_is_damaged_is_one_line_not_an_internal_error(tmp_path, capsys, plan_json):
    f = results_file(tmp_path / "d")
    conn = sqlite3.connect(f)
    conn.execute("UPDATE runs SET plan_json=?", (plan_json,))
    conn.commit()
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    for args in (["results"], ["report", RUN], ["report", RUN, "--json", "-"], ["merge", str(f)],
                 ["compare", RUN, RUN]):
        target = ["--results", str(tmp_path / "m.db")] if args[0] == "merge" else ["--results", str(f)]
        code, _, err = pickfs([*args, *target], capsys)
        assert "internal error" not in err and "Traceback" not in err, (args, err)
        assert code in (0, 2), (args, err)


@pytest.mark.parametrize("host", ['{"fingerprint": [1, 2]}', '{"fingerprint": {"a": {"b": 1}}}', '{"tools": 5}',
                                  "[]", "null"])
def test_a_stored_host_record_that_is_damaged_is_one_line(tmp_path, capsys, host):
    f = results_file(tmp_path / "d")
    conn = sqlite3.connect(f)
    conn.execute("UPDATE runs SET host_json=?", (host,))
    conn.commit()
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    for args in (["report", RUN], ["report", RUN, "--html", str(tmp_path / "r.html")], ["compare", RUN, RUN]):
        code, _, err = pickfs([*args, "--results", str(f)], capsys)
        assert code == 2 and "damaged run" in err and "internal error" not in err, (args, err)


def test_stored_names_notes_and_errors_are_shown_as_text_never_as_markup(tmp_path, capsys):
    f = results_file(tmp_path / "d")
    conn = sqlite3.connect(f)
    plan = json.loads(conn.execute("SELECT plan_json FROM runs").fetchone()[0])
    plan["configs"][0]["name"] = "[/bold]ext4"
    plan["workloads"][0]["label"] = "[red]w[/x]"
    plan["warnings"] = ["[/]warn"]
    conn.execute("UPDATE runs SET plan_json=?, notes_json=?", (json.dumps(plan), json.dumps(["[/]note"])))
    conn.execute("UPDATE trials SET error='[/]err', notes_json='[\"[/]tn\"]'")
    conn.commit()
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    for args in (["report", RUN], ["report", RUN, "--explain"], ["results"], ["compare", RUN, RUN]):
        code, out, err = pickfs([*args, "--results", str(f)], capsys)
        assert code == 0 and "internal error" not in err, (args, err)
        assert "[/bold]ext4" in out or "[red]w[/x]" in out, (args, out[:300])


def _stored_run(tmp_path: Path, **setting: str) -> Path:
    f = results_file(tmp_path / "d")
    conn = sqlite3.connect(f)
    plan = json.loads(conn.execute("SELECT plan_json FROM runs").fetchone()[0])
    plan["workloads"][0]["settings"].update(setting)
    conn.execute("UPDATE runs SET plan_json=?, status='interrupted'", (json.dumps(plan),))
    conn.commit()
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    return f


def test_a_resumed_run_checks_its_stored_plan_as_a_new_one(tmp_path, capsys, monkeypatch):
    from pickfs.usecases import run as usecase

    monkeypatch.setattr(usecase, "require_root", lambda *a, **k: pytest.fail("a stored plan ran unchecked"))
    f = _stored_run(tmp_path, synchronous="FULL; ATTACH '/etc/x' AS y")
    code, _, err = pickfs(["run", "--resume", RUN, "--results", str(f), "--workdir", str(tmp_path / "wd")], capsys)
    assert code == 2 and "synchronous" in err and "not a value of this setting" in err, err


def test_a_run_is_not_resumed_from_a_file_another_user_can_write(tmp_path, capsys, monkeypatch):
    from pickfs.usecases import run as usecase

    monkeypatch.setattr(usecase, "require_root", lambda *a, **k: pytest.fail("resumed from another user's file"))
    f = _stored_run(tmp_path)
    os.chmod(f, 0o666)
    code, _, err = pickfs(["run", "--resume", RUN, "--results", str(f), "--workdir", str(tmp_path / "wd")], capsys)
    assert code == 2 and "another user" in err, err


def test_a_stored_plan_pickfs_wrote_passes_the_resume_check(tmp_path):
    from dataclasses import replace

    from pickfs.model import plan_from_dict
    from pickfs.plan import check_stored_plan

    plan = make_plan()
    plan = replace(plan, target=replace(plan.target, workdir=str(tmp_path / "wd")))
    check_stored_plan(plan_from_dict(record_dict(plan)))


@pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("CI"), reason="needs root to give a directory away")
def test_results_are_not_written_in_a_directory_another_user_can_change(tmp_path, capsys):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(ResultsUnusable, match="another user can change"):
        ResultStore(theirs / "r.db")
    assert os.listdir(theirs) == []
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # sticky, as /tmp: nobody can swap root's file there
    ResultStore(shared / "r.db").close()


def test_a_source_with_a_log_left_without_its_index_is_read_from_a_copy(tmp_path, capsys):
    f = results_file(tmp_path / "d")
    live = sqlite3.connect(f)  # a run still in the log when the file was copied (-wal, no -shm)
    live.execute("PRAGMA wal_autocheckpoint=0")
    live.execute("UPDATE runs SET status='copied-mid-write'")
    live.commit()
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("r.db", "r.db-wal"):
        (copy / name).write_bytes((f.parent / name).read_bytes())
    live.close()
    before = state(copy)
    code, out, err = pickfs(["results", "--results", str(copy / "r.db")], capsys)
    assert code == 0 and "copied-mid-write" in out, err  # the log's pages are read
    assert state(copy) == before


# -- every command that writes results refuses a file another user owns or can write ----------------------------
NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("CI"), reason="needs root to give a file away")


def _theirs(f: Path, how: str) -> None:
    """`f` (or a side file planted beside it) made another user's: owned by nobody, or writable by anyone."""
    if how == "nobody's, 0666":
        os.chown(f, NOBODY, NOBODY)
        os.chmod(f, 0o666)
    elif how == "nobody's, 0600":
        os.chown(f, NOBODY, NOBODY)
    elif how == "root's, 0666":
        os.chmod(f, 0o666)
    else:  # a log planted beside root's own 0600 file: SQLite would replay its pages into the database
        wal = Path(f"{f}-wal")
        wal.write_bytes(b"")
        os.chown(wal, NOBODY, NOBODY)


WRITERS = {
    "merge": lambda tmp, f: ["merge", str(results_file(tmp / "src", "s.db")), "--results", str(f)],
    "run": lambda tmp, f: ["run", "--fs", "ext4", "--workload", "sqlite-tpcb", "--duration", "1s", "--results", str(f),
                           "--workdir", str(tmp / "wd")],
    "run --resume": lambda tmp, f: ["run", "--resume", RUN, "--results", str(f), "--workdir", str(tmp / "wd")],
    "crashtest": lambda tmp, f: ["crashtest", "--fs", "ext4", "--states", "2", "--results", str(f),
                                 "--workdir", str(tmp / "wd")],
    "search": lambda tmp, f: ["search", "--fs", "ext4", "--max-time", "10m", "--results", str(f),
                              "--workdir", str(tmp / "wd")],
    "fleet run": lambda tmp, f: ["fleet", "run", "-i", "nohost.invalid,", "--plan", str(_plan(tmp)), "--results",
                                 str(f), "--workdir", str(tmp / "wd")],
}


def _plan(tmp: Path) -> Path:
    p = tmp / "p.toml"
    p.write_text('[[config]]\npreset = "ext4"\n[[workload]]\nname = "sqlite-tpcb"\n')
    return p


@as_root
@pytest.mark.parametrize("how", ["nobody's, 0666", "nobody's, 0600", "root's, 0666", "nobody's log beside it"])
@pytest.mark.parametrize("command", sorted(WRITERS))
def test_no_command_writes_into_a_results_file_another_user_owns_or_can_write(tmp_path, capsys, monkeypatch, command,
                                                                           how):
    from pickfs.cli import search
    from pickfs.fleet import controller
    from pickfs.usecases import run as usecase

    def past_the_store(*a: object, **k: object) -> None:
        raise AssertionError("went on past the results file")  # nothing is built for a refused file

    for module in (usecase, search):
        monkeypatch.setattr(module, "ledger_for", past_the_store)
    monkeypatch.setattr(controller, "FleetController", past_the_store)
    f = results_file(tmp_path / "d")
    _theirs(f, how)
    before = state(f.parent)
    code, _, err = pickfs(WRITERS[command](tmp_path, f), capsys)
    assert code == 2 and err.strip().splitlines()[-1].startswith("error:") and "Traceback" not in err, err
    assert "is not pickfs's to write" in err and ("uid 65534" in err or "another user" in err), err
    assert state(f.parent) == before


def test_side_files_a_failed_open_made_are_left_while_another_process_has_the_file_open(tmp_path):
    import subprocess
    import sys

    from pickfs.store.sqlitefile import remove_side_files

    f = results_file(tmp_path / "d")
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time\nc = sqlite3.connect(sys.argv[1])\n"
                               "c.execute('SELECT COUNT(*) FROM runs').fetchall()\nprint('open', flush=True)\n"
                               "time.sleep(60)", str(f)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        assert Path(f"{f}-shm").exists() and Path(f"{f}-wal").exists()  # the reader's, in WAL mode
        remove_side_files(f, {"-wal", "-shm"})
        assert Path(f"{f}-shm").exists() and Path(f"{f}-wal").exists()  # another process reads it: left alone
    finally:
        holder.kill()
        holder.wait()
    remove_side_files(f, {"-wal", "-shm"})
    assert sorted(os.listdir(f.parent)) == ["r.db"]


@pytest.mark.parametrize("change, said", [
    ("UPDATE meta SET value='0' WHERE key='schema_version'", "schema version '0'"),
    ("ALTER TABLE runs DROP COLUMN notes_json", "its table runs has no notes_json"),
    ("ALTER TABLE trials DROP COLUMN raw_output", "its table trials has no raw_output"),
])
def test_a_file_whose_tables_are_not_the_schema_it_claims_is_one_line_in_every_command(tmp_path, capsys, change, said):
    f = results_file(tmp_path / "d")
    conn = sqlite3.connect(f)
    conn.execute(change)
    conn.commit()
    conn.close()
    before = state(f.parent)
    for args in [*READS, ["report", RUN, "--json", "-"], ["merge", str(f), "--results", str(tmp_path / "m.db")]]:
        full = args if args[0] == "merge" else [*args, "--results", str(f)]
        code, _, err = pickfs([*full, "--workdir", str(tmp_path / "wd")], capsys)
        assert code == 2 and said in err and len(err.strip().splitlines()) == 1, (args, err)
    code, _, err = pickfs(["merge", str(results_file(tmp_path / "o")), "--results", str(f)], capsys)  # and a write
    assert code == 2 and said in err, err
    assert state(f.parent) == before
