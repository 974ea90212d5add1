"""The answer of a run measured side by side in a race, in plain sentences (pure)."""

from __future__ import annotations

import math

from pickfs.analysis.answer import Check, Contender, Finding, finding
from pickfs.analysis.margin import margin_words, settle_phrase
from pickfs.analysis.views import Row, WorkloadView, beaten_by, final_roles
from pickfs.analysis.whole import distribution_default
from pickfs.fsfacts import is_reference
from pickfs.report.text import PAIR_FAMILY, factor, factor_interval, fmt_with_unit, speed, speed_words
from pickfs.stats.compare import Comparison
from pickfs.stats.decision import ALPHA, contrast


def _row(view: WorkloadView, name: str) -> Row:
    return next(r for r in view.rows if r.cell.config.name == name)


def _figure(row: Row) -> str:
    s = row.primary.summary
    unit = "slices" if row.slice_s else "runs"
    return f"{fmt_with_unit(s.median, row.primary.metric)}, median of {s.n} {unit}" if s else "no figures"


def against(view: WorkloadView, a: str, b: str) -> tuple[str, bool]:
    """a against b in speed words with its interval, and whether it is clearly faster: the table's own comparison
    (the same interval and verdict as its row) when b is the baseline, else from the race's fit at 95% for this
    pair alone, labelled so."""
    assert view.race is not None
    row = _row(view, a)
    if b == view.baseline and row.comparison is not None:
        c, higher = row.comparison, row.primary.metric.higher_is_better
        return speed_words(c, higher), c.significant and speed(c.ratio, higher) > 1
    con = contrast(view.race.fit, a, b)
    if con is None:
        return "not comparable", False
    lo, hi = con.interval(0.95)
    words = speed_words(Comparison(math.exp(con.est), math.exp(lo), math.exp(hi), con.p), True)
    return words.replace("]", f"; {PAIR_FAMILY}]"), lo > 0


def _lost(view: WorkloadView) -> str:
    return "acknowledged commits" if view.commits else "data written"


def _preferred_why(view: WorkloadView, f: Finding) -> str | None:
    """Why this one is preferred, in a few words (None: it is faster than the more preferred ones, which its
    sentence says)."""
    if f.over or any(c.more_preferred for c in f.contenders):
        return None  # it is preferred for its speed: the sentence says against which
    if distribution_default(_row(view, f.preferred).cell.config):
        return "the distribution's default"
    if f.contenders:
        return "the plainer choice"
    return f"the only configuration with no setting known to lose {_lost(view)}"


def _factor(c: Contender, preferred: str, about: bool) -> str:
    """'xfs about 1.05x [1.02x to 1.08x] as fast as ext4': a contender's factor against the preferred with its
    interval as the answer holds it (analysis/answer.py: the bounds the margin is tested with)."""
    return f"{c.name} {'about ' if about else ''}{factor_interval(c.factor, c.low, c.high)} as fast as {preferred}"


def _flipped(c: Contender, preferred: str) -> str:
    """'xfs about 1.11x [1.06x to 1.17x] as fast as ext4': the preferred against a more preferred contender (the
    same interval, the other way round)."""
    return f"{preferred} about {factor_interval(1 / c.factor, 1 / c.high, 1 / c.low)} as fast as {c.name}"


def _joined(said: list[str]) -> str:
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + f" and {said[-1]}"


def _took(minutes: float) -> str:
    return f"{minutes:.0f} min" if minutes >= 1 else f"{minutes * 60:.0f} s"


def settle_words(c: Contender, minutes: float, quiet: bool = False, widened_for: str = "") -> str:
    """What would settle a contender open at the margin: more time at the current rate, or a wider margin (the
    words the race's stop note uses too; for a more preferred contender, `widened_for`: the configuration a wider
    margin would then prefer); `quiet`: the minutes are those of a disturbed run's quiet slices."""
    s = c.settling
    if s is None:
        return "not settled"
    return settle_phrase(s.more_s, s.wider, minutes, " of quiet slices" if quiet else "",
                         widened_for if c.more_preferred else "")


def _at(c: Contender, f: Finding) -> str:
    """A contender open at the margin, faster one first: a more preferred one with the preferred's factor over it
    (and, when another decides it, that one's lead over it too), a less preferred one with its own."""
    if not c.more_preferred:
        return _factor(c, f.preferred, True)
    rival = (f" ({c.rival.name} about {factor_interval(c.rival.factor, c.rival.low, c.rival.high)} as fast as "
             f"{c.name}, and {f.preferred} within the margin of {c.rival.name} on the estimates)") if c.rival else ""
    return _flipped(c, f.preferred) + rival


def close_clauses(view: WorkloadView, f: Finding, minutes: float) -> list[str]:
    """The finding at the margin, worded alike whether this run settled it or not: for each pair close to the
    margin, which configuration is faster by about how much, with its interval, 'close to your 5% margin', then
    where this run leaves it (within it, over it, or what would settle it)."""
    margin = margin_words(f.margin)
    close = [c for c in f.contenders if c.close_to_margin]
    within = [c for c in close if c.standing == "within"]
    parts = []
    if within:
        them = "it" if len(within) == 1 else "them"
        parts.append(f"{_joined([_factor(c, f.preferred, True) for c in within])}, close to your {margin} margin: "
                     f"within it in this run, though a rerun may leave {them} open")
    parts += [f"{_at(c, f)}, close to your {margin} margin: {settle_words(c, minutes, f.quiet, f.widened_for)}"
              for c in close if c.standing == "at"]
    for c in close:
        if c.standing == "out":
            why = ", the distribution's default" if distribution_default(_row(view, c.name).cell.config) else ""
            over = (f"{c.name} out in this run ({c.rival.name} about "
                    f"{factor_interval(c.rival.factor, c.rival.low, c.rival.high)} as fast as it)" if c.rival
                    else "over it in this run")
            parts.append(f"{_flipped(c, f.preferred)}, close to your {margin} margin: {over}, though a "
                         f"rerun may prefer {c.name}{why}")
    return parts


