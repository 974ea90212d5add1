"""The recommendation in plain sentences (pure). Who is recommended is judged in analysis/: a race by its decision
(analysis/race.py), a run at a fixed rate by latency (analysis/latency.py), a run measured before the race by
analysis/whole.py; this module only puts the judgement into words.
"""

from __future__ import annotations

from pickfs.analysis.views import Row, WorkloadView, pair
from pickfs.analysis.whole import candidates, score
from pickfs.fsfacts import is_reference
from pickfs.report.latency import latency_sentences
from pickfs.report.race_text import race_sentences
from pickfs.report.text import PAIR_FAMILY, fmt_with_unit, speed_words
from pickfs.stats.compare import ALPHA, Comparison, holm


def _vs(view: WorkloadView, a: str, b: str) -> tuple[Comparison | None, str]:
    """a against b and its words: the table's own comparison (the same interval as its row) when b is the
    baseline, else the pair on its own, its interval labelled so."""
    row = next((r for r in view.rows if r.cell.config.name == a), None)
    higher = row.primary.metric.higher_is_better if row is not None else True
    if row is not None and b == view.baseline and row.comparison is not None:
        return row.comparison, speed_words(row.comparison, higher)
    c = pair(view, a, b)
    return c, ("" if c is None else speed_words(c, higher).replace("]", f"; {PAIR_FAMILY}]"))


def _fmt(row: Row) -> str:
    s = row.primary.summary
    what = "median over" if row.slice_s else "median of"
    unit = "slices" if row.slice_s else "runs"
    return f"{fmt_with_unit(s.median, row.primary.metric)}, {what} {s.n} {unit}" if s else "no figures"


def _lost(view: WorkloadView) -> str:
    """What an unsafe setting loses: a database's acknowledged commits, or a file workload's data."""
    return "acknowledged commits" if view.commits else "data written"


def recommend(view: WorkloadView) -> list[str]:
    """Two or three plain sentences."""
    if view.latency is not None:  # at a fixed rate: the lowest p99 from the schedule, or the highest capacity
        return list(latency_sentences(view.latency))
    rows = candidates(view)
    if not rows:
        return [f"{view.label}: nothing was measured, so there is nothing to recommend."]
    if view.race is not None:
        return race_sentences(view)
    picked = view.choice
    if picked is None:
        return [(f"{view.label}: every configuration measured has a setting that can lose {_lost(view)} "
                 "on a power cut; add one with safe settings (such as plain ext4 or xfs) to compare.")]
    safe = [r for r in rows if not r.unsafe]
    tied, chosen, why = list(picked.leaders), picked.chosen, picked.why
    leader = tied[0]
    out = []
    tested = f", {leader.crash.verdict()} of a crash test" if leader.crash and not leader.crash.error else ""
    if len(tied) == 1:
        others = [r for r in safe if r is not leader]
        text = f"{view.label}: use {leader.cell.config.name} ({_fmt(leader)}{tested})"
        if others:
            runner = max(others, key=lambda r: score(r, view))
            c, words = _vs(view, leader.cell.config.name, runner.cell.config.name)
            text += (f": significantly faster than every other configuration with no setting known to lose "
                     f"{_lost(view)}, {words} against the next best, {runner.cell.config.name}"
                     if c is not None else ": the only safe configuration with figures")
        else:
            text += f": the only configuration measured with no setting known to lose {_lost(view)}"
        out.append(text + ".")
    else:
        best = chosen
        names = ", ".join(r.cell.config.name for r in sorted(tied, key=lambda r: -score(r, view)))
        res = (f" (differences under {view.resolution[0]:.0%} cannot be told apart in this run)"
               if view.resolution else "")
        text = (f"{view.label}: {names} are tied for the fastest with no setting known to lose "
                f"{_lost(view)}{res}; use {best.cell.config.name}, because {why} ({_fmt(best)}")
        if best.crash and not best.crash.error:
            text += f", {best.crash.verdict()} of a crash test"
        out.append(text + ").")
    # the fastest unsafe candidate; an in-memory upper bound only when no disk configuration is faster
    unsafe = sorted((r for r in rows if r.unsafe and score(r, view) > score(chosen, view)),
                    key=lambda r: (is_reference(r.cell.config.fstype), -score(r, view)))
    if unsafe:
        r = unsafe[0]
        c, words = _vs(view, r.cell.config.name, chosen.cell.config.name)
        # significant only after Holm over every faster unsafe one against the chosen (as the table corrects)
        family = [pair(view, u.cell.config.name, chosen.cell.config.name) for u in unsafe]
        ps = [x.p for x in family if x is not None]
        p_adj = holm(ps)[0] if c is not None else 1.0  # c is family[0], so ps[0]
        risks = "; ".join([*r.risks, *([f"crash test: {r.crash.verdict()}"] if r.crash is not None and r.crash_lost
                                       else [])])
        if c is not None and p_adj < ALPHA:
            out.append(f"{r.cell.config.name} would be {words} against {chosen.cell.config.name}, "
                       f"at a price: {risks}.")
        else:
            gain = f" ({words}, not a significant difference)" if c is not None else ""
            out.append(f"{r.cell.config.name} is not significantly faster{gain}, and has a price: {risks}.")
    else:
        out.append("No configuration that trades safety for speed measured faster.")
    return out
