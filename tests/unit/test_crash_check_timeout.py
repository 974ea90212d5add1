"""A state whose check hangs is judged broken, and the crash test goes on (a damaged PostgreSQL can wait for ever)."""

import pytest

from pickfs.crash import runner
from pickfs.errors import CommandFailed


def test_a_check_that_times_out_is_a_broken_state(monkeypatch, tmp_path):
    seen = {}

    def hangs(argv, timeout=None, env=None):
        seen["timeout"] = timeout
        raise CommandFailed(list(argv), -1, "timed out")
    monkeypatch.setattr(runner, "run_program", hangs)
    doc = runner._client("check", "sqlite", tmp_path, None, {"journal_mode": "WAL", "synchronous": "FULL"})
    assert seen["timeout"] == runner.CHECK_TIMEOUT_S
    assert "did not answer its check" in doc["query_error"]
    driver = runner.Commits("sqlite", {"journal_mode": "WAL", "synchronous": "FULL"})
    opened, consistent, present, problem = driver.check(tmp_path, None, tmp_path, {}, 0)
    assert opened and consistent is False and present == set() and "hung" in problem


def test_other_steps_and_other_failures_still_fail(monkeypatch, tmp_path):
    def fails(argv, timeout=None, env=None):
        raise CommandFailed(list(argv), 1 if "check" in argv else -1, "boom")
    monkeypatch.setattr(runner, "run_program", fails)
    with pytest.raises(CommandFailed):
        runner._client("check", "sqlite", tmp_path, None, {})
    with pytest.raises(CommandFailed):
        runner._client("run", "sqlite", tmp_path, None, {})
