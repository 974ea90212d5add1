"""When a crash test's budget stops before its time ends: a clean cell at its goal (crash_bound), a recording whose
states are all one image, and states that only repeat images checked already (pure parts of the runner)."""

import math
from dataclasses import replace

import pytest

from pickfs.crash.log import FLUSH, TRUNCATE, WRITE, ZERO, Record
from pickfs.crash.runner import (
    BATCH_LEAST,
    BATCH_MOST,
    REPEATS,
    StateResult,
    _at_goal,
    _only_repeats,
    _states_for_goal,
    one_image_said,
)
from pickfs.crash.states import LATER_DRAWN, one_image
from pickfs.errors import PlanError
from pickfs.stats.crashbound import bound

CLEAN = StateResult(0, "random subset", 1, 0, True, True, True, True, 0, 0.0, 10, drawn=True)


def rules_out(n: int) -> int:
    return bound(0, n).rules_out_one_in


def test_a_clean_cell_stops_once_its_random_states_rule_out_the_goal():
    below = [replace(CLEAN, index=i) for i in range(447)]
    assert rules_out(447) < 150 <= rules_out(448)  # 448 clean random states rule out 1 in 150
    assert _at_goal(below, 150, rules_out) == ""
    said = _at_goal([*below, replace(CLEAN, index=447)], 150, rules_out)
    assert said.startswith("stopped at its goal: none lost in 448 distinct states cut at random moments")
    assert "a loss in 1 state of 150 or more would have shown with 95% confidence" in said
    # targeted states and duplicates are not the sample: they bring no goal nearer
    padded = [*below, *(replace(CLEAN, index=500 + i, drawn=False) for i in range(50)),
              *(replace(CLEAN, index=600 + i, same_as=1) for i in range(50))]
    assert _at_goal(padded, 150, rules_out) == ""
    assert _at_goal([*below, replace(CLEAN, index=447)], 0, rules_out) == ""  # no goal: the whole budget


def test_a_cell_that_lost_anything_never_stops_at_the_goal():
    clean = [replace(CLEAN, index=i) for i in range(600)]
    lost_targeted = [*clean, replace(CLEAN, index=600, drawn=False, lost=3)]
    assert _at_goal(lost_targeted, 150, rules_out) == ""  # a loss: not clean, whatever the sample
    assert _states_for_goal(lost_targeted, 150, rules_out) == BATCH_MOST  # it goes on as without a goal
    broken = [*clean, replace(CLEAN, index=600, drawn=False, mounted=False)]
    assert _at_goal(broken, 150, rules_out) == ""


def test_a_batch_is_sized_to_end_where_the_goal_is_reached():
    first = [replace(CLEAN, index=i, drawn=i % 3 == 0) for i in range(12)]  # 4 at random
    n = _states_for_goal(first, 150, rules_out)
    assert n == math.ceil((448 - 4) / (LATER_DRAWN * 0.9))  # the 444 random ones missing, duplicates allowed for
    assert _states_for_goal([replace(CLEAN, index=i) for i in range(447)], 150, rules_out) == BATCH_LEAST
    assert _states_for_goal(first, 0, rules_out) == BATCH_MOST  # no goal
    assert _states_for_goal([], 10**6, rules_out) > 2_900_000  # found by halving, not step by step


def test_states_that_only_repeat_checked_images_stop_the_budget_after_a_hundred_in_a_row():
    first = [replace(CLEAN, index=i) for i in range(5)]
    repeats = [replace(CLEAN, index=5 + i, same_as=i % 5) for i in range(REPEATS - 1)]
    assert _only_repeats([*first, *repeats]) == ""
    one_more = [*first, *repeats, replace(CLEAN, index=200, same_as=0)]
    said = _only_repeats(one_more)
    assert said.startswith(f"stopped: the last {REPEATS} states drawn were each an image checked already")
    assert "5 distinct of 105 states" in said
    # a state that loses power again during recovery is drawn anew each time: it neither ends nor extends the run
    again = replace(CLEAN, index=300, recovery="cut again")
    with_again = [*first, *repeats[:50], again, *repeats[50:], replace(CLEAN, index=200, same_as=0)]
    assert _only_repeats(with_again).startswith(f"stopped: the last {REPEATS} states")
    assert _only_repeats(with_again[:-1]) == ""
    # a new image ends the run
    assert _only_repeats([*first, *repeats, replace(CLEAN, index=200)]) == ""
    # the rule of three: none new in 100 draws rules out a share of 3 in 100 or more new ones (95%)
    assert rules_out(REPEATS) >= 100 / 3 - 1


def test_a_recording_is_one_image_when_no_write_reached_the_disk_in_its_window():
    before = [Record(WRITE, 1, 0, 4096, 0), Record(FLUSH, 2, 0, 0, 0)]
    assert one_image([*before, Record(FLUSH, 5, 0, 0, 0), Record(FLUSH, 6, 0, 0, 0)], 2, 4)
    assert one_image(before, 2, 2)  # nothing at all in the window
    for kind in (WRITE, ZERO, TRUNCATE):
        assert not one_image([*before, Record(FLUSH, 5, 0, 0, 0), Record(kind, 6, 0, 4096, 0)], 2, 4)
    said = one_image_said(143_557, 12)
    assert said.startswith("every state of this recording is one image: no write reached the disk")
    assert "143,557 commits acknowledged" in said and "stopped after 12 states" in said


