"""A crash test's verdict when no state lost or damaged anything, in words that say what the sample rules out (pure).

Never "safe": "none lost in 1,240 distinct states: a loss in 1 state of 138 or more would have shown with 95%
confidence, counting the 413 cut at random moments". The bound (stats/crashbound.py, the
exact binomial) counts only the distinct states cut at random moments; the states chosen where damage is likeliest
and the duplicates are in the count of states, never in the bound. A test stored before states were told apart
(no distinct count) says only how many it tried. A test that lost something says, after its counts, the loss rate
per power cut its random states show, with the exact 95% interval (`rate_verdict`). The report's words on the
bound (report/crash_text.py) read the sample and say its figures in the clauses here.
"""

from __future__ import annotations

from collections.abc import Mapping

from pickfs.stats.crashbound import Bound, bound


def drawn_bound(metrics: Mapping[str, float]) -> Bound | None:
    """The bound the distinct states cut at random moments give; None for a test stored before states were drawn."""
    drawn = int(metrics.get("crash_drawn_states", 0))
    return bound(int(metrics.get("crash_drawn_failed", 0)), drawn) if drawn else None


def ruled_out(b: Bound) -> str:
    """What a sample that lost nothing rules out."""
    return f"a loss in 1 state of {b.rules_out_one_in:,} or more would have shown with 95% confidence"


def loss_rate(b: Bound) -> str:
    """The loss rate per power cut a sample that lost something shows."""
    return f"a loss rate per power cut between {b.low:.2%} and {b.high:.2%} (95%, exact binomial)"


def clean_verdict(metrics: Mapping[str, float]) -> str:
    """The verdict of a crash test in which no state lost or damaged anything, from its metrics."""
    tried = int(metrics.get("crash_states", 0))
    if "crash_distinct_states" not in metrics:  # stored before duplicates were told apart
        return f"none lost in {tried:,} states"
    distinct = int(metrics["crash_distinct_states"])
    drawn = int(metrics.get("crash_drawn_states", 0))
    said = f"none lost in {distinct:,} distinct states"
    if distinct != tried:
        said += f" ({tried:,} tried)"
    if not drawn:
        return f"{said}: none was cut at a random moment, so the sample rules out no loss rate"
    return f"{said}: {ruled_out(bound(0, drawn))}, counting the {drawn:,} cut at random moments"


def unexercised_verdict(metrics: Mapping[str, float], gaps: tuple[str, ...]) -> str:
    """No state lost anything, but the model could not exercise the risk of some settings: no verdict on those."""
    tried = int(metrics.get("crash_states", 0))
    distinct = metrics.get("crash_distinct_states")
    states = f"{int(distinct):,} distinct states" if distinct is not None else f"{tried:,} states"
    return (f"none lost in {states}, but this model could not exercise "
            f"{', '.join(g.split(':', 1)[0] for g in gaps)}: no verdict on it")


def rate_verdict(metrics: Mapping[str, float]) -> str:
    """What the distinct states cut at random moments say of the loss rate per power cut, for a verdict that lost
    something: the exact 95% interval, or the bound when only targeted states failed; "" for a test stored before
    states were drawn."""
    b = drawn_bound(metrics)
    if b is None:
        return ""
    if b.failed:
        return f"{loss_rate(b)}, from the {b.failed:,} of {b.n:,} cut at random moments"
    return (f"the {b.n:,} cut at random moments lost or damaged nothing, so the loss rate per power cut is under "
            f"1 in {b.rules_out_one_in:,} (95%); the failures were in states chosen where damage is likeliest")
