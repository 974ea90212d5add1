"""Hardening, for real: the command's leftovers and user, pgbench's log and MariaDB's tmpdir in the ledger,
a full disk under the results file, and Ctrl-C during startup."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from pickfs.errors import ResultsWriteFailed
from pickfs.model import Trial
from pickfs.services.mariadb import MariaDB
from pickfs.stack.ledger import Ledger
from pickfs.store import ResultStore
from pickfs.workloads.pgbench import log_directory
from tests.conftest import IS_ROOT, ledger_entries, loops_under, mounts_under, pickfs
from tests.records import fill as fill_run
from tests.records import make_plan, record_dict

ONE = ("--blocks", "1", "--runs", "1", "--warmup", "0")


def require(ok: bool, reason: str) -> None:
    """A missing prerequisite skips on a workstation and fails under CI, which installs everything."""
    if not ok:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(reason)


@pytest.fixture(autouse=True)
def _root():
    require(IS_ROOT, "needs root: loop devices, mkfs, mount and other users (CI runs as root)")


def processes_with(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and " Z" not in line and "ps -eo" not in line]


def raw_outputs(workdir: Path) -> list[dict]:
    conn = sqlite3.connect(workdir / "results.db")
    try:
        rows = conn.execute("SELECT raw_output, notes_json FROM trials WHERE phase='measured' ORDER BY id").fetchall()
    finally:
        conn.close()
    return [{**json.loads(raw), "notes": json.loads(notes)} for raw, notes in rows]


# -- 1: background processes of a command ---------------------------------------------------

def test_a_background_process_is_ended_and_the_loop_device_detached(workdir):
    marker = "301.4142"  # an unusual duration, so only this test's sleep matches
    out = workdir / "run.json"
    t0 = time.monotonic()
    r = pickfs(workdir, "run", "--fs", "ext4", "--size", "128M", "--workload", "command",
               "--set", f"command='sleep {marker} & echo started'", *ONE, "--json", str(out), timeout=240)
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 120, "pickfs waited for the background process"
    assert processes_with(f"sleep {marker}") == []
    assert mounts_under(workdir) == [] and loops_under(workdir) == [] and ledger_entries(workdir) == []
    [cell] = json.loads(out.read_text())["cells"]
    assert cell["status"] == "ok", cell["notes"]
    # (the shell may not have exec'd sleep yet when it is ended: its command line is then the shell's)
    assert any("ended 1 process the command left running" in n and marker in n for n in cell["notes"]), \
        cell["notes"]
    assert any("ran as root" in n for n in cell["notes"]), cell["notes"]


# -- 6: run_as ------------------------------------------------------------------------------

def test_run_as_runs_the_command_and_its_setup_as_that_user(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4", "--size", "128M", "--workload", "command", "--set", "run_as=nobody",
               "--set", "setup='touch made-by-setup'",
               "--set", "command='echo uid=$(id -u) home=$HOME; stat -c owner=%U made-by-setup; touch $TMPDIR/t'",
               *ONE, "--json", str(out), timeout=240)
    assert r.returncode == 0, r.stderr
    [cell] = json.loads(out.read_text())["cells"]
    assert cell["status"] == "ok", cell["notes"]
    [doc] = raw_outputs(workdir)
    nobody = subprocess.run(["id", "-u", "nobody"], capture_output=True, text=True).stdout.strip()
    assert f"uid={nobody}" in doc["output_tail"] and "owner=nobody" in doc["output_tail"]
    assert "home=" in doc["output_tail"] and doc["user"] == "nobody"
    assert not any("ran as root" in n for n in doc["notes"])


def test_run_as_an_unknown_user_is_one_line_exit_2(workdir):
    r = pickfs(workdir, "run", "--fs", "ext4", "--workload", "command", "--set", "command='true'",
               "--set", "run_as=no-such-user-pickfs")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    [line] = [x for x in r.stderr.splitlines() if x.strip()]
    assert line.startswith("error:") and "no-such-user-pickfs" in line and "useradd" in line
    assert ledger_entries(workdir) == []


# -- 2: pgbench's log directory and MariaDB's tmpdir are in the ledger ----------------------

def test_pgbench_log_directory_is_in_the_ledger_and_survives_no_kill_9(workdir):
    ledger = Ledger(workdir / "ledger")
    with log_directory(ledger) as logdir:
        [entry] = ledger.entries()
        assert entry.kind == "dir" and entry.get("path") == str(logdir) and entry.get("recursive")
        assert logdir.is_dir() and (logdir.stat().st_mode & 0o777) == 0o700
    assert not logdir.exists() and ledger.entries() == []

    # kill -9 while the directory exists: `pickfs cleanup` removes it
    code = ("import os, sys; from pathlib import Path; from pickfs.stack.ledger import Ledger; "
            "from pickfs.workloads.pgbench import log_directory\n"
            f"with log_directory(Ledger(Path({str(workdir / 'ledger')!r}))) as d:\n"
            "    (d / 'pgbench_log.1').write_text('x'); print(d, flush=True); os.kill(os.getpid(), 9)\n")
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert child.returncode == -9
    orphan = Path(child.stdout.strip())
    assert orphan.is_dir()
    r = pickfs(workdir, "cleanup")
    assert r.returncode == 0, r.stderr
    assert not orphan.exists() and ledger_entries(workdir) == []


def test_mariadb_keeps_its_temporary_files_in_its_private_directory(workdir):
    require(MariaDB.unavailable_reason() is None, str(MariaDB.unavailable_reason()))
    ledger = Ledger(workdir / "ledger")
    datadir = workdir / "data"
    datadir.mkdir()
    with MariaDB.start(datadir, {}, ledger, workdir / "run") as endpoint:
        tmpdir = subprocess.run(["mariadb", f"--socket={endpoint.env['MYSQL_UNIX_PORT']}", "--user=root", "-N",
                                 "-e", "SELECT @@tmpdir"], capture_output=True, text=True, check=True).stdout.strip()
        assert Path(tmpdir) == Path(endpoint.socket_dir) / "tmp"
        assert Path(tmpdir).is_dir() and (Path(tmpdir).stat().st_mode & 0o777) == 0o700
        assert any(e.kind == "dir" and Path(tmpdir).is_relative_to(e.get("path")) for e in ledger.entries())
    assert not Path(tmpdir).exists() and ledger.entries() == []


# -- 3: a full disk under the results database ----------------------------------------------

@contextmanager
def small_tmpfs(path: Path, size: str = "1M"):
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "pickfs-test-full", str(path)],
                   check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def fill(path: Path) -> None:
    with open(path / "filler", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass


def test_a_full_disk_is_a_clear_error_and_leaves_no_empty_file(workdir):
    with small_tmpfs(workdir / "full") as full:
        fill(full)
        source = ResultStore(workdir / "source.db")  # a run to merge: the first write the full disk refuses
        fill_run(source, make_plan())
        source.close()
        r = pickfs(workdir, "merge", str(workdir / "source.db"), "--results", str(full / "results.db"))
        assert r.returncode != 0 and "Traceback" not in r.stderr
        [line] = [x for x in r.stderr.splitlines() if x.strip()]
        assert line.startswith("error:") and "internal error" not in line
        assert f"{full / 'results.db'}" in line and "no space left on the device holding" in line and "--results" in line
        assert sorted(p.name for p in full.iterdir()) == ["filler"]


def test_a_disk_that_fills_during_a_run_is_a_clear_error_and_keeps_what_was_saved(workdir):
    with small_tmpfs(workdir / "full") as full:
        store = ResultStore(full / "results.db")
        store.create_run("R1", "0.1.0", record_dict(make_plan()), {})
        store.save_trial(Trial(run_id="R1", cell_index=0, repetition=0, phase="measured", started=1.0, elapsed_s=1.0,
                               ok=True, metrics={"tps": 1.0}, raw_output="kept"))
        fill(full)
        with pytest.raises(ResultsWriteFailed) as exc:
            store.save_trial(Trial(run_id="R1", cell_index=0, repetition=1, phase="measured", started=2.0,
                                   elapsed_s=1.0, ok=True, metrics={"tps": 1.0}, raw_output="x" * 300_000))
        assert "no space left on the device holding" in exc.value.message and str(full / "results.db") in exc.value.message
        assert "--resume R1" in exc.value.hint
        with pytest.raises(ResultsWriteFailed):  # later writes fail the same way: the run stops
            store.save_trial(Trial(run_id="R1", cell_index=0, repetition=2, phase="measured", started=3.0,
                                   elapsed_s=1.0, ok=True, metrics={}, raw_output=""))
        store.close()
        (full / "filler").unlink()
        again = ResultStore(full / "results.db")
        try:
            assert [t.raw_output for t in again.load("R1").trials] == ["kept"]
        finally:
            again.close()


# -- 5: Ctrl-C during startup ----------------------------------------------------------------

@pytest.mark.parametrize("delay", [0.05, 0.3, 0.6, 2.0])  # imports, then a running command
def test_ctrl_c_during_startup_exits_quietly(workdir, tmp_path, delay):
    env = {**os.environ, "PICKFS_WORKDIR": str(workdir), "CI": "1"}
    target = tmp_path / "dir"
    target.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "pickfs", "run", "--target", "directory", "--dir", str(target),
                             "--workload", "command", "--set", "command='sleep 30'", *ONE],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err and "Traceback" not in out, err
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert processes_with(str(target)) == [] and ledger_entries(workdir) == []
