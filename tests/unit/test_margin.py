"""What would settle a race's comparison at the margin, and when a race cannot settle in its budget
(analysis/margin.py): the projection from the interval's half-width and its 1/sqrt(time) narrowing."""

import math
from unittest import mock

import pytest
from scipy import stats as sps

from pickfs.analysis import margin
from pickfs.analysis.margin import (
    MIN_ROUNDS,
    STOP_FACTOR,
    Hopeless,
    WouldSettle,
    cannot_settle,
    close_to_margin,
    hopeful_more_s,
    margin_words,
    more_time,
    round_margin,
    settle_margin,
    settle_phrase,
    settle_target,
    would_settle,
)
from pickfs.engine.race import stop_note
from pickfs.stats.decision import ALPHA, RACE_ALPHA, Contrast, contrast, decide, decision_alpha, leaning
from pickfs.stats.weather import Fit, Spread, fit
from tests.unit.test_race import simulate

Q95 = 1.6448536269514722  # one-sided 95% normal quantile


def test_an_estimate_within_the_margin_is_settled_by_time_at_the_rate_the_interval_narrows():
    # +2% with a standard error of 2 points after 10 minutes: the bound reaches +5% at a half-width of ~2.9
    # points, (1.645 * 2 / 2.9)^2 = 1.28 times the time so far
    c = Contrast(math.log(1.02), 0.02, math.inf)
    s = settle_margin("xfs", c, 0.05, 600.0, 0.05)
    assert s is not None and not s.at_margin and s.more_s is not None
    distance = math.log(1.05) - math.log(1.02)
    assert s.more_s == pytest.approx(600 * ((Q95 * 0.02 / distance) ** 2 - 1))
    assert 100 < s.more_s < 250
    assert s.wider == pytest.approx(0.10)  # the upper bound, +5.4%, rounded up to a 10% margin


def test_an_estimate_beyond_the_margin_is_settled_by_time_too():
    c = Contrast(math.log(1.09), 0.03, math.inf)  # faster by more than the margin, not yet sure
    s = settle_margin("xfs", c, 0.05, 300.0, 0.05)
    assert s is not None and s.more_s is not None and s.more_s > 0
    assert s.wider is not None and s.wider >= 0.15


def test_an_estimate_at_the_margin_needs_a_wider_margin_not_time():
    c = Contrast(math.log(1.05), 0.012, math.inf)
    s = settle_margin("xfs", c, 0.05, 540.0, 0.05)
    assert s is not None and s.at_margin and s.more_s is None
    assert s.wider == pytest.approx(0.10)


def test_a_wide_interval_far_from_the_margin_is_not_at_it():
    c = Contrast(math.log(0.96), 0.17, math.inf)  # -4% with a huge interval: time would settle it
    s = settle_margin("xfs", c, 0.05, 30.0, 0.05)
    assert s is not None and not s.at_margin and s.more_s is not None and s.more_s > 30


def test_a_settled_comparison_needs_nothing():
    assert settle_margin("xfs", Contrast(math.log(1.01), 0.01, 50.0), 0.05, 600.0, 0.05) is None
    assert settle_margin("xfs", Contrast(math.log(1.20), 0.01, 50.0), 0.05, 600.0, 0.05) is None
    assert settle_target("tmpfs", Contrast(1.0, 0.01, 50.0), 0.10, 600.0, 0.05) is None
    s = settle_target("tmpfs", Contrast(1.0, 0.1, 50.0), 0.10, 600.0, 0.05)
    assert s is not None and s.more_s is not None and s.more_s > 600


def test_round_margins_are_multiples_of_five_percent():
    assert round_margin(0.054) == pytest.approx(0.10)
    assert round_margin(0.10) == pytest.approx(0.10)
    assert round_margin(0.001) == pytest.approx(0.05)
    assert round_margin(0.31) == pytest.approx(0.35)


