"""What would settle a race's comparison at the margin (pure), and whether the race can settle in its budget.

A contender is settled against the preferred configuration when its one-sided bound of log(contender /
preferred) clears the margin's edge: its upper bound at or under it (within the margin: the preferred stays),
or its lower bound over it (faster by more than the margin: the preferred is out). While the interval straddles
the edge, two things would settle it:
- more time: the interval's half-width narrows about as 1 / sqrt(slices), so about as 1 / sqrt(time measured).
  At the current estimate, the half-width must shrink to the estimate's distance from the edge; the time that
  takes is the time so far times (half-width / distance)^2. An estimate AT THE MARGIN (within a standard error
  of the edge and within AT_MARGIN of the margin, e.g. 4% to 6% at a 5% margin) is as likely to land on either
  side of the edge: no amount of time is likely to settle it;
- a wider margin: the smallest round margin (a multiple of 5%) at or over the upper bound settles it now.

A non-candidate (a setting that can lose data, a reference) is settled when its factor is known within the
plan's target: the time that takes is the time so far times (half-width / target)^2.

The race stops early (engine/race.py) when every comparison still open needs, at the most hopeful reading, more
than STOP_FACTOR times the budget left: the hopeful reading takes the true difference a standard error further
from the edge than the estimate, so that an early, noisy estimate near the edge does not stop a race that
could settle.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy import stats as sps

from pickfs.stats.decision import Contrast, Decision, contrast
from pickfs.stats.weather import Fit

ROUND_MARGIN = 0.05  # a wider margin is said as a multiple of this
STOP_FACTOR = 2.0  # the race stops when every open comparison needs more than this times the budget left
MIN_ROUNDS = 6  # rounds before a race projects (the variance must be stable)
AT_MARGIN = 0.2  # an estimate within this share of the margin from it (and a standard error) is at the margin
MIN_DF = 3.0  # degrees of freedom of a comparison before it is projected


@dataclass(frozen=True)
class Settling:
    """What would settle an open comparison: `more_s` more seconds at the current rate (None: at the margin, no
    amount of time is likely to), or the wider margin that settles it now (None for a non-candidate)."""

    name: str
    more_s: float | None
    wider: float | None
    at_margin: bool


def _q(c: Contrast, alpha: float) -> float:
    return float(sps.t.ppf(1 - alpha, c.df)) if math.isfinite(c.df) else float(sps.norm.ppf(1 - alpha))


def margin_words(margin: float) -> str:
    """'5%', '0.5%': a margin as a person typed it."""
    return f"{margin:.0%}" if abs(margin * 100 - round(margin * 100)) < 1e-9 else f"{margin:.1%}"


def round_margin(x: float, step: float = ROUND_MARGIN) -> float:
    """The smallest multiple of `step` at or over x (a margin a person would type)."""
    return step * max(1, math.ceil(x / step - 1e-9))


def settle_margin(name: str, c: Contrast, margin: float, elapsed_s: float, alpha: float) -> Settling | None:
    """What would settle contender `name` against the preferred (`c`: log(contender / preferred)) at `margin`,
    after `elapsed_s` seconds of measuring; None when it is settled already."""
    edge = math.log1p(margin)
    half = _q(c, alpha) * c.se
    if c.est + half <= edge or c.est - half > edge:
        return None
    wider = round_margin(math.expm1(c.est + half))
    wider = wider if wider > margin else round_margin(margin + ROUND_MARGIN)
    distance = abs(c.est - edge)
    if distance <= min(c.se, AT_MARGIN * edge):
        return Settling(name, None, wider, True)
    return Settling(name, elapsed_s * max((half / distance) ** 2 - 1, 0.0), wider, False)


def settle_target(name: str, c: Contrast, target: float, elapsed_s: float, alpha: float) -> Settling | None:
    """What would know a non-candidate's factor within `target` (a 1 - alpha two-sided half-width); None: known."""
    half = _q(c, alpha / 2) * c.se
    goal = math.log1p(target)
    if half <= goal:
        return None
    return Settling(name, elapsed_s * ((half / goal) ** 2 - 1), None, False)


