"""A workload's answer (pure): the configuration its judge names, whichever way it was measured."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pickfs.analysis.margin import would_settle
from pickfs.analysis.views import WorkloadView
from pickfs.stats.decision import contrast
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


@dataclass(frozen=True)
class Contender:
    """A safe configuration against the preferred one: its speed factor (contender / preferred) with its 95%
    interval, and where it stands: 'within' the margin (settled: the preferred stays), 'at' the margin (not
    settled), 'out' (slower than another by more than the margin)."""

    name: str
    factor: float
    low: float
    high: float
    standing: str


@dataclass(frozen=True)
class Finding:
    """A race's answer as one finding, settled or not: the preferred configuration (the first candidate in the
    decision's order that is not out), every safe contender's factor against it, and, when unsettled, what would
    settle it: more time at the current rate (None: at the margin, no amount of time is likely to) or a wider
    margin."""

    preferred: str
    settled: bool
    margin: float
    contenders: tuple[Contender, ...]
    more_s: float | None
    wider: float | None


def _contender(fit: Fit, name: str, preferred: str, standing: str) -> Contender | None:
    c = contrast(fit, name, preferred)
    if c is None:
        return None
    lo, hi = c.interval(0.95)
    return Contender(name, math.exp(c.est), math.exp(lo), math.exp(hi), standing)


def finding(view: WorkloadView) -> Finding | None:
    """The race's finding (None: not a race, or no safe configuration to prefer)."""
    race = view.race
    preferred = race.decision.answer if race is not None else None
    if race is None or preferred is None:
        return None
    d = race.decision
    safe = {r.cell.config.name for r in view.rows if not r.unsafe}
    listed = ([(n, "within") for n, _ in d.decided if n in safe] + [(n, "at") for n in d.undecided]
              + [(n, "out") for n, _ in d.out])
    contenders = tuple(c for n, s in listed if (c := _contender(race.fit, n, preferred, s)) is not None)
    if d.settled:
        return Finding(preferred, True, d.margin, contenders, None, None)
    settle = would_settle(race.fit, d, race.minutes * 60)  # the figure the race's stop note gave
    return Finding(preferred, False, d.margin, contenders, settle.more_s, settle.wider)
