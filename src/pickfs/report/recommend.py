"""The recommendation (pure): the fastest configuration with no setting that can lose
acknowledged commits, and what the faster unsafe ones would gain and risk."""

from __future__ import annotations

from pickfs.report.text import fmt_with_unit
from pickfs.stack.filesystems import RAW
from pickfs.report.views import Row, WorkloadView
from pickfs.stats.compare import compare


def _better(a: Row, b: Row) -> bool:
    m = a.primary.metric
    return (a.primary.summary.median > b.primary.summary.median) == m.higher_is_better


def _fmt(row: Row) -> str:
    return fmt_with_unit(row.primary.summary.median, row.primary.metric)


def recommend(view: WorkloadView) -> list[str]:
    """Two or three plain sentences."""
    # The raw device is a yardstick, not somewhere a database can live.
    rows = [r for r in view.rows if r.primary.summary and r.cell.config.fstype != RAW]
    if not rows:
        return [f"{view.label}: nothing was measured, so there is nothing to recommend."]
    safe = [r for r in rows if not r.unsafe]
    ranked = sorted(rows, key=lambda r: r.primary.summary.median, reverse=rows[0].primary.metric.higher_is_better)
    out = []
    if not safe:
        out.append(f"{view.label}: every configuration measured has a setting that can lose acknowledged "
                   "commits on a power cut; add one with safe settings (such as plain ext4 or xfs) to compare.")
        return out
    best = next(r for r in ranked if not r.unsafe)
    ties = []
    for r in safe:
        if r is best:
            continue
        c = compare(r.primary.values, best.primary.values)
        if c is not None and c.p >= 0.05:
            ties.append(r.cell.config.name)
    tested = f", {best.crash.verdict()} of a crash test" if best.crash and not best.crash.error else ""
    text = (f"{view.label}: use {best.cell.config.name}, the fastest configuration with no setting known to lose "
            f"acknowledged commits ({_fmt(best)}, median of {best.primary.summary.n} "
            f"run{'' if best.primary.summary.n == 1 else 's'}{tested})")
    if ties:
        text += f"; {', '.join(ties)} {'is' if len(ties) == 1 else 'are'} not significantly different from it"
    out.append(text + ".")
    faster_unsafe = [r for r in ranked if r.unsafe and _better(r, best)]
    if faster_unsafe:
        r = faster_unsafe[0]
        c = compare(r.primary.values, best.primary.values)
        gain = r.primary.summary.median / best.primary.summary.median
        sig = "" if c is None or c.p < 0.05 else " (not a significant difference)"
        risks = "; ".join([*r.risks, *([f"crash test: {r.crash.verdict()}"] if r.crash_lost else [])])
        out.append(f"{r.cell.config.name} would give {gain:.2f}x{sig}, at a price: {risks}.")
    else:
        out.append("No configuration that trades safety for speed measured faster.")
    return out
