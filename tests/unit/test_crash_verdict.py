"""A clean crash verdict says what its sample rules out, counting only the distinct states cut at random moments,
and never 'safe' (the table's cell and the JSON verdict read it from CrashView.verdict)."""

import re

from pickfs.analysis.crash_verdict import clean_verdict
from pickfs.analysis.views import CrashView


def metrics(tried, distinct=None, drawn=None):
    m = {"crash_states": float(tried)}
    if distinct is not None:
        m["crash_distinct_states"] = float(distinct)
    if drawn is not None:
        m["crash_drawn_states"] = float(drawn)
    return m


def test_none_lost_states_what_the_random_states_rule_out_and_counts_only_them():
    said = CrashView(metrics(1500, 1240, 413)).verdict()
    # 1 - 0.05^(1/413) = 1/138.4: the bound counts the 413 states cut at random moments, not the 1,240
    assert said == ("none lost in 1,240 distinct states (1,500 tried): a loss in 1 state of 138 or more would have "
                    "shown with 95% confidence, counting the 413 cut at random moments")
    assert CrashView(metrics(1500, 1240, 413)).short() == said  # the table's cell
    assert clean_verdict(metrics(40, 40, 40)) == ("none lost in 40 distinct states: a loss in 1 state of 13 or more "
                                                  "would have shown with 95% confidence, counting the 40 cut at random "
                                                  "moments")
    for m in (metrics(1500, 1240, 413), metrics(3, 3, 0), metrics(12)):
        assert not re.search(r"\bsafe\b", CrashView(m).verdict())


def test_no_random_state_rules_nothing_out_and_a_test_stored_before_distinct_states_says_only_its_count():
    assert clean_verdict(metrics(3, 3, 0)) == ("none lost in 3 distinct states: none was cut at a random moment, so "
                                               "the sample rules out no loss rate")
    assert CrashView(metrics(12)).verdict() == "none lost in 12 states"
    gaps = ("full_page_writes=off: its risk is a torn 8 KiB page",)
    assert CrashView(metrics(12, 10, 4), gaps=gaps).verdict() == (
        "none lost in 10 distinct states, but this model could not exercise full_page_writes=off: no verdict on it")


def test_a_loss_is_still_told_as_a_loss():
    m = {**metrics(40, 40, 13), "crash_states_lost": 2.0, "crash_max_lost": 7.0, "crash_max_lost_s": 0.01}
    assert CrashView(m).verdict().startswith("lost acknowledged commits in 2 of 40 states")


def test_a_loss_states_the_rate_its_random_states_show_with_its_interval():
    m = {**metrics(40, 40, 13), "crash_states_lost": 2.0, "crash_max_lost": 7.0, "crash_max_lost_s": 0.01,
         "crash_drawn_failed": 2.0}
    said = CrashView(m).verdict()
    # 2 of 13: the exact two-sided 95% interval is 1.92% to 45.45%
    assert said == ("lost acknowledged commits in 2 of 40 states (at most 7, 0.01 s of work): a loss rate per power "
                    "cut between 1.92% and 45.45% (95%, exact binomial), from the 2 of 13 cut at random moments")
    # only targeted states failed: the random ones still bound the rate
    m["crash_drawn_failed"] = 0.0
    assert CrashView(m).verdict().endswith(
        ": the 13 cut at random moments lost or damaged nothing, so the loss rate per power cut is under 1 in 4 (95%); "
        "the failures were in states chosen where damage is likeliest")
    # a test stored before states were drawn: its counts only
    old = {"crash_states": 4.0, "crash_states_lost": 3.0, "crash_max_lost": 9.0, "crash_max_lost_s": 1.5}
    assert CrashView(old).verdict() == "lost acknowledged commits in 3 of 4 states (at most 9, 1.50 s of work)"