def _plan(tmp_path, *args: str):
    from pickfs.cli.crashtest import command, crash_plan

    return crash_plan(command.make_context("crashtest", [*args, "--fs", "ext4", "--workdir", str(tmp_path)]).params)


def test_crash_bound_is_a_goal_of_a_budget(tmp_path):
    assert _plan(tmp_path).method.crash.bound == 0  # the default spends the whole budget
    assert _plan(tmp_path, "--crash-bound", "150").method.crash.bound == 150
    assert _plan(tmp_path, "--crash-bound", "150", "--crash-time", "5m").method.crash.bound == 150
    with pytest.raises(PlanError, match="needs a budget"):
        _plan(tmp_path, "--crash-bound", "150", "--states", "8")
    with pytest.raises(PlanError, match="rules out nothing"):
        _plan(tmp_path, "--crash-bound", "1")


def test_a_plans_crash_bound_holds_unless_the_flag_is_given(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('[method]\ncrash_bound = 150\n[[config]]\npreset = "ext4"\n[[workload]]\nname = "sqlite-tpcb"\n')
    assert _plan_file(tmp_path, plan).method.crash.bound == 150
    assert _plan_file(tmp_path, plan, "--crash-bound", "300").method.crash.bound == 300
    plan.write_text('[method]\ncrash_bound = 1\n[[config]]\npreset = "ext4"\n[[workload]]\nname = "sqlite-tpcb"\n')
    with pytest.raises(PlanError, match="crash_bound = 1 rules out nothing"):
        _plan_file(tmp_path, plan)


def test_run_takes_crash_bound_as_crashtest_does(tmp_path, capsys):
    from pickfs.cli.main import main
    from pickfs.cli.run import command, request_from_flags

    def run_plan(*args: str):
        with command.make_context("run", [*args, "--workdir", str(tmp_path / "w")]) as ctx:
            return request_from_flags(ctx.params).plan

    crash = run_plan("--fs", "ext4", "--crash-states", "12", "--crash-time", "2m", "--crash-bound", "150").method.crash
    assert (crash.states, crash.time, crash.bound) == (12, 120.0, 150)
    assert run_plan("--fs", "ext4", "--crash-states", "12", "--crash-time", "2m").method.crash.bound == 0
    plan = tmp_path / "p.toml"
    plan.write_text('[method]\ncrash_bound = 150\n[[config]]\npreset = "ext4"\n[[workload]]\nname = "sqlite-tpcb"\n')
    assert run_plan("--plan", str(plan), "--crash-states", "12", "--crash-time", "2m", "--crash-bound", "300"
                    ).method.crash.bound == 300
    for args, said in ((("--crash-bound", "150"), "--crash-bound needs --crash-states"),
                       (("--crash-states", "12", "--crash-bound", "150"),
                        "--crash-bound needs a budget to stop early in (add --crash-time 2m)"),
                       (("--crash-states", "12", "--crash-time", "2m", "--crash-bound", "1"),
                        "--crash-bound 1 rules out nothing")):
        with pytest.raises(SystemExit) as exc:
            main(["run", *args, "--fs", "ext4", "--workdir", str(tmp_path / "w"), "--dry-run"])
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and len(err.splitlines()) == 1 and said in err, err


def _plan_file(tmp_path, plan, *args: str):
    from pickfs.cli.crashtest import command, crash_plan

    return crash_plan(command.make_context("crashtest", ["--plan", str(plan), *args, "--workdir",
                                                         str(tmp_path / "w")]).params)


def test_a_slow_state_on_one_workbench_does_not_hold_back_the_clear_answer_of_the_other():
    """The stop is judged on every result as its check ends (check_states's `ended`), not on those handed on in the
    order of the states: a first state whose check waits (a damaged server's time limit) must not let the other
    workbench go on checking the rest of its batch."""
    import threading
    import time

    from pickfs.crash.runner import _clear_answer, check_states
    from pickfs.crash.states import CrashState
    from pickfs.stats.crashbound import settled

    release = threading.Event()  # the slow check ends when the test lets it (or after 10 s)

    class Checker:
        def __init__(self):
            self.checked = []

        def check(self, st, identity):
            if st.index == 0:
                release.wait(timeout=10)
            time.sleep(0.01)  # a check takes its time
            self.checked.append(st.index)
            return replace(CLEAN, index=st.index, lost=5)  # every state cut at random lost commits

    states = [CrashState(i, cut=i, durable=i, kept=(), dropped=0, t_ns=i, mode="unflushed lost") for i in range(200)]
    slow, fast = Checker(), Checker()
    halt = threading.Event()
    ended, stops = [], []

    def judge(r):
        ended.append(r)
        said = _clear_answer(ended, settled)
        if said and not halt.is_set():
            stops.append((said, len(ended)))
            halt.set()
            release.set()

    out = [r.index for r in check_states([slow, fast], states, [None] * 200, halt, judge)]
    assert stops and stops[0][1] == 6  # 6 of 6 lost: clear, with the first state still being checked
    assert "6 of 6 distinct states" in stops[0][0]
    assert 0 in slow.checked and slow.checked[0] == 0 and len(slow.checked) <= 2  # it stopped after its slow one
    assert len(fast.checked) <= 10  # not the hundred of its share of the batch
    # every state checked is handed on, in the order of the states up to the first never started
    assert sorted(out) == sorted(slow.checked + fast.checked) and out[0] == 0
    assert sorted(r.index for r in ended) == sorted(out)