def _decided(truth, seed=3, rounds=MIN_ROUNDS + 2, **kw):
    f = fit(simulate(seed, truth, blocks=1, base_copies=1, rounds=rounds, **kw))
    assert f is not None
    d = decide(f, ["base", "copy"], [], "base", margin=0.005, alpha=RACE_ALPHA)
    return f, d


def test_an_a_a_copy_at_a_tiny_margin_cannot_settle_in_a_short_budget():
    f, d = _decided({"base": 0.0, "copy": 0.0}, image_sd=0.0, slice_sd=0.03, drift=0.02)
    assert not d.settled
    stop = cannot_settle(f, d, "base", 0.005, 0.1, 60.0, 20.0, MIN_ROUNDS + 2, RACE_ALPHA)
    assert stop is not None and stop.open == ("copy",)
    # the same race with a budget many times as long left goes on
    assert cannot_settle(f, d, "base", 0.005, 0.1, 60.0, 1e6, MIN_ROUNDS + 2, RACE_ALPHA) is None


def test_no_projection_before_the_fewest_rounds():
    f, d = _decided({"base": 0.0, "copy": 0.0}, image_sd=0.0, slice_sd=0.03, drift=0.02)
    assert cannot_settle(f, d, "base", 0.005, 0.1, 60.0, 20.0, MIN_ROUNDS - 1, RACE_ALPHA) is None


def test_a_race_that_can_settle_in_its_budget_goes_on():
    # a copy 3% slower at a 5% margin with a noisy start: more time settles it, well within the budget left
    f, d = _decided({"base": 0.0, "copy": math.log(0.97)}, slice_sd=0.05, image_sd=0.0, drift=0.05)
    if d.settled:
        pytest.skip("settled already")
    d5 = decide(f, ["base", "copy"], [], "base", margin=0.05, alpha=RACE_ALPHA)
    assert cannot_settle(f, d5, "base", 0.05, 0.1, 60.0, STOP_FACTOR * 60 * 20, MIN_ROUNDS + 2, RACE_ALPHA) is None


def test_a_margin_is_said_as_typed():
    assert margin_words(0.05) == "5%" and margin_words(0.005) == "0.5%" and margin_words(0.1) == "10%"


def test_the_stop_note_says_what_would_settle_the_answer_in_the_answers_words():
    settle = WouldSettle("ext4", ("ext4-again",), 1500.0, 0.05)
    text = stop_note("sqlite-tpcb", 9, 0.005, Hopeless(("ext4-again",), 40.0), settle, ("tmpfs",), 3.0)
    assert text.startswith("sqlite-tpcb: the race stops after round 9 with 40 s of its budget left")
    assert "0.5% margin" in text
    assert "ext4-again against ext4: " + settle_phrase(1500.0, 0.05, 3.0) in text
    assert "about 25 more minutes (--max-time 30m) or a 5% margin (--margin 5%) would settle it" in text
    assert "tmpfs: its factor is not yet known within the target" in text
    at = stop_note("sqlite-tpcb", 9, 0.05, Hopeless(("xfs",), 40.0), WouldSettle("ext4", ("xfs",), None, 0.10), (),
                   3.0)
    assert "xfs against ext4: more time will not settle it, a 10% margin (--margin 10%) would" in at
    leaning = stop_note("sqlite-tpcb", 9, 0.05, Hopeless(("ext4",), 40.0),
                        WouldSettle("xfs", ("ext4",), 900.0, 0.25, "ext4"), (), 3.0)
    assert ("ext4 against xfs: about 15 more minutes (--max-time 20m) or a 25% margin (--margin 25%, in favour of "
            "ext4) would settle it") in leaning


