"""A workload's answer (pure): the configuration its judge names, whichever way it was measured."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from pickfs.analysis.margin import (
    Settling,
    by_name,
    close_to_margin,
    lower_alpha,
    most_needed,
    would_settle_each,
)
from pickfs.analysis.setup import Setup, setup_of
from pickfs.analysis.views import WorkloadView, final_roles
from pickfs.stats.decision import ALPHA, contrast
from pickfs.stats.weather import Fit


def recommended(view: WorkloadView) -> str | None:
    """The name of the configuration the recommendation names, if any (none from a race that could not
    decide)."""
    if view.latency is not None:  # at a fixed rate: by latency (analysis/latency.py)
        return view.latency.answer if view.latency.settled else None
    if view.race is not None:
        d = view.race.decision
        return d.answer if d.settled else None
    return view.choice.chosen.cell.config.name if view.choice else None


# The answer's intervals: each contender against the preferred configuration, bounded as the margin's test bounds
# it (a one-sided 95% bound each side: a 90% interval), so that 'within the margin' is exactly an upper end at or
# under 1 + the margin. The table's intervals are another family (each against the baseline, simultaneous 95%).
ANSWER_LEVEL = 1 - 2 * ALPHA
ANSWER_FAMILY = "one-sided 95% bounds"  # as the margin is tested


def recommended_setup(view: WorkloadView) -> Setup | None:
    """The recommended configuration as a setup to apply (None: nothing recommended): the mkfs command, the fstab
    line, the scheduler rule and, for a database, its settings as measured."""
    name = recommended(view)
    row = next((r for r in view.rows if r.cell.config.name == name), None)
    if row is None:
        return None
    spec = row.cell.workload if view.commits else replace(row.cell.workload, settings=())
    return setup_of(row.cell.config, spec, view.database)


@dataclass(frozen=True)
class Contender:
    """A safe configuration against the preferred one: its speed factor (contender / preferred) with its interval
    at ANSWER_LEVEL, and where it stands: 'within' the margin (settled: the preferred stays), 'at' the margin (not
    settled), 'out' (slower than another by more than the margin). `close_to_margin`: a rerun as precise as this
    run may decide the pair otherwise (analysis/margin.py `close_to_margin`): one open at the margin always, one
    within it when a rerun may leave it open, a more preferred one that is out when a rerun may prefer it; never a
    less preferred one that is out (a rerun that keeps it in still prefers the same). `settling`: what would
    settle one open at the margin (None: settled)."""

    name: str
    factor: float
    low: float
    high: float
    standing: str
    close_to_margin: bool = False
    settling: Settling | None = None


@dataclass(frozen=True)
class Check:
    """A copy of a configuration (the same setup measured again under another name: an A/A check) against its
    original: the speed factor (copy / original) with its 95% interval, the table's (simultaneous) when the original
    is the baseline, else this pair's alone; `different`: the interval excludes 1, the method called one setup two
    speeds. A copy gets no call of its own at the margin: its original's is the setup's."""

    name: str
    original: str
    factor: float
    low: float
    high: float
    different: bool
    simultaneous: bool


@dataclass(frozen=True)
class Finding:
    """A race's answer as one finding, settled or not: the preferred configuration (the first candidate in the
    decision's order that is not out), every safe contender's factor against it, and, when unsettled, what would
    settle it: more time at the current rate (None: at the margin, more time will not) or a wider margin. `over`:
    the more preferred configurations that are out (the preferred is faster than them by more than the margin).
    `quiet`: decided on a disturbed run's quiet slices alone (its minutes and projections count those). `checks`: each
    copy of a configuration (an A/A check) against its original, beside the finding and never in it."""

    preferred: str
    settled: bool
    margin: float
    contenders: tuple[Contender, ...]
    more_s: float | None
    wider: float | None
    over: tuple[str, ...] = ()
    quiet: bool = False
    checks: tuple[Check, ...] = ()


def checks(view: WorkloadView) -> tuple[Check, ...]:
    """Every copy in a race against its original (pure; () when not a race or no copy)."""
    if view.race is None:
        return ()
    out = []
    for name, original in final_roles(view).copies:
        row = next((r for r in view.rows if r.cell.config.name == name), None)
        c = row.comparison if row is not None and original == view.baseline else None
        if row is not None and c is not None:
            ratio, lo, hi = ((c.ratio, c.ci_low, c.ci_high) if row.primary.metric.higher_is_better
                             else (1 / c.ratio, 1 / c.ci_high, 1 / c.ci_low))
            out.append(Check(name, original, ratio, lo, hi, lo > 1 or hi < 1, True))
            continue
        con = contrast(view.race.fit, name, original)
        if con is not None:
            lo, hi = con.interval(1 - ALPHA)
            out.append(Check(name, original, math.exp(con.est), math.exp(lo), math.exp(hi), lo > 0 or hi < 0, False))
    return tuple(out)


def _contender(fit: Fit, name: str, preferred: str, standing: str, low_alpha: float, more_preferred: bool,
               settling: Settling | None, margin: float) -> Contender | None:
    c = contrast(fit, name, preferred)
    if c is None:
        return None
    lo, hi = c.interval(ANSWER_LEVEL)
    close = (standing != "out" or more_preferred) and close_to_margin(c, margin, ALPHA, low_alpha, standing == "out")
    return Contender(name, math.exp(c.est), math.exp(lo), math.exp(hi), standing, close or standing == "at",
                     settling)


def finding(view: WorkloadView) -> Finding | None:
    """The race's finding (None: not a race, or no safe configuration to prefer)."""
    race = view.race
    preferred = race.decision.answer if race is not None else None
    if race is None or preferred is None:
        return None
    d = race.decision
    roles = final_roles(view)
    order = roles.candidates
    copied = dict(roles.copies)  # a copy is a check, never a contender
    safe = {r.cell.config.name for r in view.rows if not r.unsafe and r.cell.config.name not in copied}
    more_preferred = set(order[:order.index(preferred)]) if preferred in order else set()
    low_alpha = lower_alpha(race.fit, d, order)
    settlings = by_name(would_settle_each(race.fit, d, race.minutes * 60, low_alpha))  # as the race's stop note
    listed = ([(n, "within") for n, _ in d.decided if n in safe] + [(n, "at") for n in d.undecided]
              + [(n, "out") for n, _ in d.out])
    contenders = tuple(c for n, s in listed if (c := _contender(race.fit, n, preferred, s, low_alpha,
                                                                n in more_preferred, settlings.get(n),
                                                                d.margin)) is not None)
    over = tuple(n for n, _ in d.out if n in more_preferred)
    if d.settled:
        return Finding(preferred, True, d.margin, contenders, None, None, over, race.quiet, checks(view))
    more, wider = most_needed(list(settlings.values()))
    return Finding(preferred, False, d.margin, contenders, more, wider, over, race.quiet, checks(view))


def answer_words(view: WorkloadView) -> str:
    """A workload's answer in a few words, as `pickfs compare` and `pickfs results` say it: the configuration
    recommended, or the one a race prefers unsettled ('none (ext4 preferred, not settled)'), or 'none'."""
    named = recommended(view)
    if named is not None:
        return named
    found = finding(view) if view.race is not None else None
    return f"none ({found.preferred} preferred, not settled)" if found is not None else "none"