def decided_sentence(view: WorkloadView) -> str:
    """The race's finding in one sentence, worded alike settled or not: the preferred configuration, every safe
    contender's factor against it with its interval and where it stands at the margin (a pair close to it said
    the same way in a run that settled it and in one that did not), and, when unsettled, what would settle it."""
    assert view.race is not None
    d, minutes = view.race.decision, view.race.minutes
    f = finding(view)
    if f is None:
        return (f"{view.label}: every configuration measured has a setting that can lose {_lost(view)} on a "
                "power cut; add one with safe settings (such as plain ext4 or xfs) to compare.")
    row = _row(view, f.preferred)
    tested = f", {row.crash.verdict()} of a crash test" if row.crash and not row.crash.error else ""
    margin = margin_words(f.margin)
    why = _preferred_why(view, f)
    named = f"{f.preferred}, {why}" if why else f.preferred
    took = _took(minutes) + (" of quiet slices" if f.quiet else "")
    head = (f"{view.label}: use {named} ({_figure(row)}{tested})" if f.settled else
            f"{view.label}: {named} ({_figure(row)}{tested}){',' if why else ''} is preferred but not settled in {took}")
    parts = [head]
    out = [c.name for c in f.contenders if c.standing == "out" and not c.close_to_margin]
    if out:
        parts.append(f"{_joined(out)} {'is' if len(out) == 1 else 'are'} out, slower by more than the {margin} margin")
    within = [c for c in f.contenders if c.standing == "within" and not c.close_to_margin]
    if within:
        parts.append(f"{_joined([_factor(c, f.preferred, False) for c in within])}, within your {margin} margin")
    close = close_clauses(view, f, minutes)
    label = f" ({f.family})" if within or close else ""
    # a preferred configuration that is out, not close to the margin: why, since the table's simultaneous
    # intervals are wider
    roles = final_roles(view)
    beaten = [(n, b) for n in out if distribution_default(_row(view, n).cell.config)
              and (b := beaten_by(view.race.fit, d, roles, n, f.overturn_alpha)) is not None]
    level = "one-sided 95%" if f.overturn_alpha >= ALPHA else f"one-sided {1 - f.overturn_alpha:.1%}, as the decision"
    preferred_out = "".join(f" {n} is out: {c} is at least {factor(math.exp(low))} as fast ({level})."
                            for n, (c, _, low) in beaten)
    return "; ".join([*parts, *close]) + label + "." + preferred_out


def price_sentence(view: WorkloadView) -> str:
    """The fastest configuration that trades safety for speed, against the answer (or the preferred one)."""
    assert view.race is not None
    found = finding(view)
    ref = found.preferred if found is not None else view.race.decision.answer
    if ref is None:
        return ""
    fit = view.race.fit
    unsafe = [r for r in view.rows if r.unsafe and r.cell.config.name in fit.spreads]
    faster = [(r, c) for r in unsafe if (c := contrast(fit, r.cell.config.name, ref)) is not None and c.est > 0]
    if not faster:
        return "No configuration that trades safety for speed measured faster."
    disk = [x for x in faster if not is_reference(x[0].cell.config.fstype)] or faster
    r, c = max(disk, key=lambda x: x[1].est)
    risks = "; ".join([*r.risks, *([f"crash test: {r.crash.verdict()}"] if r.crash is not None and r.crash_lost
                                   else [])])
    words, faster_clearly = against(view, r.cell.config.name, ref)
    if faster_clearly:
        return f"{r.cell.config.name} would be {words} against {ref}, at a price: {risks}."
    return f"{r.cell.config.name} is not clearly faster ({words}), and has a price: {risks}."


def check_sentence(c: Check) -> str:
    """A copy of a configuration (an A/A check) against its original, in one sentence: the factor with its interval,
    and, when the interval excludes 1, that the method called one setup two speeds in this run (the size of such a
    difference is the run's own, not the setups')."""
    family = "95%, as the table's" if c.simultaneous else PAIR_FAMILY
    head = (f"{c.name}, {c.original} measured again as a check of the method: "
            f"{factor(c.factor)} as fast as {c.original} [{factor(c.low)} to {factor(c.high)}; {family}]")
    if not c.different:
        return f"{head}, not different, as a copy should be."
    return (f"{head}: the two copies of one setup differ by about {abs(c.factor - 1):.0%} in this run, so a "
            f"difference of that size between configurations may be this run's own; the answer counts "
            f"{c.original} alone.")


def race_sentences(view: WorkloadView) -> list[str]:
    out = [decided_sentence(view)]
    f = finding(view)
    out += [check_sentence(c) for c in (f.checks if f is not None else ())]
    price = price_sentence(view)
    return [*out, price] if price else out