def test_the_stop_note_and_the_answer_give_one_figure():
    """The race stops on its own level (1%), but says what the answer (at 5%) will say on the same slices: the
    figure at the race's level was a different one."""
    f, _ = _decided({"base": 0.0, "copy": math.log(1.03)}, seed=5, image_sd=0.0, slice_sd=0.03, drift=0.02,
                    rounds=MIN_ROUNDS + 4)
    race_level = decide(f, ["base", "copy"], [], "base", margin=0.05, alpha=RACE_ALPHA)
    answer_level = decide(f, ["base", "copy"], [], "base", margin=0.05, alpha=ALPHA)
    stop = cannot_settle(f, race_level, "base", 0.05, 0.1, 60.0, 1.0, MIN_ROUNDS + 4, RACE_ALPHA)
    if stop is None or answer_level.settled:
        pytest.skip("this draw settles or goes on")
    said = would_settle(f, answer_level, 60.0, ["base", "copy"])
    text = stop_note("w", MIN_ROUNDS + 4, 0.05, stop, said, answer_level.pending, 1.0)
    assert settle_phrase(said.more_s, said.wider, 1.0) in text
    at_race_level = settle_margin("copy", contrast(f, "copy", "base"), 0.05, 60.0, RACE_ALPHA)
    assert at_race_level is not None and at_race_level.more_s != said.more_s


def test_time_cannot_narrow_the_run_to_run_floor():
    # +3% at a 5% margin, the run's own standard error tiny: without a floor, time settles it; with a floor that
    # alone reaches the edge, no amount of time is likely to
    plain = settle_margin("xfs", Contrast(math.log(1.03), 0.012, math.inf), 0.05, 600.0, 0.05)
    floored = settle_margin("xfs", Contrast(math.log(1.03), 0.013, math.inf, floor=0.012**2), 0.05, 600.0, 0.05)
    assert plain is not None and plain.more_s is not None and plain.more_s > 0
    assert floored is not None and floored.more_s is None and floored.at_margin
    # a floor that leaves room: the time to settle is longer than without it
    some = settle_margin("xfs", Contrast(math.log(1.02), 0.02, math.inf, floor=0.005**2), 0.05, 600.0, 0.05)
    none = settle_margin("xfs", Contrast(math.log(1.02), 0.02, math.inf), 0.05, 600.0, 0.05)
    assert some is not None and none is not None and some.more_s is not None and none.more_s is not None
    assert some.more_s > none.more_s
    assert math.isinf(hopeful_more_s(Contrast(math.log(1.045), 0.015, math.inf, floor=0.014**2), 0.05, 600.0, 0.05))


def test_a_margin_is_said_with_its_article():
    """'or a 85% margin (--margin 85%) would settle it' (a real run's note and answer): 'an 85% margin'."""
    from pickfs.analysis.margin import a_percent

    assert "or an 85% margin (--margin 85%) would settle it" in settle_phrase(60.0, 0.85, 1.0)
    assert "a 30% margin" in settle_phrase(60.0, 0.30, 1.0)
    assert [a_percent(x) for x in (0.05, 0.08, 0.11, 0.18, 0.8, 0.81, 1.0, 0.1, 0.17, 1.1, 8.0)] == [
        "a 5%", "an 8%", "an 11%", "an 18%", "an 80%", "an 81%", "a 100%", "a 10%", "a 17%", "a 110%", "an 800%"]


def test_a_wider_margin_is_the_number_a_person_types():
    """The JSON's would_settle.margin read 0.30000000000000004 (six steps of 5% in floating point)."""
    from pickfs.analysis.margin import round_margin

    assert round_margin(0.26) == 0.3 and round_margin(0.84) == 0.85 and round_margin(0.01) == 0.05
    assert str(round_margin(0.26)) == "0.3"