def hopeful_more_s(c: Contrast, margin: float, elapsed_s: float, alpha: float) -> float:
    """The fewest more seconds a contender could plausibly need: as `settle_margin`, with the true difference a
    standard error further from the edge than its estimate (how a race avoids stopping on early noise)."""
    edge = math.log1p(margin)
    half = _q(c, alpha) * c.se
    if c.est + half <= edge or c.est - half > edge:
        return 0.0
    distance = abs(c.est - edge) + c.se
    return elapsed_s * max((half / distance) ** 2 - 1, 0.0)


def open_comparisons(fit: Fit, decision: Decision, reference: str | None, margin: float, target: float,
                     elapsed_s: float, alpha: float) -> tuple[Settling, ...]:
    """What would settle each comparison still open: every undecided contender against the preferred (the
    decision's answer), every pending non-candidate's factor against `reference`."""
    out = []
    for name in decision.undecided:
        c = contrast(fit, name, decision.answer) if decision.answer else None
        s = settle_margin(name, c, margin, elapsed_s, alpha) if c is not None else None
        if s is not None:
            out.append(s)
    for name in decision.pending:
        c = contrast(fit, name, reference) if reference and reference != name else None
        s = settle_target(name, c, target, elapsed_s, alpha) if c is not None else None
        if s is not None:
            out.append(s)
    return tuple(out)


@dataclass(frozen=True)
class Hopeless:
    """Why a race stops before its budget: each open comparison and the more seconds it would need."""

    needs: tuple[tuple[str, float | None], ...]  # name, more seconds at the current estimate (None: at the margin)
    left_s: float


def cannot_settle(fit: Fit, decision: Decision, reference: str | None, margin: float, target: float,
                  elapsed_s: float, left_s: float, rounds: int, alpha: float) -> Hopeless | None:
    """Whether the race cannot settle in the `left_s` seconds its budget has left: after MIN_ROUNDS rounds, every
    open comparison (with MIN_DF degrees of freedom) needs, at its most hopeful reading, more than STOP_FACTOR
    times the time left. None: it may settle, or it is too early to tell."""
    if rounds < MIN_ROUNDS or decision.done or elapsed_s <= 0:
        return None
    pairs: list[tuple[str, Contrast, bool]] = []
    for name in decision.undecided:
        c = contrast(fit, name, decision.answer) if decision.answer else None
        if c is None:
            return None
        pairs.append((name, c, True))
    for name in decision.pending:
        c = contrast(fit, name, reference) if reference and reference != name else None
        if c is None:
            return None
        pairs.append((name, c, False))
    if not pairs:
        return None
    needs: list[tuple[str, float | None]] = []
    for name, c, candidate in pairs:
        if c.df < MIN_DF:
            return None
        if candidate:
            hopeful = hopeful_more_s(c, margin, elapsed_s, alpha)
            said = settle_margin(name, c, margin, elapsed_s, alpha)
        else:
            said = settle_target(name, c, target, elapsed_s, alpha)
            hopeful = (said.more_s or 0.0) if said is not None else 0.0
        if hopeful <= STOP_FACTOR * left_s:
            return None
        needs.append((name, said.more_s if said is not None else 0.0))
    return Hopeless(tuple(needs), left_s)


def most_needed(settlings: Sequence[Settling]) -> tuple[float | None, float | None]:
    """(more seconds, wider margin) that would settle every one of them: None seconds when one is at the
    margin."""
    if not settlings:
        return 0.0, None
    more = [s.more_s for s in settlings]
    time_s = None if any(m is None for m in more) else max(m for m in more if m is not None)
    wider = [s.wider for s in settlings if s.wider is not None]
    return time_s, (max(wider) if wider else None)


def by_name(settlings: Sequence[Settling]) -> Mapping[str, Settling]:
    return {s.name: s for s in settlings}
