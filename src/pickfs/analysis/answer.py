"""A workload's answer (pure): the configuration its judge names, whichever way it was measured."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from pickfs.analysis.margin import (
    Settling,
    alive,
    by_name,
    close_to_margin,
    lower_alpha,
    open_settlings,
    preferred_of,
    would_settle,
)
from pickfs.analysis.race import Roles
from pickfs.analysis.setup import Setup, setup_of
from pickfs.analysis.views import WorkloadView, beaten_by, final_roles
from pickfs.stats.decision import ALPHA, Decision, contrast
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


# The answer's intervals: each contender against the preferred configuration, bounded as the decision tests the pair
# (one-sided 95% bounds, a 90% interval when two candidates are left), so that 'within the margin' is exactly an
# upper end at or under 1 + the margin, and 'faster by more than the margin' exactly a lower end over it: the end
# that would put the more preferred of the two out is the decision's, its 5% shared over the candidates still in
# the race (stats/decision.py, Bonferroni), and with more than two candidates that end is wider than the other.
# The table's intervals are another family (each against the baseline, simultaneous 95%).
ANSWER_LEVEL = 1 - 2 * ALPHA
ANSWER_FAMILY = "one-sided 95% bounds"  # as the margin is tested


def answer_family(candidates: int) -> str:
    """The answer's intervals as its words name them, with `candidates` still in the decision."""
    if candidates <= 2:
        return ANSWER_FAMILY
    return f"{ANSWER_FAMILY}, the end that would overturn the order of preference shared over {candidates} candidates"


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
class Rival:
    """The configuration whose lead over a more preferred contender decides it, when that is not the preferred one
    (a race leaning past ext4 to xfs because xfs-tuned is faster than ext4 by more than the margin, xfs within the
    margin of xfs-tuned): its speed factor over the contender with the interval the decision tests it with."""

    name: str
    factor: float
    low: float
    high: float


@dataclass(frozen=True)
class Contender:
    """A safe configuration against the preferred one: its speed factor (contender / preferred) with its interval
    as the decision tests the pair (the ANSWER_FAMILY comment), and where it stands: 'within' the margin (settled:
    the preferred stays), 'at' the margin (not settled), 'out' (slower than another by more than the margin).
    `more_preferred`: it comes before the preferred in the order of preference (the distribution's default, fewer
    settings), so the preferred needs to be faster than it by more than the margin; at the margin, an unsettled
    run leans to the preferred on the estimates alone. `close_to_margin`: a rerun as precise as this run may decide
    the pair otherwise (analysis/margin.py `close_to_margin`): one open at the margin always, one within it when a
    rerun may leave it open, a more preferred one that is out when a rerun may prefer it; never a less preferred one
    that is out (a rerun that keeps it in still prefers the same). `settling`: what would settle one open at the
    margin (None: settled). `rival`: for a more preferred one open at the margin or out, the configuration whose
    lead over it decides it (or put it out) when that is not the preferred one."""

    name: str
    factor: float
    low: float
    high: float
    standing: str
    close_to_margin: bool = False
    settling: Settling | None = None
    more_preferred: bool = False
    rival: Rival | None = None


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
    """A race's answer as one finding, settled or not: the preferred configuration (settled: the decision's answer;
    unsettled: the answer it leans to on the estimates alone, `stats/decision.leaning`, so that a settled and an
    unsettled run of the same truth prefer the same), every safe contender's factor against it, and, when
    unsettled, what would settle it: more time at the current rate (None: at the margin, more time will not) or a wider margin. `over`:
    the more preferred configurations that are out (the preferred is faster than them by more than the margin).
    `quiet`: decided on a disturbed run's quiet slices alone (its minutes and projections count those). `checks`: each
    copy of a configuration (an A/A check) against its original, beside the finding and never in it. `family`: the
    contenders' intervals as the words name them (`answer_family`); `overturn_alpha`: the one-sided level of the end
    that would overturn the order of preference (ALPHA with two candidates). `widened_for`: the more preferred
    configuration a wider margin would settle on, when the race leans past it ('' when none)."""

    preferred: str
    settled: bool
    margin: float
    contenders: tuple[Contender, ...]
    more_s: float | None
    wider: float | None
    over: tuple[str, ...] = ()
    quiet: bool = False
    checks: tuple[Check, ...] = ()
    family: str = ANSWER_FAMILY
    widened_for: str = ""
    overturn_alpha: float = ALPHA


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