def test_what_would_settle_a_contender_agrees_with_its_interval():
    """'xfs about 1.12x [1.05x to 1.18x], at your 5% margin: no amount of time is likely to settle it, a 15% margin
    would' (a real default job): the decision among five candidates rules the preferred out on a lower bound at
    5%/4, so xfs was open while its 95% bound cleared the margin; what would settle it must read the same bound:
    more time (its estimate is far from the margin), or a margin over its upper end (20%, not 15%)."""
    c = Contrast(math.log(1.12), 0.03, math.inf, floor=2 * 0.01**2)
    assert c.bound(ALPHA, upper=False) > math.log(1.05)  # its printed interval lies above the margin
    assert settle_margin("xfs", c, 0.05, 540.0, ALPHA) is None  # read at 95%, as before: nothing to settle
    low = decision_alpha(ALPHA, 5)
    assert low == pytest.approx(ALPHA / 4)
    s = settle_margin("xfs", c, 0.05, 540.0, ALPHA, low)
    assert s is not None and not s.at_margin and s.more_s is not None and 0 < s.more_s < 540
    assert s.wider is not None and s.wider >= math.exp(c.bound(ALPHA, upper=True)) - 1
    said = settle_phrase(s.more_s, s.wider, 9.0)
    assert said.startswith("about a minute more (--max-time 15m)") and "a 20% margin" in said, said
    # time still narrows toward the estimate: the lower bound at the decision's level, then, clears the margin
    assert more_time(c, float(sps.norm.ppf(1 - low)), abs(c.est - math.log(1.05)), 540.0) == pytest.approx(s.more_s)


def test_more_time_that_will_not_settle_it_is_said_plainly():
    assert settle_phrase(None, 0.15, 9.0) == "more time will not settle it, a 15% margin (--margin 15%) would"
    assert settle_phrase(600.0, 0.10, 9.0, " of quiet slices") == (
        "about 10 more minutes of quiet slices (--max-time 20m) or a 10% margin (--margin 10%) would settle it")


Q = Q95 * (1 + math.sqrt(2))  # the decision's bound and a rerun's move, in standard errors (one-sided 95%, df inf)
EDGE = math.log(1.05)


def test_close_to_the_margin_at_its_edges():
    """Within the margin or open at it: close when the upper bound moved by what a rerun may move the estimate (q
    sqrt(2) standard errors) reaches the edge, q (1 + sqrt(2)) standard errors in all; just short of it, not."""
    se = 0.012
    at = EDGE - Q * se
    assert close_to_margin(Contrast(at + 1e-6, se, math.inf), 0.05, ALPHA, ALPHA, out=False)
    assert not close_to_margin(Contrast(at - 1e-6, se, math.inf), 0.05, ALPHA, ALPHA, out=False)
    # a more preferred configuration that is out (log(contender / preferred) below -edge): mirrored
    assert close_to_margin(Contrast(-EDGE - Q * se + 1e-6, se, math.inf), 0.05, ALPHA, ALPHA, out=True)
    assert not close_to_margin(Contrast(-EDGE - Q * se - 1e-6, se, math.inf), 0.05, ALPHA, ALPHA, out=True)
    # ruled out among more candidates, at the decision's (Bonferroni) level: its bound reaches further
    far = -EDGE - Q * se - 0.005
    assert not close_to_margin(Contrast(far, se, math.inf), 0.05, ALPHA, ALPHA, out=True)
    assert close_to_margin(Contrast(far, se, math.inf), 0.05, ALPHA, decision_alpha(ALPHA, 5), out=True)


def test_the_interval_widened_by_the_run_to_run_term_alone_would_not_do():
    """'use xfs: about 1.11x ext4 [1.06x to 1.17x]' at a 5% margin: a rerun as precise prefers ext4 nearly half the
    time, yet the interval widened by a rerun's own run-to-run term (1.4% on a comparison) clears 1.05x; the rule
    says it is close."""
    se = (math.log(1.17) - math.log(1.06)) / 2 / Q95
    c = Contrast(-math.log(1.11), se, math.inf, floor=2 * 0.01**2)  # ext4 against the preferred xfs: out
    # premises of the case, arithmetic on its own figures: the interval widened by the floor alone clears the
    # edge (the old rule: not close), and a rerun as precise prefers ext4 over 40% of the time
    widened = math.sqrt(se**2 + c.floor)
    assert math.log(1.11) - Q95 * widened > EDGE
    rerun_prefers_ext4 = sps.norm.cdf((EDGE + Q95 * se - math.log(1.11)) / (math.sqrt(2) * se))
    assert rerun_prefers_ext4 > 0.4
    assert close_to_margin(c, 0.05, ALPHA, ALPHA, out=True)


