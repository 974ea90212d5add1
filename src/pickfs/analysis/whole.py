"""The judge of runs measured before the race (pure): one at a time, or whole runs alternated in rounds.

A configuration is named faster only when it is significantly faster. Among the configurations
with no setting that can lose acknowledged commits, the leaders are those no other is
significantly faster than (every pair compared both ways; each configuration's k - 1 comparisons
Holm-corrected, so that the leaders hold the truly fastest with 95% confidence), and that the
table's verdict against the baseline does not already call slower (the baseline itself is not a
leader when the table calls another significantly faster than it).
Among tied ones pickfs recommends by safety (a crash test that lost nothing), then by being the
distribution's default (plain ext4, as Debian and most distributions install), then a current
filesystem over a legacy format (ext2, ext3), then the fewest settings changed, and says why.
"""

from __future__ import annotations

from pickfs.analysis.views import Choice, Row, WorkloadView, pair
from pickfs.fsfacts import facts_of, has_filesystem
from pickfs.model import FsConfig
from pickfs.stats.compare import ALPHA, Comparison, holm
from pickfs.stats.decision import is_distribution_default, settings_changed


def distribution_default(config: FsConfig) -> bool:
    """Is the configuration the distribution's default: its type's facts say so (pickfs.fsfacts), nothing changed?"""
    return is_distribution_default(config, facts_of(config.fstype))


def score(row: Row, view: WorkloadView) -> float:
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


def _faster(c: Comparison, higher: bool) -> bool:
    """Is the comparison's estimate a speed-up (a time ratio is inverted)?"""
    return c.ratio > 1 if higher else c.ratio < 1


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
            slower = y if _faster(ab, higher) else x
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
        return facts_of(r.cell.config.fstype).legacy

    ranked = sorted(tied, key=lambda r: (not crash_clean(r), not distribution_default(r.cell.config),
                                         legacy(r), changed(r), -score(r, view)))
    best, runner = ranked[0], ranked[1]
    if crash_clean(best) and not crash_clean(runner):
        why = f"it is the safest of them ({best.crash.verdict() if best.crash else ''} of a crash test)"
    elif distribution_default(best.cell.config) and not distribution_default(runner.cell.config):
        why = "it is the distribution's default (plain ext4): nothing to tune or to explain"
    elif not legacy(best) and legacy(runner):
        why = f"it is a current filesystem, where {runner.cell.config.fstype} is a legacy format"
    elif changed(best) < changed(runner):
        why = "it changes the fewest settings from the filesystem's defaults"
    elif any(score(r, view) > score(best, view) for r in tied):
        faster = [r for r in tied if score(r, view) > score(best, view)]
        what = ("a legacy format" if all(legacy(r) and changed(r) <= changed(best) for r in faster)
                else "more changed settings")
        why = (f"its estimate is the highest of those as plain as it; "
               f"{', '.join(r.cell.config.name for r in faster)} ({what}) measured higher, not significantly")
    else:
        why = "its estimate is the highest, though not significantly"
    return best, why


def beaten_in_the_table(view: WorkloadView, rows: list[Row], higher: bool) -> set[str]:
    """What the table's verdicts against the baseline (Holm over every comparison shown) already decide: the
    baseline when one of `rows` is significantly faster than it, a configuration significantly slower than it.
    The answer never calls tied what its own table calls different."""
    names = {r.cell.config.name for r in rows}
    if view.baseline not in names:
        return set()
    out = set()
    for r in rows:
        c = r.comparison
        if c is not None and c.significant and r.cell.config.name != view.baseline:
            out.add(view.baseline if _faster(c, higher) else r.cell.config.name)
    return out


def candidates(view: WorkloadView) -> list[Row]:
    """Configurations with figures where a database can live (not the raw device)."""
    return [r for r in view.rows if r.primary.summary and has_filesystem(r.cell.config.fstype)]


def choice(view: WorkloadView) -> Choice | None:
    """The leaders (safe, none significantly faster), the one recommended, and why ('' if it leads alone); None
    without a safe configuration measured."""
    safe = [r for r in candidates(view) if not r.unsafe]
    if not safe:
        return None
    higher = safe[0].primary.metric.higher_is_better
    beaten = _beaten(view, safe, higher) | beaten_in_the_table(view, safe, higher)
    tied = sorted([r for r in safe if r.cell.config.name not in beaten] or safe, key=lambda r: -score(r, view))
    if len(tied) == 1:
        return Choice(tuple(tied), tied[0], "")
    best, why = tie_break(tied, view)
    return Choice(tuple(tied), best, why)


