"""Ctrl-C always ends a run as interrupted, even when undoing what was built fails on the way out;
and an explicit --workdir wins over a plan file's."""

import sqlite3

import pytest

from pickfs.cli.main import main
from pickfs.engine import executor
from pickfs.errors import EXIT_INTERRUPTED, PickfsError
from pickfs.plan import load_plan_file
from pickfs.usecases.run import interrupted


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
