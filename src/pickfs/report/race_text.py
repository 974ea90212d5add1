"""The answer of a run measured side by side in a race, in plain sentences (pure)."""

from __future__ import annotations

import math

from pickfs.analysis.answer import Finding, finding
from pickfs.analysis.margin import margin_words, settle_phrase
from pickfs.analysis.views import Row, WorkloadView
from pickfs.analysis.whole import distribution_default
from pickfs.fsfacts import is_reference
from pickfs.report.text import fmt_with_unit, speed_words
from pickfs.stats.compare import Comparison
from pickfs.stats.decision import contrast


def _row(view: WorkloadView, name: str) -> Row:
    return next(r for r in view.rows if r.cell.config.name == name)


def _figure(row: Row) -> str:
    s = row.primary.summary
    unit = "slices" if row.slice_s else "runs"
    return f"{fmt_with_unit(s.median, row.primary.metric)}, median of {s.n} {unit}" if s else "no figures"


def against(view: WorkloadView, a: str, b: str) -> str:
    """'12% faster [+8% to +16%]': a against b from the race's fit, its 95% interval (speed words)."""
    assert view.race is not None
    c = contrast(view.race.fit, a, b)
    if c is None:
        return "not comparable"
    lo, hi = c.interval(0.95)
    return speed_words(Comparison(math.exp(c.est), math.exp(lo), math.exp(hi), c.p), True)


def _lost(view: WorkloadView) -> str:
    return "acknowledged commits" if view.commits else "data written"


def _preferred_why(view: WorkloadView, preferred: str, contenders: int) -> str:
    """Why this one is preferred, in a few words."""
    if distribution_default(_row(view, preferred).cell.config):
        return "the distribution's default"
    if contenders:
        return "the plainer choice"
    return f"the only configuration with no setting known to lose {_lost(view)}"


def _factors(view: WorkloadView, names: list[str], preferred: str, about: bool) -> str:
    said = [f"{n} {'about ' if about else ''}{against(view, n, preferred)}" for n in names]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + f" and {said[-1]}"


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def _took(minutes: float) -> str:
    return f"{minutes:.0f} min" if minutes >= 1 else f"{minutes * 60:.0f} s"


def settle_words(f: Finding, minutes: float) -> str:
    """What would settle an unsettled finding: more time at the current rate, or a wider margin (the words the
    race's stop note uses too)."""
    return settle_phrase(f.more_s, f.wider, minutes)


def decided_sentence(view: WorkloadView) -> str:
    """The race's finding in one sentence, worded alike settled or not: the preferred configuration, every safe
    contender's factor against it with its interval and where it stands at the margin, and, when unsettled, what
    would settle it."""
    assert view.race is not None
    d, minutes = view.race.decision, view.race.minutes
    f = finding(view)
    if f is None:
        return (f"{view.label}: every configuration measured has a setting that can lose {_lost(view)} on a "
                "power cut; add one with safe settings (such as plain ext4 or xfs) to compare.")
    row = _row(view, f.preferred)
    tested = f", {row.crash.verdict()} of a crash test" if row.crash and not row.crash.error else ""
    margin = margin_words(f.margin)
    standing = {s: [c.name for c in f.contenders if c.standing == s] for s in ("within", "at", "out")}
    why = _preferred_why(view, f.preferred, len(f.contenders))
    head = (f"{view.label}: use {f.preferred}, {why} ({_figure(row)}{tested})" if f.settled else
            f"{view.label}: {f.preferred}, {why} ({_figure(row)}{tested}), is preferred but not settled in "
            f"{_took(minutes)}")
    parts = [head]
    if standing["out"]:
        verb = "is" if len(standing["out"]) == 1 else "are"
        parts.append(f"{_names(standing['out'])} {verb} out, slower by more than the {margin} margin")
    if standing["within"]:
        parts.append(f"{_factors(view, standing['within'], f.preferred, False)}, within your {margin} margin")
    if standing["at"]:
        parts.append(f"{_factors(view, standing['at'], f.preferred, True)}, at your {margin} margin: "
                     f"{settle_words(f, minutes)}")
    # a preferred configuration that is out: why, since the table's simultaneous intervals are wider
    preferred_out = "".join(f" {n} is out: {why}." for n, why in d.out
                            if distribution_default(_row(view, n).cell.config))
    return "; ".join(parts) + "." + preferred_out


def price_sentence(view: WorkloadView) -> str:
    """The fastest configuration that trades safety for speed, against the answer (or the preferred one)."""
    assert view.race is not None
    d = view.race.decision
    ref = d.answer
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
    lo, _ = c.interval(0.95)
    words = against(view, r.cell.config.name, ref)
    if lo > 0:
        return f"{r.cell.config.name} would be {words} against {ref}, at a price: {risks}."
    return f"{r.cell.config.name} is not clearly faster ({words}), and has a price: {risks}."


def race_sentences(view: WorkloadView) -> list[str]:
    out = [decided_sentence(view)]
    price = price_sentence(view)
    return [*out, price] if price else out

