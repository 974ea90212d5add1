"""The recommendation (pure).

A run measured side by side in a race (the default) is answered by its decision (stats/decision.py): the answer
when it is settled, else the configurations it could not decide between, in plain words. Runs
measured before the race are answered as follows.

A configuration is named faster only when it is significantly faster. Among the configurations
with no setting that can lose acknowledged commits, the leaders are those no other is
significantly faster than (every pair compared both ways; each configuration's k - 1 comparisons
Holm-corrected, so that the leaders hold the truly fastest with 95% confidence).
Among tied ones pickfs recommends by safety (a crash test that lost nothing), then by being the
distribution's default (plain ext4, as Debian and most distributions install), then a current
filesystem over a legacy format (ext2, ext3), then the fewest settings changed, and says why.
"""

from __future__ import annotations

from pickfs.analysis.views import Row, WorkloadView, pair
from pickfs.fsfacts import has_filesystem, is_reference
from pickfs.report.latency import latency_sentences
from pickfs.report.race_text import race_sentences
from pickfs.report.text import fmt_with_unit, speed_interval, speed_words
from pickfs.stats.compare import ALPHA, Comparison, holm
from pickfs.stats.decision import LEGACY, is_distribution_default, settings_changed


def _score(row: Row, view: WorkloadView) -> float:
    """Speed against the baseline, as a ratio where higher is better."""
    higher = row.primary.metric.higher_is_better
    if row.cell.config.name == view.baseline:
        return 1.0
    if row.comparison is not None:
        r = row.comparison.ratio
    elif row.relative is not None:
        r = row.relative / 100
    else:
        return 0.0
    return r if higher else (1 / r if r > 0 else 0.0)


def _speedup(c: Comparison, higher: bool) -> tuple[float, float, float]:
    """A comparison as 'times faster' (inverted for time metrics, where lower is better)."""
    return speed_interval(c, higher)


def _x(c: Comparison, higher: bool) -> str:
    return speed_words(c, higher)


def _fmt(row: Row) -> str:
    s = row.primary.summary
    what = "median over" if row.slice_s else "median of"
    unit = "slices" if row.slice_s else "runs"
    return f"{fmt_with_unit(s.median, row.primary.metric)}, {what} {s.n} {unit}" if s else "no figures"


def _beaten(view: WorkloadView, rows: list[Row], higher: bool) -> set[str]:
    """Configurations some other one is significantly faster than.

    Each pair is compared both ways (each against the other's level at the same moments; the larger p
    counts, and both ways must agree on which is faster). A configuration is beaten when, among its own
    comparisons with the others, Holm-corrected over those (k - 1, not every pair), one is significantly
    faster: the configurations left then hold the truly fastest with 95% confidence (the fastest is
    wrongly left out only through its own k - 1 comparisons), a tighter set than Holm over all the pairs.
    """
    faster_than: dict[str, list[tuple[str, float]]] = {r.cell.config.name: [] for r in rows}
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            x, y = a.cell.config.name, b.cell.config.name
            ab, ba = pair(view, x, y), pair(view, y, x)
            if ab is None or ba is None:
                continue
            p = max(ab.p, ba.p) if (ab.ratio > 1) == (ba.ratio < 1) else 1.0
            slower = y if _speedup(ab, higher)[0] > 1 else x
            faster_than[slower].append((x if slower == y else y, p))
            faster_than[x if slower == y else y].append((slower, 1.0))  # the slower one beats nothing here
    out = set()
    for name, tests in faster_than.items():
        if tests and min(holm([p for _, p in tests])) < ALPHA:
            out.add(name)
    return out


def tie_break(tied: list[Row], view: WorkloadView) -> tuple[Row, str]:
    """Among configurations that cannot be told apart: the safest, then the distribution's default,
    then a current filesystem over a legacy format, then the one that changes the fewest settings,
    then the fastest estimate; with the reason."""
    def crash_clean(r: Row) -> bool:
        # a clean result the crash model could not exercise on some setting is no safety argument
        return r.crash_clean

    def changed(r: Row) -> int:
        return settings_changed(r.cell.config)

    def legacy(r: Row) -> bool:
        return r.cell.config.fstype in LEGACY

    ranked = sorted(tied, key=lambda r: (not crash_clean(r), not is_distribution_default(r.cell.config),
                                         legacy(r), changed(r), -_score(r, view)))
    best, runner = ranked[0], ranked[1]
    if crash_clean(best) and not crash_clean(runner):
        why = f"it is the safest of them ({best.crash.verdict() if best.crash else ''} of a crash test)"
    elif is_distribution_default(best.cell.config) and not is_distribution_default(runner.cell.config):
        why = "it is the distribution's default (plain ext4): nothing to tune or to explain"
    elif not legacy(best) and legacy(runner):
        why = f"it is a current filesystem, where {runner.cell.config.fstype} is a legacy format"
    elif changed(best) < changed(runner):
        why = "it changes the fewest settings from the filesystem's defaults"
    elif any(_score(r, view) > _score(best, view) for r in tied):
        faster = [r for r in tied if _score(r, view) > _score(best, view)]
        what = ("a legacy format" if all(legacy(r) and changed(r) <= changed(best) for r in faster)
                else "more changed settings")
        why = (f"its estimate is the highest of those as plain as it; "
               f"{', '.join(r.cell.config.name for r in faster)} ({what}) measured higher, not significantly")
    else:
        why = "its estimate is the highest, though not significantly"
    return best, why