def _standing(fit: Fit, name: str, preferred: str, out: Mapping[str, str], more_preferred: bool,
              candidate: bool, margin: float) -> str:
    """Where a safe configuration stands against the preferred: 'out' (slower than another by more than the margin),
    'at' (a more preferred one not out; a less preferred one that may still be faster than the preferred by more
    than the margin), else 'within'."""
    if name in out:
        return "out"
    if not candidate:
        return "within"  # a safe non-candidate, decided against the answer
    if more_preferred:
        return "at"
    c = contrast(fit, name, preferred)
    return "within" if c is not None and c.bound(ALPHA, upper=True) <= math.log1p(margin) else "at"


def _contender(fit: Fit, name: str, preferred: str, standing: str, low_alpha: float, more_preferred: bool,
               margin: float, settling: Settling | None) -> Contender | None:
    c = contrast(fit, name, preferred)
    if c is None:
        return None
    # the end that would put the more preferred of the pair out is tested at the decision's level (low_alpha): the
    # lower end when the contender comes after the preferred, the upper when it comes before
    lo = c.bound(ALPHA if more_preferred else low_alpha, upper=False)
    hi = c.bound(low_alpha if more_preferred else ALPHA, upper=True)
    close = (standing != "out" or more_preferred) and close_to_margin(c, margin, ALPHA, low_alpha, standing == "out")
    rival = None
    if standing == "at" and settling is not None and settling.rival:
        r = contrast(fit, settling.rival, name)
        if r is not None:  # the rival comes after the contender: its lower end is the decision's
            rival = Rival(settling.rival, math.exp(r.est), math.exp(r.bound(low_alpha, upper=False)),
                          math.exp(r.bound(ALPHA, upper=True)))
    return Contender(name, math.exp(c.est), math.exp(lo), math.exp(hi), standing, close or standing == "at",
                     settling if standing == "at" else None, more_preferred, rival)


def _beaten_by_another(fit: Fit, d: Decision, roles: Roles, c: Contender, preferred: str,
                       low_alpha: float) -> Contender:
    """A more preferred contender that is out because another than the preferred is faster than it by more than the
    margin (the preferred within the margin of that one): that one as its rival, so its words say who put it out."""
    if c.standing != "out" or not c.more_preferred:
        return c
    beaten = beaten_by(fit, d, roles, c.name, low_alpha)
    con = contrast(fit, beaten[0], c.name) if beaten is not None and beaten[0] != preferred else None
    if beaten is None or con is None:
        return c
    return replace(c, rival=Rival(beaten[0], math.exp(con.est), math.exp(beaten[2]),
                                  math.exp(con.bound(ALPHA, upper=True))))


def finding(view: WorkloadView) -> Finding | None:
    """The race's finding (None: not a race, or no safe configuration to prefer)."""
    race = view.race
    answer = race.decision.answer if race is not None else None
    if race is None or answer is None:
        return None
    d = race.decision
    roles = final_roles(view)
    order = roles.candidates
    out = dict(d.out)
    preferred = preferred_of(race.fit, d, order) or answer
    copied = dict(roles.copies)  # a copy is a check, never a contender
    safe = {r.cell.config.name for r in view.rows if not r.unsafe and r.cell.config.name not in copied}
    more_preferred = set(order[:order.index(preferred)]) if preferred in order else set()
    low_alpha = lower_alpha(race.fit, d, order)
    elapsed_s = race.minutes * 60
    settlings = by_name(open_settlings(race.fit, d, order, elapsed_s, low_alpha))  # as the race's stop note
    named = [n for n, _ in d.decided if n in safe] + [answer, *d.undecided] + [n for n, _ in d.out]
    contenders = []
    for n in dict.fromkeys(named):
        if n == preferred:
            continue
        before = n in more_preferred
        standing = _standing(race.fit, n, preferred, out, before, n in order, d.margin)
        c = _contender(race.fit, n, preferred, standing, low_alpha, before, d.margin, settlings.get(n))
        if c is not None:
            contenders.append(_beaten_by_another(race.fit, d, roles, c, preferred, low_alpha))
    over = tuple(n for n, _ in d.out if n in more_preferred)
    found = Finding(preferred, True, d.margin, tuple(contenders), None, None, over, race.quiet, checks(view),
                    answer_family(alive(race.fit, d, order)), overturn_alpha=low_alpha)
    if d.settled:
        return found
    settle = would_settle(race.fit, d, elapsed_s, order)  # the figure the race's stop note gives
    return replace(found, settled=False, more_s=settle.more_s, wider=settle.wider, widened_for=settle.widened_for)


def answer_words(view: WorkloadView) -> str:
    """A workload's answer in a few words, as `pickfs compare` and `pickfs results` say it: the configuration
    recommended, or the one a race prefers unsettled ('none (ext4 preferred, not settled)'), or 'none'."""
    named = recommended(view)
    if named is not None:
        return named
    found = finding(view) if view.race is not None else None
    return f"none ({found.preferred} preferred, not settled)" if found is not None else "none"
