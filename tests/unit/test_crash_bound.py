"""What a crash test's sample rules out: the exact binomial bound over the states cut at random moments only,
the targeted ones reported as coverage; and the random moments themselves."""

import math
import random
from dataclasses import replace

import pytest

from pickfs.analysis.views import CrashView
from pickfs.crash.log import FLUSH, WRITE, Record
from pickfs.crash.runner import CrashResult, StateResult
from pickfs.crash.states import AT_RANDOM, crash_moments, generate
from pickfs.report.crash_text import bound_words
from pickfs.stats.crashbound import bound, lower, one_in, upper


def test_the_bound_is_the_exact_clopper_pearson_one():
    assert upper(0, 12) == pytest.approx(0.2209, abs=1e-4)  # the figure: 22% for 0 of 12
    assert upper(0, 1240) == pytest.approx(1 - 0.05 ** (1 / 1240))
    assert one_in(upper(0, 1240)) == 414 and one_in(upper(0, 12)) == 4
    # the defining property: at the upper bound, seeing at most k of n has probability 5% exactly
    for k, n in ((1, 20), (3, 100), (10, 40)):
        p = upper(k, n)
        assert sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1)) == pytest.approx(0.05, rel=1e-6)
        q = lower(k, n)
        assert sum(math.comb(n, i) * q**i * (1 - q) ** (n - i) for i in range(k, n + 1)) == pytest.approx(0.05, rel=1e-6)
    assert upper(0, 0) == 1.0 and upper(5, 5) == 1.0 and lower(0, 9) == 0.0
    b = bound(3, 100)
    assert 0 < b.low < 0.03 < b.high < 1 and b.rules_out_one_in == 0 and 5 < b.known_within < 20
    assert bound(0, 500).rules_out_one_in == 167 and bound(0, 500).known_within == math.inf


def test_one_in_never_overstates_what_is_ruled_out():
    for n in (1, 7, 12, 150, 449, 500, 1240, 5000):
        k = one_in(upper(0, n))
        assert 1 / k >= upper(0, n) > 1 / (k + 1)


def _view(states, drawn, failed) -> CrashView:
    return CrashView({"crash_states": float(states), "crash_drawn_states": float(drawn),
                      "crash_drawn_failed": float(failed)})


def test_the_words_count_only_the_random_states_and_name_the_targeted_as_coverage():
    said = bound_words(_view(1500, 500, 0)) or ""
    assert said.startswith("none lost in 500 distinct states cut at random moments: a loss in 1 state of 167 or more "
                           "would have shown with 95% confidence")
    assert "the other 1,000 states (chosen where damage is likeliest, or duplicates) are coverage, not counted" in said
    assert "safe" not in said
    lost = bound_words(_view(12, 4, 2)) or ""
    assert lost.startswith("2 of 4 distinct states cut at random moments lost or damaged something: a loss rate per power cut "
                           "between 6.76% and 93.24%")
    assert bound_words(CrashView({"crash_states": 12.0})) is None  # stored before states were drawn at random


def _records(n: int = 400) -> list[Record]:
    out = []
    for i in range(n):
        out.append(Record(WRITE, 1000 + 10 * i, (i % 50) * 4096, 4096, 0) if i % 4 else Record(FLUSH, 1000 + 10 * i, 0, 0, 0))
    return out


