"""The hints pickfs gives after a kill, in its lists and in its errors name what is true: the command that
continues a search's stage, the results of a capacity search and a crash test, an echoed input cut."""

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from pickfs.cli.cleanup import end_stale_runs
from pickfs.errors import PlanError, cut_long_words
from pickfs.model import Target, Trial
from pickfs.search.stages import SearchState, save_state, search_of_run
from pickfs.store import ResultStore
from tests.records import make_plan, record_dict


def running_run(workdir: Path, run_id: str) -> ResultStore:
    plan = make_plan()
    plan = replace(plan, target=Target(workdir=str(workdir)))
    store = ResultStore(workdir / "results.db")
    store.create_run(run_id, "0.1.0", record_dict(plan), {"hostname": "box"})
    store.set_status(run_id, "running")
    return store


def test_cleanup_names_the_search_to_resume_for_a_killed_stage(tmp_path):
    store = running_run(tmp_path, "20260101-000000-aaaa")
    save_state(str(tmp_path), SearchState("20260101-000000-5ea2", {}, {
        "screening": {"run_id": "20260101-000000-aaaa", "elapsed_s": 12.0, "done": False}}))
    [line] = end_stale_runs(str(tmp_path))
    assert "continue with: pickfs search --resume 20260101-000000-5ea2 --workdir " in line, line
    assert "pickfs run --resume" not in line
    store.close()


def test_cleanup_names_run_resume_for_a_run_of_its_own(tmp_path):
    store = running_run(tmp_path, "20260101-000000-bbbb")
    save_state(str(tmp_path), SearchState("20260101-000000-5ea2", {}, {
        "screening": {"run_id": "20260101-000000-aaaa", "elapsed_s": 12.0, "done": True}}))
    [line] = end_stale_runs(str(tmp_path))
    assert line.endswith("continue with: pickfs run --resume 20260101-000000-bbbb"), line
    store.close()


def test_a_search_record_another_user_can_write_names_no_search(tmp_path):
    save_state(str(tmp_path), SearchState("20260101-000000-5ea2", {}, {
        "screening": {"run_id": "20260101-000000-aaaa", "elapsed_s": 1.0, "done": False}}))
    record = tmp_path / "searches" / "20260101-000000-5ea2.json"
    assert search_of_run(str(tmp_path), "20260101-000000-aaaa") == "20260101-000000-5ea2"
    record.chmod(0o666)
    assert search_of_run(str(tmp_path), "20260101-000000-aaaa") is None


def test_a_capacity_search_and_a_crash_test_count_their_results(tmp_path):
    """`pickfs results` ("measured") and `pickfs cleanup` ("trials kept") count a capacity search's steps and a
    crash test's states, as the run's own status does."""
    store = running_run(tmp_path, "20260101-000000-cccc")
    for i, phase in enumerate(("capacity", "capacity", "crash", "measured", "warmup", "prepare")):
        store.save_trial(Trial(run_id="20260101-000000-cccc", cell_index=0, repetition=i, phase=phase,
                               started=float(i), elapsed_s=1.0, ok=True, metrics={"tps": 1.0}))
    [row] = store.list_runs()
    assert row.trials_ok == 4
    [line] = end_stale_runs(str(tmp_path))
    assert "(4 trials kept)" in line, line
    store.close()


def test_a_long_word_in_an_error_is_cut():
    key = "k" * 100_000
    text = PlanError(f"no selected workload has the setting {key}", "valid settings: scale").one_line()
    assert len(text) < 200 and "… (100,000 characters)" in text and text.endswith("(valid settings: scale)")
    assert cut_long_words("a path /var/tmp/x stays whole") == "a path /var/tmp/x stays whole"


def test_a_100000_character_set_key_is_not_echoed_whole(tmp_path):
    for args in (["--set", "k" * 100_000 + "=1"], ["--set", "k" * 100_000], ["--workload", "w" * 100_000]):
        r = subprocess.run([sys.executable, "-m", "pickfs", "run", "--dry-run", "--workdir", str(tmp_path), *args],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, r.stderr[:300]
        assert len(r.stderr) < 600 and "…" in r.stderr and r.stderr.count("\n") == 1, r.stderr[:600]