def test_an_a_a_copy_near_one_does_not_keep_an_unsettled_race_going():
    """A stored A/A run after round 10 (356 s measured, 96 s of its budget left): the A/A copy against ext4 at
    0.97x with a standard error of 7.7%. Read with a whole standard error in its favour it needed 186 s, under
    twice the time left, and kept the race going until it ran out of budget; at the hopeful reading now it needs
    more, and the stop fires."""
    copy = Contrast(-0.0348, 0.0771, 18.29, floor=0.0002)
    left = 96.0
    with mock.patch.object(margin, "HOPEFUL_SE", 1.0):
        assert hopeful_more_s(copy, 0.05, 356.0, RACE_ALPHA) <= STOP_FACTOR * left
    assert hopeful_more_s(copy, 0.05, 356.0, RACE_ALPHA) > STOP_FACTOR * left


def _fit(levels: dict[str, float], var: float = 4e-4) -> Fit:
    spreads = {n: Spread(level, var, 20.0, 4, 40, None) for n, level in levels.items()}
    return Fit({}, {}, spreads, (), 0.02, 0.01, (), (), {}, True)


def test_an_unsettled_race_leans_past_a_candidate_a_third_one_beats():
    """ext4 1.00, xfs 1.04, xfs-tuned 1.062 at a 5% margin, all open: on the estimates xfs-tuned beats ext4 by more
    than the margin and xfs is within the margin of xfs-tuned, so the race leans to xfs; what settles ext4 is
    xfs-tuned's lead over it (its rival), not xfs's."""
    from pickfs.analysis.margin import lower_alpha, open_settlings, preferred_of

    order = ["ext4", "xfs", "xfs-tuned"]
    f = _fit({"ext4": 0.0, "xfs": math.log(1.04), "xfs-tuned": math.log(1.062)})
    d = decide(f, order, [], "ext4", margin=0.05)
    assert not d.settled and d.answer == "ext4"
    assert leaning(f, order, 0.05) == preferred_of(f, d, order) == "xfs"
    opened = {s.name: s for s in open_settlings(f, d, order, 600.0, lower_alpha(f, d, order))}
    assert opened["ext4"].rival == "xfs-tuned"
    said = would_settle(f, d, 600.0, order)
    assert (said.preferred, said.widened_for) == ("xfs", "ext4")
    # a wider margin settles the decision on its own answer, ext4
    assert said.wider is not None and decide(f, order, [], "ext4", margin=said.wider).answer == "ext4"


def test_a_settled_race_prefers_its_answer_whatever_it_leans_to():
    """Over random fits of 2 to 4 candidates: whenever the decision settles, the configuration preferred is its answer
    (the leaning never contradicts a settled decision), and the leaning is never a candidate that is out."""
    import random

    from pickfs.analysis.margin import preferred_of

    rng = random.Random(1)
    settled = 0
    for _ in range(3000):
        names = [f"c{i}" for i in range(rng.choice([2, 3, 4]))]
        f = _fit({n: rng.gauss(0, 0.06) for n in names}, rng.choice([1e-5, 1e-4, 4e-4, 1e-3]))
        d = decide(f, names, [], "c0", margin=0.05)
        leans = leaning(f, names, 0.05)
        assert leans is not None and leans not in dict(d.out)
        if d.settled:
            settled += 1
            assert preferred_of(f, d, names) == d.answer == leans
    assert settled > 500
