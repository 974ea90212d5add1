"""The answer of a run measured side by side in a race, in plain sentences (pure)."""

from __future__ import annotations

import math

from pickfs.analysis.views import Row, WorkloadView
from pickfs.analysis.whole import distribution_default
from pickfs.fsfacts import is_reference
from pickfs.report.text import fmt_with_unit, speed_words
from pickfs.stats.compare import Comparison
from pickfs.stats.decision import contrast

LONGER = "run longer (e.g. --max-time 20m) or accept a wider margin (e.g. --margin 10%)"


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


def _why_answer(view: WorkloadView, answer: str) -> str:
    """Why the answer, in a clause."""
    assert view.race is not None
    d = view.race.decision
    margin = f"{d.margin:.0%}"
    beaten = [n for n, _ in d.out]
    close = [n for n, _ in d.decided if n in {r.cell.config.name for r in view.rows if not r.unsafe}]
    parts = []
    if beaten:
        parts.append(f"it is faster than {', '.join(beaten)} by more than the {margin} margin")
    if close:
        pref = ("the distribution's default" if distribution_default(_row(view, answer).cell.config)
                else "the plainer choice")
        parts.append(f"no other safe configuration is faster than it by more than the {margin} margin "
                     f"({'; '.join(f'{n} {against(view, n, answer)}' for n in close)}), and within the margin "
                     f"{pref} is preferred")
    return "; ".join(parts) if parts else f"the only configuration with no setting known to lose {_lost(view)}"


def decided_sentence(view: WorkloadView) -> str:
    assert view.race is not None
    d, minutes = view.race.decision, view.race.minutes
    if d.settled and d.answer:
        row = _row(view, d.answer)
        tested = f", {row.crash.verdict()} of a crash test" if row.crash and not row.crash.error else ""
        return f"{view.label}: use {d.answer} ({_figure(row)}{tested}): {_why_answer(view, d.answer)}."
    if not d.answer:
        return (f"{view.label}: every configuration measured has a setting that can lose {_lost(view)} on a "
                "power cut; add one with safe settings (such as plain ext4 or xfs) to compare.")
    others = "; ".join(f"{n} {against(view, n, d.answer)}" for n in d.undecided)
    names = ", ".join(d.tied[:-1]) + f" and {d.tied[-1]}"
    took = f"{minutes:.0f} min" if minutes >= 1 else f"{minutes * 60:.0f} s"
    # a preferred configuration that is out: why, since the table's simultaneous intervals are wider
    preferred_out = "".join(f" {n} is out: {why}." for n, why in d.out
                            if distribution_default(_row(view, n).cell.config))
    return (f"{view.label}: could not decide between {names} on this machine in {took} at a "
            f"{d.margin:.0%} margin (against {d.answer}: {others}); {LONGER}.{preferred_out}")


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