def _lost(view: WorkloadView) -> str:
    """What an unsafe setting loses: a database's acknowledged commits, or a file workload's data."""
    return "acknowledged commits" if view.commits else "data written"


def candidates(view: WorkloadView) -> list[Row]:
    """Configurations with figures where a database can live (not the raw device)."""
    return [r for r in view.rows if r.primary.summary and has_filesystem(r.cell.config.fstype)]


def choice(view: WorkloadView) -> tuple[list[Row], Row, str] | None:
    """The leaders (safe, none significantly faster), the one recommended, and why ('' if it leads alone)."""
    safe = [r for r in candidates(view) if not r.unsafe]
    if not safe:
        return None
    higher = safe[0].primary.metric.higher_is_better
    beaten = _beaten(view, safe, higher)
    tied = sorted([r for r in safe if r.cell.config.name not in beaten] or safe, key=lambda r: -_score(r, view))
    if len(tied) == 1:
        return tied, tied[0], ""
    best, why = tie_break(tied, view)
    return tied, best, why


def recommended(view: WorkloadView) -> str | None:
    """The name of the configuration the recommendation names, if any (none from a race that could not
    decide)."""
    if view.latency is not None:  # at a fixed rate: by latency (analysis/latency.py)
        return view.latency.answer if view.latency.settled else None
    if view.race is not None:
        d = view.race.decision
        return d.answer if d.settled else None
    c = choice(view)
    return c[1].cell.config.name if c else None


def recommend(view: WorkloadView) -> list[str]:
    """Two or three plain sentences."""
    if view.latency is not None:  # at a fixed rate: the lowest p99 from the schedule, or the highest capacity
        return list(latency_sentences(view.latency))
    rows = candidates(view)
    if not rows:
        return [f"{view.label}: nothing was measured, so there is nothing to recommend."]
    if view.race is not None:
        return race_sentences(view)
    picked = choice(view)
    if picked is None:
        return [(f"{view.label}: every configuration measured has a setting that can lose {_lost(view)} "
                 "on a power cut; add one with safe settings (such as plain ext4 or xfs) to compare.")]
    safe = [r for r in rows if not r.unsafe]
    higher = rows[0].primary.metric.higher_is_better
    tied, chosen, why = picked
    leader = tied[0]
    out = []
    tested = f", {leader.crash.verdict()} of a crash test" if leader.crash and not leader.crash.error else ""
    if len(tied) == 1:
        others = [r for r in safe if r is not leader]
        text = f"{view.label}: use {leader.cell.config.name} ({_fmt(leader)}{tested})"
        if others:
            runner = max(others, key=lambda r: _score(r, view))
            c = pair(view, leader.cell.config.name, runner.cell.config.name)
            text += (f": significantly faster than every other configuration with no setting known to lose "
                     f"{_lost(view)}, {_x(c, higher)} against the next best, {runner.cell.config.name}"
                     if c is not None else ": the only safe configuration with figures")
        else:
            text += f": the only configuration measured with no setting known to lose {_lost(view)}"
        out.append(text + ".")
    else:
        best = chosen
        names = ", ".join(r.cell.config.name for r in sorted(tied, key=lambda r: -_score(r, view)))
        res = (f" (differences under {view.resolution[0]:.0%} cannot be told apart in this run)"
               if view.resolution else "")
        text = (f"{view.label}: {names} are tied for the fastest with no setting known to lose "
                f"{_lost(view)}{res}; use {best.cell.config.name}, because {why} ({_fmt(best)}")
        if best.crash and not best.crash.error:
            text += f", {best.crash.verdict()} of a crash test"
        out.append(text + ").")
    # the fastest unsafe candidate; an in-memory upper bound only when no disk configuration is faster
    unsafe = sorted((r for r in rows if r.unsafe and _score(r, view) > _score(chosen, view)),
                    key=lambda r: (is_reference(r.cell.config.fstype), -_score(r, view)))
    if unsafe:
        r = unsafe[0]
        c = pair(view, r.cell.config.name, chosen.cell.config.name)
        # significant only after Holm over every faster unsafe one against the chosen (as the table corrects)
        family = [pair(view, u.cell.config.name, chosen.cell.config.name) for u in unsafe]
        ps = [x.p for x in family if x is not None]
        p_adj = holm(ps)[0] if c is not None else 1.0  # c is family[0], so ps[0]
        risks = "; ".join([*r.risks, *([f"crash test: {r.crash.verdict()}"] if r.crash is not None and r.crash_lost
                                       else [])])
        if c is not None and p_adj < ALPHA:
            out.append(f"{r.cell.config.name} would be {_x(c, higher)} against {chosen.cell.config.name}, "
                       f"at a price: {risks}.")
        else:
            gain = f" ({_x(c, higher)}, not a significant difference)" if c is not None else ""
            out.append(f"{r.cell.config.name} is not significantly faster{gain}, and has a price: {risks}.")
    else:
        out.append("No configuration that trades safety for speed measured faster.")
    return out
