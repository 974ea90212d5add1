"""A crash test on a budget of checking time: as many states as fit, each distinct one checked once, the verdict
stating what the states cut at random moments rule out; a setting that loses stops early with a clear answer."""

import json
import time

import pytest

from pickfs.crash.session import fuse_unavailable
from tests.conftest import ledger_entries, loops_under, mounts_under, needs_root, pickfs

pytestmark = [needs_root, pytest.mark.skipif(fuse_unavailable() is not None, reason=str(fuse_unavailable()))]


def crash_of(path) -> tuple[dict, dict]:
    cell = json.loads(path.read_text())["cells"][0]
    return cell["crash"], cell


def test_a_budget_checks_as_many_distinct_states_as_fit_and_states_what_they_rule_out(workdir):
    out = workdir / "out.json"
    t0 = time.monotonic()
    r = pickfs(workdir, "crashtest", "--fs", "ext4", "--crash-time", "20s", "--duration", "2s", "--json", str(out))
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    crash, _ = crash_of(out)
    m = crash["metrics"]
    assert m["crash_budget_s"] == 20.0
    assert m["crash_states"] > 24  # more than the first 12: the budget was spent on more
    assert m["crash_distinct_states"] <= m["crash_states"] and m["crash_drawn_states"] >= 8
    assert m["crash_check_s"] <= 20 * 1.25 + 5, m  # within the budget (a batch may run a little over)
    assert wall < 20 + 60
    assert not crash["lost_any"]
    n = int(m["crash_drawn_states"])
    assert f"none lost in {n} distinct states cut at random moments: a loss in 1 state of" in r.stdout
    assert "would have shown with 95% confidence" in r.stdout and "are coverage, not counted in it" in r.stdout
    assert f"{int(m['crash_states'])} states tried, {int(m['crash_distinct_states'])} distinct checked" in r.stdout
    assert mounts_under(workdir) == [] and loops_under(workdir) == [] and ledger_entries(workdir) == []


def test_a_setting_that_loses_stops_early_with_a_clear_answer(workdir):
    # without barriers no flush reaches the disk, and most power cuts lose commits (synchronous=OFF wrote nothing
    # to the disk at all in 2 s: one image, below)
    out = workdir / "out.json"
    r = pickfs(workdir, "crashtest", "--fs", "ext4-nobarrier", "--crash-time", "5m", "--duration", "2s",
               "--json", str(out))
    assert r.returncode == 0, r.stderr
    crash, _ = crash_of(out)
    m = crash["metrics"]
    assert crash["lost_any"] and m["crash_stopped_early"] == 1.0
    assert m["crash_check_s"] < 150  # stopped well before its five minutes
    assert "stopped early with a clear answer" in r.stdout
    assert "a loss rate per power cut between" in r.stdout


def test_a_recording_that_wrote_nothing_is_one_image_and_stops_after_its_first_states(workdir):
    """SQLite with synchronous=OFF acknowledges its commits from memory: in 2 s nothing reaches the disk, so every
    power cut leaves the same image; the budget stops after the first 12 states instead of repeating it."""
    out = workdir / "out.json"
    r = pickfs(workdir, "crashtest", "--fs", "ext4", "--set", "synchronous=OFF", "--crash-time", "5m",
               "--duration", "2s", "--json", str(out))
    assert r.returncode == 0, r.stderr
    crash, _ = crash_of(out)
    m = crash["metrics"]
    assert m["crash_flushes"] == 0 and m["crash_epochs"] == 0, m  # the premise: the window holds no write
    assert crash["lost_any"] and m["crash_stopped_early"] == 1.0
    assert m["crash_states"] == 12 and m["crash_check_s"] < 60, m
    assert "every state of this recording is one image: no write reached the disk" in " ".join(r.stdout.split())
    assert mounts_under(workdir) == [] and loops_under(workdir) == [] and ledger_entries(workdir) == []


def test_full_page_writes_off_is_caught_by_the_default_budget(workdir):
    out = workdir / "out.json"
    r = pickfs(workdir, "crashtest", "--fs", "ext4", "--workload", "pgbench", "--set", "full_page_writes=off",
               "--json", str(out), timeout=1200)
    assert r.returncode == 0, r.stderr
    crash, _ = crash_of(out)
    m = crash["metrics"]
    assert m["crash_budget_s"] == 120.0 and m["crash_states"] > 12  # the default: a budget, not a count
    assert crash["lost_any"], crash["verdict"]
    assert mounts_under(workdir) == [] and loops_under(workdir) == [] and ledger_entries(workdir) == []


def test_a_clean_configuration_stops_at_its_goal_and_hands_its_time_on(workdir):
    """--crash-bound 30: once the distinct states cut at random moments rule out a loss in 1 of 30 (89 clean ones),
    the configuration stops, at the end of a batch sized to get there, long before its two minutes."""
    out = workdir / "out.json"
    r = pickfs(workdir, "crashtest", "--fs", "ext4", "--crash-bound", "30", "--duration", "2s", "--json", str(out))
    assert r.returncode == 0, r.stderr
    crash, _ = crash_of(out)
    m = crash["metrics"]
    assert not crash["lost_any"] and m["crash_stopped_early"] == 1.0
    assert m["crash_drawn_states"] >= 89 and m["crash_check_s"] < 100, m
    # the first 12 states (4 at random), then one batch sized to the goal: most of the states are the sample
    assert m["crash_drawn_states"] >= 0.6 * m["crash_distinct_states"]
    assert m["crash_states"] < 12 + (89 - 4) / (0.8 * 0.9) + 40
    said = " ".join(r.stdout.split())  # as the terminal wrapped it
    assert "stopped at its goal: none lost in" in said and "(the goal: 1 in 30)" in said
    assert mounts_under(workdir) == [] and loops_under(workdir) == [] and ledger_entries(workdir) == []
