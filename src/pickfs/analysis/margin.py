"""What would settle a race's comparison at the margin (pure), and whether the race can settle in its budget.

A contender is settled against the preferred configuration when its one-sided bound of log(contender /
preferred) clears the margin's edge: its upper bound at or under it (within the margin: the preferred stays),
or its lower bound over it (faster by more than the margin: the preferred is out). While the interval straddles
the edge, two things would settle it:
- more time: the part of the interval's variance that this run measures narrows about as 1 / slices, so about
  as 1 / time measured; the part that moves from one run to the next (the plan's rerun_sd, `Contrast.floor`)
  does not narrow at all. At the current estimate, the half-width must shrink to the estimate's distance from
  the edge: q^2 (within x T / (T + more) + floor) = distance^2, T the time so far (with no floor: T times
  (half-width / distance)^2 in all). Where q^2 x floor alone reaches the distance, more time will not settle
  it; likewise an estimate AT THE MARGIN (within a standard error of the edge and within AT_MARGIN of
  the margin, e.g. 4% to 6% at a 5% margin), as likely to land on either side of the edge;
- a wider margin: the smallest round margin (a multiple of 5%) at or over the upper bound settles it now.
Each side is tested with the bound the decision tests it with (stats/decision.py): the upper at ALPHA, the lower
at ALPHA over the candidates still in it (Bonferroni: the preferred is out when another's lower bound clears the
edge), so that what would settle a contender agrees with where the decision leaves it.

A comparison is CLOSE TO THE MARGIN when a rerun as precise as this run may decide it otherwise: the bound that
decides it (the upper bound of a contender within the margin or open at it; for a more preferred configuration
that is out, its upper bound against the preferred at the decision's level) moved by what a rerun may move the
estimate (the one-sided 95% quantile times sqrt(2) standard errors: both runs' errors, each with its run-to-run
term) reaches the margin's edge (`close_to_margin`). A settled and an unsettled run of the same truth near the
margin both say so, and a rerun that prefers the other configuration is told of in advance.

A non-candidate (a setting that can lose data, a reference) is settled when its factor is known within the
plan's target as far as measuring narrows it (its run-to-run part left out): the same projection, with the target
in place of the distance.

The race stops early (engine/race.py) when every comparison still open needs, at the most hopeful reading, more
than STOP_FACTOR times the budget left: the hopeful reading takes the true difference half a standard error
(HOPEFUL_SE) further from the edge than the estimate, so that an early, noisy estimate near the edge does not stop a race that
could settle. That reading is the race's own, at its level (RACE_ALPHA); what the race then says it would need
is the answer's figure (`would_settle`, at ALPHA, on the same slices, given the race's candidates so that the
lower bound is the decision's), so that the run's note and its answer give the same figure when both read the same
slices (a disturbed run's answer, figured on its quiet slices alone, can give another).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from scipy import stats as sps

from pickfs.stats.decision import ALPHA, Contrast, Decision, contrast, decision_alpha, leaning
from pickfs.stats.weather import Fit

ROUND_MARGIN = 0.05  # a wider margin is said as a multiple of this
STOP_FACTOR = 2.0  # the race stops when every open comparison needs more than this times the budget left
MIN_ROUNDS = 6  # rounds before a race projects (the variance must be stable)
AT_MARGIN = 0.2  # an estimate within this share of the margin from it (and a standard error) is at the margin
MIN_DF = 3.0  # degrees of freedom of a comparison before it is projected
# The hopeful reading of the early stop takes the true difference this many standard errors further from the edge
# than its estimate. A whole one let an A/A copy (about 1.00x, a standard error of 3%) read as settling at once round
# after round of a stored A/A run that never settled; half of one stopped that run 71 s earlier and no stored run that
# settled, and in simulated races (benchmarks/early_stop.py) it stops three times as many races that cannot settle,
# and 1 of 37 that would have settled within the budget.
HOPEFUL_SE = 0.5


@dataclass(frozen=True)
class Settling:
    """What would settle an open comparison: `more_s` more seconds at the current rate (None: no amount of time is
    likely to: at the margin, or the run-to-run term alone reaches it), or the wider margin that settles it now
    (None for a non-candidate). `rival`: for a more preferred candidate the race leans past, the configuration whose
    lead over it decides it ('' when that is the preferred one)."""

    name: str
    more_s: float | None
    wider: float | None
    at_margin: bool
    rival: str = ""  # the configuration that must put a more preferred one out, when not the preferred itself


def _q(c: Contrast, alpha: float) -> float:
    return float(sps.t.ppf(1 - alpha, c.df)) if math.isfinite(c.df) else float(sps.norm.ppf(1 - alpha))


def margin_words(margin: float) -> str:
    """'5%', '0.5%': a margin as a person typed it."""
    return f"{margin:.0%}" if abs(margin * 100 - round(margin * 100)) < 1e-9 else f"{margin:.1%}"


def a_percent(share: float) -> str:
    """A share as a percentage with its article, as a sentence reads it: 'a 5%', 'an 8%', 'an 11%', 'an 85%'."""
    said = f"{share:.0%}"
    spoken_with_a_vowel = said[0] == "8" or (said[:2] in ("11", "18") and len(said) in (3, 5))  # 11%, 18%, 18xx%
    return f"{'an' if spoken_with_a_vowel else 'a'} {said}"


def round_margin(x: float, step: float = ROUND_MARGIN) -> float:
    """The smallest multiple of `step` at or over x (a margin a person would type)."""
    return round(step * max(1, math.ceil(x / step - 1e-9)), 9)  # 0.3, not 0.30000000000000004


def more_time(c: Contrast, q: float, reach: float, elapsed_s: float) -> float:
    """The more seconds after `elapsed_s` until q standard errors of `c` come within `reach` (log scale), the part
    of its variance this run measures narrowing as 1 / time, its floor not at all; inf when the floor alone
    reaches it."""
    room = (reach / q) ** 2 - c.floor
    if room <= 0:
        return math.inf
    return elapsed_s * max(c.within / room - 1, 0.0)


def settle_margin(name: str, c: Contrast, margin: float, elapsed_s: float, alpha: float,
                  low_alpha: float | None = None) -> Settling | None:
    """What would settle contender `name` against the preferred (`c`: log(contender / preferred)) at `margin`,
    after `elapsed_s` seconds of measuring; None when it is settled already. Its upper bound is tested at `alpha`,
    its lower at `low_alpha` (the decision's, over the candidates; `alpha` when not given)."""
    edge = math.log1p(margin)
    q_up, q_low = _q(c, alpha), _q(c, alpha if low_alpha is None else low_alpha)
    if c.est + q_up * c.se <= edge or c.est - q_low * c.se > edge:
        return None
    wider = round_margin(math.expm1(c.est + q_up * c.se))
    wider = wider if wider > margin else round_margin(margin + ROUND_MARGIN)
    distance = abs(c.est - edge)
    if distance <= min(c.se, AT_MARGIN * edge):
        return Settling(name, None, wider, True)
    more = more_time(c, q_up if c.est < edge else q_low, distance, elapsed_s)
    return Settling(name, more if math.isfinite(more) else None, wider, not math.isfinite(more))


def close_to_margin(c: Contrast, margin: float, alpha: float, low_alpha: float, out: bool) -> bool:
    """Whether a rerun as precise as this run may decide contender and preferred (`c`: log(contender /
    preferred)) otherwise: the bound that decides the pair, moved by what a rerun may move the estimate
    (q sqrt(2) standard errors at `alpha`), reaches the edge. `out`: the contender, more preferred, is out (its
    upper bound at `low_alpha`, the decision's, must stay under -edge); else it is within the margin or open at
    it (its upper bound at `alpha` must stay at or under +edge)."""
    edge = math.log1p(margin)
    move = _q(c, alpha) * math.sqrt(2) * c.se
    if out:
        return c.est + _q(c, low_alpha) * c.se + move >= -edge
    return c.est + _q(c, alpha) * c.se + move >= edge


def settle_target(name: str, c: Contrast, target: float, elapsed_s: float, alpha: float) -> Settling | None:
    """What would know a non-candidate's factor within `target` (a 1 - alpha two-sided half-width, as far as
    measuring narrows it: its run-to-run part left out, as the decision leaves it out); None: known."""
    c = c.measured
    q = _q(c, alpha / 2)
    goal = math.log1p(target)
    if q * c.se <= goal:
        return None
    more = more_time(c, q, goal, elapsed_s)
    return Settling(name, more if math.isfinite(more) else None, None, False)


def hopeful_more_s(c: Contrast, margin: float, elapsed_s: float, alpha: float) -> float:
    """The fewest more seconds a contender could plausibly need: as `settle_margin`, with the true difference
    HOPEFUL_SE standard errors further from the edge than its estimate (how a race avoids stopping on early noise);
    inf when even then the run-to-run term alone reaches the edge."""
    edge = math.log1p(margin)
    q = _q(c, alpha)
    if c.est + q * c.se <= edge or c.est - q * c.se > edge:
        return 0.0
    return more_time(c, q, abs(c.est - edge) + HOPEFUL_SE * c.se, elapsed_s)


@dataclass(frozen=True)
class Hopeless:
    """Why a race stops before its budget: the comparisons its level leaves open, the seconds left."""

    open: tuple[str, ...]
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
    for name, c, candidate in pairs:
        if c.df < MIN_DF:
            return None
        if candidate:
            hopeful = hopeful_more_s(c, margin, elapsed_s, alpha)
        else:
            said = settle_target(name, c, target, elapsed_s, alpha)
            hopeful = (math.inf if said.more_s is None else said.more_s) if said is not None else 0.0
        if hopeful <= STOP_FACTOR * left_s:
            return None
    return Hopeless(tuple(name for name, _, _ in pairs), left_s)


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


@dataclass(frozen=True)
class WouldSettle:
    """What would settle a race's answer: the one figure its answer and its stop note give. `preferred`: the
    configuration the answer prefers (`preferred_of`); `contenders`: those still open against it; `widened_for`:
    the more preferred one a wider margin would then prefer ('' when none); `more_s`: more seconds at the current
    rate that would settle every one (None: no amount of time is likely to; 0.0 with no contender open); `wider`:
    the wider margin that settles them now."""

    preferred: str | None
    contenders: tuple[str, ...]
    more_s: float | None
    wider: float | None
    widened_for: str = ""


def alive(fit: Fit, decision: Decision, candidates: Sequence[str]) -> int:
    """How many of `candidates` (the race's safe ones) the decision still holds: measured and not out."""
    out = dict(decision.out)
    return sum(1 for c in candidates if c in fit.spreads and c not in out)


def lower_alpha(fit: Fit, decision: Decision, candidates: Sequence[str]) -> float:
    """The decision's level of its lower bounds among `candidates` (the race's safe ones) it still holds."""
    return decision_alpha(ALPHA, alive(fit, decision, candidates))


def preferred_of(fit: Fit, decision: Decision, candidates: Sequence[str]) -> str | None:
    """The configuration a race's answer prefers: the decision's answer when settled; else the one it leans to on
    the estimates alone (`stats/decision.leaning`). That one is never out: what the decision rules out is beaten on
    its estimate too, so the leaning drops it in its first round (the fallback only guards the invariant)."""
    if decision.settled or decision.answer is None:
        return decision.answer
    leans = leaning(fit, candidates, decision.margin)
    return leans if leans is not None and leans not in dict(decision.out) else decision.answer


def open_settlings(fit: Fit, decision: Decision, candidates: Sequence[str], elapsed_s: float,
                   low_alpha: float = ALPHA) -> tuple[Settling, ...]:
    """What would settle each candidate still open against the preferred configuration (`preferred_of`), each pair
    tested as the decision tests it, log(less preferred / more preferred): its upper bound at ALPHA, its lower at
    `low_alpha` (the decision's, `lower_alpha`). Open: a more preferred candidate that is not out, which the
    preferred stands over only once the fastest candidate still in (its `rival`: the one that leans past it) is
    faster than it by more than the margin; or a less preferred one that may still be faster than the preferred by
    more than the margin (its upper bound over the margin's edge). `candidates` in order of preference."""
    preferred = preferred_of(fit, decision, candidates)
    if preferred is None:
        return ()
    out, edge = dict(decision.out), math.log1p(decision.margin)
    alive = [n for n in candidates if n in fit.spreads and n not in out]
    fastest = max(alive, key=lambda n: fit.spreads[n].level) if alive else preferred
    before = set(candidates[:candidates.index(preferred)]) if preferred in candidates else set()
    said = []
    for name in alive:
        if name == preferred:
            continue
        rival = fastest if name in before and fastest != name else preferred
        c = contrast(fit, rival, name) if name in before else contrast(fit, name, preferred)
        if c is None or (name not in before and c.bound(ALPHA, upper=True) <= edge):
            continue
        s = settle_margin(name, c, decision.margin, elapsed_s, ALPHA, low_alpha)
        if s is not None:
            said.append(replace(s, rival="" if rival == preferred else rival))
    return tuple(said)


def wider_for_answer(fit: Fit, decision: Decision, elapsed_s: float, low_alpha: float) -> float | None:
    """The smallest round margin that would settle the decision now, on its own answer (the most preferred candidate
    not out; a wider margin puts fewer out): every candidate it could not decide within that margin of it."""
    wider = [s.wider for n in decision.undecided
             if decision.answer is not None and (c := contrast(fit, n, decision.answer)) is not None
             and (s := settle_margin(n, c, decision.margin, elapsed_s, ALPHA, low_alpha)) is not None
             and s.wider is not None]
    return max(wider) if wider else None


def would_settle(fit: Fit, decision: Decision, elapsed_s: float, candidates: Sequence[str]) -> WouldSettle:
    """What would settle the answer of `decision` (taken at ALPHA, the answer's level) after `elapsed_s` seconds
    measured (the span of the slices: first to last): more time for every candidate still open against the
    preferred configuration (`open_settlings`), or the wider margin that settles it on the decision's own answer
    (`wider_for_answer`: the more preferred one, when the race leans past it); `candidates` in order of
    preference."""
    low_alpha = lower_alpha(fit, decision, candidates)
    opened = open_settlings(fit, decision, candidates, elapsed_s, low_alpha)
    more, _ = most_needed(opened)
    preferred = preferred_of(fit, decision, candidates)
    wider = wider_for_answer(fit, decision, elapsed_s, low_alpha) if opened else None
    widened_for = decision.answer if opened and decision.answer != preferred and decision.answer else ""
    return WouldSettle(preferred, tuple(s.name for s in opened), more, wider, widened_for)


def more_time_words(seconds: float) -> str:
    """'about 20 more minutes', 'about 3 more hours': more time as the answer and the race's notes say it."""
    minutes = seconds / 60
    if minutes < 1.5:
        return "about a minute more"
    if minutes < 60:
        step = 5 if minutes >= 15 else 1
        return f"about {step * round(minutes / step)} more minutes"
    hours = minutes / 60
    if hours < 1.5:
        return "about an hour more"
    return f"about {hours:.0f} more hours" if hours < 48 else "more than two days more"


def settle_phrase(more_s: float | None, wider: float | None, measured_min: float, of: str = "",
                  widened_for: str = "") -> str:
    """What would settle an unsettled answer, in the words its answer and the race's stop note both use: more time
    at the current rate (with the --max-time that gives it, after `measured_min` minutes measured; `of`: what
    the minutes are of, ' of quiet slices' for a disturbed run decided on those), or a wider margin
    (`widened_for`: the configuration a wider margin would then prefer, when it is not the preferred one)."""
    margin = f"{a_percent(wider)} margin (--margin {wider:.0%})" if wider is not None else "a wider margin"
    if widened_for and wider is not None:
        margin = f"{a_percent(wider)} margin (--margin {wider:.0%}, in favour of {widened_for})"
    elif widened_for:
        margin = f"a wider margin (in favour of {widened_for})"
    if more_s is None:
        return f"more time will not settle it, {margin} would"
    total = math.ceil((measured_min + more_s / 60) / 5) * 5
    return f"{more_time_words(more_s)}{of} (--max-time {total}m) or {margin} would settle it"
