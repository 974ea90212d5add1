"""A crash test's verdict when no state lost or damaged anything, in words that say what the sample rules out (pure).

Never "safe": "none lost in 1,240 distinct states: a loss in 1 state of 138 or more would have shown with 95%
confidence, counting the 413 cut at random moments". The bound (stats/crashbound.py, the
exact binomial) counts only the distinct states cut at random moments; the states chosen where damage is likeliest
and the duplicates are in the count of states, never in the bound. A test stored before states were told apart
(no distinct count) says only how many it tried.
"""

from __future__ import annotations

from collections.abc import Mapping

from pickfs.stats.crashbound import bound


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
    b = bound(0, drawn)
    return (f"{said}: a loss in 1 state of {b.rules_out_one_in:,} or more would have shown with 95% confidence, "
            f"counting the {drawn:,} cut at random moments")


def unexercised_verdict(metrics: Mapping[str, float], gaps: tuple[str, ...]) -> str:
    """No state lost anything, but the model could not exercise the risk of some settings: no verdict on those."""
    tried = int(metrics.get("crash_states", 0))
    distinct = metrics.get("crash_distinct_states")
    states = f"{int(distinct):,} distinct states" if distinct is not None else f"{tried:,} states"
    return (f"none lost in {states}, but this model could not exercise "
            f"{', '.join(g.split(':', 1)[0] for g in gaps)}: no verdict on it")
