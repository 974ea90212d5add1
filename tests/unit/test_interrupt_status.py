"""Ctrl-C always ends a run as interrupted, even when undoing what was built fails on the way out;
and an explicit --workdir wins over a plan file's."""

import sqlite3
import subprocess
import sys

import pytest

from pickfs.cli.main import main
from pickfs.engine import executor, sidebyside
from pickfs.errors import EXIT_INTERRUPTED, PickfsError
from pickfs.plan import load_plan_file
from pickfs.stack.signals import interrupted


def test_interrupted_looks_through_errors_raised_while_handling_one():
    def teardown_fails():
        try:
            raise KeyboardInterrupt()
        finally:
            raise PickfsError("umount failed", "unmount it by hand")

    with pytest.raises(PickfsError) as info:
        teardown_fails()
    assert interrupted(info.value)
    assert not interrupted(PickfsError("mkfs failed", "fix it"))
    assert interrupted(KeyboardInterrupt())


def test_ctrl_c_then_a_failing_teardown_still_ends_the_run_interrupted(tmp_path, monkeypatch, capsys):
    def execute(self, previous=()):
        try:
            raise KeyboardInterrupt()  # Ctrl-C in the middle of a round ...
        finally:
            raise PickfsError("could not undo mount /x: target is busy", "unmount it by hand")  # ... then teardown fails

    monkeypatch.setattr(executor.Executor, "execute", execute)
    data = tmp_path / "a"
    data.mkdir()
    workdir = tmp_path / "work"
    with pytest.raises(SystemExit) as info:
        main(["run", "--dir", str(data), "--workdir", str(workdir)])
    assert info.value.code == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert "could not undo mount /x" in err and "continue with: pickfs run --resume" in err
    conn = sqlite3.connect(workdir / "results.db")
    try:
        assert conn.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
    finally:
        conn.close()


def test_an_explicit_workdir_wins_over_the_plan_files(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('fs = ["ext4"]\n[target]\nworkdir = "/var/tmp/from-the-plan"\n')
    assert load_plan_file(plan, workdir="/var/tmp/given", workdir_given=True).target.workdir == "/var/tmp/given"
    assert load_plan_file(plan, workdir="/var/tmp/default").target.workdir == "/var/tmp/from-the-plan"


def test_a_slice_whose_teardown_fails_after_ctrl_c_ends_the_run_not_the_cell(tmp_path, monkeypatch, capsys):
    """Ctrl-C inside a slice whose own teardown then failed (a control group still busy): the cell's error
    handler took it for the cell's failure, the run went on and ended failed (exit 1), not interrupted."""
    def one_slice(self, member, round_no, others):
        try:
            raise KeyboardInterrupt()
        finally:
            raise PickfsError("could not remove the control group /x: busy", "run pickfs cleanup")

    monkeypatch.setattr(sidebyside.Slicer, "slice", one_slice)
    data = tmp_path / "a"
    data.mkdir()
    with pytest.raises(SystemExit) as info:
        main(["run", "--dir", str(data), "--workdir", str(tmp_path / "work")])
    assert info.value.code == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert "could not remove the control group" in err and "no configuration gave a result" not in err


DROPPED = """
import os, signal, subprocess, sys
from pathlib import Path
from pickfs.stack.ledger import Ledger
from pickfs.stack.signals import install_interrupt
install_interrupt()
os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGINT))
try:
    subprocess.run(["true"], preexec_fn=lambda: None)  # the Ctrl-C comes while the child is being started
    print("dropped by Python")
    Ledger(Path(sys.argv[1])).record("mount", mountpoint="/x")
    print("recorded after the Ctrl-C")
except KeyboardInterrupt:
    print("raised")
"""


def test_a_ctrl_c_python_drops_is_raised_again_before_anything_new_is_made(tmp_path):
    """A signal handler that runs inside an at-fork hook raises into nowhere ("Exception ignored"): the
    run went on to its end and exited 0 after a Ctrl-C. The next resource recorded raises it again."""
    ledger = tmp_path / "ledger"
    out = subprocess.run([sys.executable, "-c", DROPPED, str(ledger)], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "raised", (out.stdout, out.stderr)
    assert "recorded after the Ctrl-C" not in out.stdout
    assert not list(ledger.glob("*.json")) if ledger.is_dir() else True
