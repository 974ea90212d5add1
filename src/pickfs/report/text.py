"""Texts every renderer shows the same way (pure): values, intervals, verdicts, notes."""

from __future__ import annotations

import math

from pickfs.model import MetricDef
from pickfs.stats.paired import PairedComparison
from pickfs.report.views import SIDE_BY_SIDE, WHOLE_RUNS, Row, WorkloadView


def fmt_seconds(value: float) -> str:
    if value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.2f} ms"
    return f"{value:.2f} s"


def fmt_bytes(value: float) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(value) >= size:
            return f"{value / size:,.1f} {unit}"
    return f"{value:,.0f} B"


def fmt_value(value: float | None, metric: MetricDef) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if metric.unit == "s":
        return fmt_seconds(value)
    if metric.unit == "B":
        return fmt_bytes(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def fmt_with_unit(value: float | None, metric: MetricDef) -> str:
    """A value and its unit, unless the formatting already names it (seconds, bytes)."""
    text = fmt_value(value, metric)
    return text if metric.unit in ("s", "B") or text == "-" else f"{text} {metric.unit}"


def interval(row: Row) -> str:
    """'mean ± half-width (share)', or the single value of a one-run cell."""
    s, m = row.primary.summary, row.primary.metric
    if s is None:
        return "-"
    if s.n < 2:
        return f"{fmt_value(s.mean, m)} (1 run)"
    half = (s.ci_high - s.ci_low) / 2
    share = f" ({half / s.mean:.1%})" if s.mean else ""
    return f"{fmt_value(s.mean, m)} ± {fmt_value(half, m)}{share}"


def verdict(row: Row, baseline: str | None) -> tuple[str, str]:
    """The comparison with the baseline as text, and its tone: neutral, good or bad."""
    c, m = row.comparison, row.primary.metric
    if row.cell.config.name == baseline:
        return "baseline", "neutral"
    if c is None:
        return "-", "neutral"
    if not c.significant:
        if isinstance(c, PairedComparison):
            return f"no significant difference ×{c.ratio:.2f} [{c.ci_low:.2f}-{c.ci_high:.2f}]", "neutral"
        return f"no significant difference (p={c.p_adjusted:.2f})", "neutral"
    better = (c.ratio > 1) == m.higher_is_better
    word = ("faster" if better else "slower") if m.higher_is_better else ("better" if better else "worse")
    return f"{word} ×{c.ratio:.2f} [{c.ci_low:.2f}-{c.ci_high:.2f}] p={c.p_adjusted:.3f}", \
        "good" if better else "bad"


def method_lines(view: WorkloadView) -> list[str]:
    """How the view's cells were measured, what this run can resolve, and where its variance came from."""
    out = []
    for how in sorted({r.how for r in view.rows if r.how}):
        rows = [r for r in view.rows if r.how == how]
        counts = sorted(len(r.primary.values) for r in rows)
        count = f"{counts[0]}" if counts[0] == counts[-1] else f"{counts[0]}-{counts[-1]}"
        if how == SIDE_BY_SIDE:
            blocks = max(len({o.block for o in r.observations}) for r in rows)
            slices = sorted({f"{r.slice_s:g} s" for r in rows if r.slice_s})
            out.append(f"measured side by side: every configuration built at once, {'/'.join(slices)} slices taking "
                       f"turns in random order, {blocks} block{'s' if blocks != 1 else ''} on fresh filesystems, "
                       f"{count} slices per configuration; each compared with {view.baseline} "
                       "measured nearest in time")
        elif how == WHOLE_RUNS:
            out.append(f"measured in rounds: whole runs alternated in a fresh random order, {count} "
                       f"per configuration, each compared with {view.baseline} run nearest in time")
        else:
            out.append(f"measured one at a time: {count} runs per configuration, each on a fresh "
                       "filesystem")
    if view.resolution:
        med, lo, hi = view.resolution
        out.append(f"resolution: differences under {med:.0%} cannot be told apart on this machine in this run "
                   f"({lo:.0%}-{hi:.0%} by configuration)")
    comps = [r.comparison for r in view.rows if isinstance(r.comparison, PairedComparison) and r.comparison.blocks > 1]
    if comps:
        blocks = sum(c.block_share for c in comps) / len(comps)
        rounds = sum(c.round_share for c in comps) / len(comps)
        out.append(f"variance of the ratios: {blocks:.0%} between blocks (one mkfs against the next), {rounds:.0%} "
                   f"between rounds (one moment against the next), {1 - blocks - rounds:.0%} slice to slice")
    stalled = sum(r.comparison.stalled for r in view.rows if isinstance(r.comparison, PairedComparison))
    if stalled:
        out.append(f"{stalled} slice(s) measured nothing at all (a stall) and are left out of the ratios")
    return out


def status_detail(row: Row) -> str:
    """Why a cell that is not ok has no values (its notes, without repeating the status)."""
    return ("; ".join(row.notes) or "no measured run").removeprefix(row.status + ": ")


SPACE = MetricDef("space", "B", False)


def breakdown_cells(view: WorkloadView) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The breakdown as configurations (columns) and (label, cells) rows: median, and vs the baseline.

    Rows are the workload's breakdown metrics (phases, sync methods) and the space used.
    """
    rows = [r for r in view.rows if r.status == "ok"]
    base = next((r for r in rows if r.cell.config.name == view.baseline), None)
    out: list[tuple[str, list[str]]] = []
    for d in view.breakdown:
        cells = []
        base_mv = base.metric(d.name) if base else None
        for r in rows:
            mv = r.metric(d.name)
            if mv is None or mv.summary is None:
                cells.append("-")
                continue
            text = fmt_value(mv.summary.median, d)
            if base_mv and base_mv.summary and base_mv.summary.median and r is not base:
                text += f" ({100 * mv.summary.median / base_mv.summary.median:.0f})"
            cells.append(text)
        out.append((f"{d.name} ({d.unit})" if d.unit != "s" else d.name, cells))
    for label in ("after mkfs", "data in place", "peak in the run"):
        if any(label in r.space for r in rows):
            out.append((f"space used {label}", [fmt_bytes(r.space[label]) if label in r.space else "-" for r in rows]))
    return [r.cell.config.name for r in rows], out


CRASH_COLUMNS = ("states", "lost commits in", "most lost", "work lost", "would not mount", "fsck failed",
                 "database would not open", "inconsistent", "verdict")


def crash_cells(view: WorkloadView) -> list[tuple[str, list[str], bool]]:
    """Per crash-tested configuration: its name, the CRASH_COLUMNS cells, and whether it lost anything."""
    out = []
    for r in view.rows:
        c = r.crash
        if c is None:
            continue
        if c.error:
            out.append((r.cell.config.name, ["-"] * (len(CRASH_COLUMNS) - 1) + [c.error], False))
            continue
        m = c.metrics
        n = lambda k: f"{int(m.get(k, 0)):,}"  # noqa: E731
        out.append((r.cell.config.name, [
            n("crash_states"), n("crash_states_lost"), n("crash_max_lost"), f"{m.get('crash_max_lost_s', 0):.2f} s",
            n("crash_unmountable"), n("crash_fsck_failed"), n("crash_db_failed"), n("crash_inconsistent"),
            c.short()], c.lost_any))
    return out


def crash_model(view: WorkloadView) -> str:
    return next((r.crash.model for r in view.rows if r.crash and r.crash.model), "")