def test_a_third_of_the_moments_are_drawn_at_random_one_per_stretch_and_marked():
    records = _records()
    t_start, t_end = 1000, 5000
    for seed in (1, 2, 3):
        states = generate(records, t_start, t_end, 30, seed=seed)
        drawn = [s for s in states if s.drawn]
        assert len(drawn) == 10 and all(s.why == AT_RANDOM for s in drawn)
        assert not any(s.drawn for s in states if s.why != AT_RANDOM)
    a = [c for c, _, why in crash_moments(records, t_start, t_end, 30, seed=1) if why == AT_RANDOM]
    b = [c for c, _, why in crash_moments(records, t_start, t_end, 30, seed=2) if why == AT_RANDOM]
    assert a != b  # drawn, not placed
    # one per tenth of the run: over many seeds each moment falls anywhere in its own stretch
    stretch = (t_end - t_start) // 10
    seen = set()
    for seed in range(200):
        cuts = sorted(c for c, _, why in crash_moments(records, t_start, t_end, 30, seed=seed) if why == AT_RANDOM)
        times = [records[c].t_ns if c < len(records) else t_end for c in cuts]
        assert all(t_start + j * stretch <= t <= t_start + (j + 1) * stretch + 10 for j, t in enumerate(times))
        seen.update((t - t_start) % stretch // 40 for t in times)
    assert len(seen) == 10  # every part of a stretch is drawn


def test_a_random_moment_stays_in_the_sample_even_where_a_targeted_one_is_the_same():
    records = [Record(WRITE, 10, 0, 4096, 0), Record(FLUSH, 20, 0, 0, 0)]  # one moment possible: all the same
    states = generate(records, 5, 30, 6, seed=random.Random(4).randrange(100))
    assert sum(s.drawn for s in states) == 2


def test_the_result_counts_the_sample_and_its_failures():
    s = StateResult(0, "random subset", 1, 0, True, True, True, True, 0, 0.0, 10)
    states = (replace(s, drawn=True), replace(s, index=1, drawn=True, lost=2), replace(s, index=2, lost=1),
              replace(s, index=3), replace(s, index=4, drawn=True, lost=2, same_as=1))
    m = CrashResult("sqlite", 10, 4, 2, states, 1.0, check_seconds=2.0).metrics()
    assert (m["crash_states"], m["crash_distinct_states"], m["crash_distinct_per_s"]) == (5.0, 4.0, 2.0)
    assert (m["crash_drawn_states"], m["crash_drawn_failed"]) == (2.0, 1.0)  # the duplicate is not counted


def _plan(tmp_path, *args: str):
    from pickfs.cli.crashtest import command, crash_plan

    return crash_plan(command.make_context("crashtest", [*args, "--fs", "ext4", "--workdir", str(tmp_path)]).params)


def test_crashtest_spends_a_budget_by_default_and_states_alone_stay_a_count(tmp_path):
    from pickfs.errors import PlanError

    m = _plan(tmp_path).method
    assert (m.crash.states, m.crash.time) == (12, 120.0)  # a budget, not a count, by default
    m = _plan(tmp_path, "--states", "24").method
    assert (m.crash.states, m.crash.time) == (24, 0.0)  # exactly 24
    m = _plan(tmp_path, "--crash-time", "10m").method
    assert (m.crash.states, m.crash.time) == (12, 600.0)
    m = _plan(tmp_path, "--states", "5", "--crash-time", "30s").method
    assert (m.crash.states, m.crash.time) == (5, 30.0)
    with pytest.raises(PlanError, match="no time to check states in"):
        _plan(tmp_path, "--crash-time", "0s")


def test_the_states_that_fit_follow_the_pace_so_far():
    from pickfs.crash.runner import _states_that_fit

    assert _states_that_fit(100.0, 10.0, 40) == 360  # 4 states/s, 90% of what fits
    assert _states_that_fit(0.5, 10.0, 40) == 0  # fewer than 3 fit
    assert _states_that_fit(100.0, 0.0, 0) == 0
    assert _states_that_fit(10_000.0, 1.0, 100) == 2000  # one batch at most


def test_a_test_stops_early_only_when_the_random_sample_pins_the_loss_rate_within_two():
    from pickfs.crash.runner import _clear_answer
    from pickfs.stats.crashbound import settled

    s = StateResult(0, "random subset", 1, 0, True, True, True, True, 0, 0.0, 10, drawn=True)
    few = [replace(s, index=i, lost=1 if i % 2 else 0) for i in range(20)]  # 10 of 20 lost: not yet within 2
    assert _clear_answer(few, settled) == ""
    many = [replace(s, index=i, lost=1 if i % 2 else 0) for i in range(60)]  # 30 of 60
    said = _clear_answer(many, settled)
    assert said.startswith("stopped early with a clear answer: 30 of 60 distinct states cut at random moments")
    targeted = [replace(x, drawn=False) for x in many]  # targeted states are coverage: they settle nothing
    assert _clear_answer(targeted, settled) == ""
    assert not settled(0, 10_000)  # none lost never stops early: the budget narrows the bound


def test_coverage_counts_epochs_cut_in_and_overwriting_multi_unit_writes_torn():
    from pickfs.crash.log import Piece
    from pickfs.crash.states import CrashState, coverage

    def rec(kind, t, offset=0, length=0):
        return Record(kind, t, offset, length, 0)

    records = [rec(WRITE, 1, 0, 8192), rec(FLUSH, 2),  # before the window: units 0 and 1 written
               rec(WRITE, 3, 0, 8192), rec(WRITE, 4, 65536, 4096), rec(FLUSH, 5),  # epoch at 2: an overwrite (2)
               rec(FLUSH, 6),  # an epoch with no writes: not counted
               rec(WRITE, 7, 65536, 8192), rec(FLUSH, 8),  # epoch at 6: 2 units, one written before: overwrite (6)
               rec(WRITE, 9, 1 << 20, 8192), rec(FLUSH, 10)]  # epoch at 8: new units only, no overwrite
    first, last = 2, len(records)
    torn = CrashState(0, cut=3, durable=2, kept=(Piece(2, 0, 4096),), dropped=1, t_ns=3, mode="torn writes",
                      units=2, torn=1)
    whole = CrashState(1, cut=9, durable=8, kept=(), dropped=2, t_ns=9, mode="unflushed lost", units=2)
    flushed = CrashState(2, cut=8, durable=8, kept=(), dropped=0, t_ns=8, mode="unflushed lost")  # no unflushed
    c = coverage(records, first, last, [torn, whole, flushed], 4096)
    assert (c.epochs, c.epochs_covered, c.overwrites, c.overwrites_torn) == (3, 2, 2, 1)
    from pickfs.report.crash_text import coverage_words

    view = CrashView({"crash_states": 3.0, "crash_epochs": 3.0, "crash_epochs_covered": 2.0, "crash_overwrites": 2.0,
                      "crash_overwrites_torn": 1.0})
    assert coverage_words(view) == ("the states were cut in 2 of the recording's 3 flush epochs with unflushed writes "
                                    "(67%) and tore 1 of its 2 multi-unit writes that overwrite earlier data (50%)")
    assert coverage_words(CrashView({"crash_states": 3.0})) is None
