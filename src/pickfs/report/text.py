"""Texts every renderer shows the same way (pure): values, intervals, verdicts, notes."""

from __future__ import annotations

import math

from pickfs.analysis.run import AnalysedRun, analysed
from pickfs.analysis.views import SIDE_BY_SIDE, WHOLE_RUNS, Row, WorkloadView
from pickfs.model import MetricDef, RunRecord
from pickfs.report.race_method import by_configuration, race_method_lines, resolution_line
from pickfs.stats.compare import Comparison
from pickfs.stats.paired import PairedComparison
from pickfs.stats.summary import log_interval


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
    """The 95% interval of the geometric mean, on the log scale (never below zero), or the single value."""
    s, m = row.primary.summary, row.primary.metric
    if s is None:
        return "-"
    if s.n < 2:
        return f"{fmt_value(s.mean, m)} (1 run)"
    est = log_interval(row.primary.values)
    if est is None:  # a zero among the values: the plain Student-t interval
        return f"{fmt_value(s.mean, m)} [{fmt_value(s.ci_low, m)} to {fmt_value(s.ci_high, m)}]"
    gm, lo, hi = est
    if m.unit == "s":  # all three in the estimate's unit, named once
        unit, scale = ("µs", 1e6) if gm < 1e-3 else ("ms", 1e3) if gm < 1 else ("s", 1.0)
        return f"{gm * scale:.3g} [{lo * scale:.3g} to {hi * scale:.3g}] {unit}"
    return f"{fmt_value(gm, m)} [{fmt_value(lo, m)} to {fmt_value(hi, m)}]"


INTERVAL_HEAD = "geo. mean [95% interval]"


def direction(metric: MetricDef) -> str:
    """'higher is better' or 'lower is better', for a column heading or an axis."""
    return "higher is better" if metric.higher_is_better else "lower is better"


def speed(ratio: float, higher_is_better: bool) -> float:
    """A ratio of the metric as a ratio of speed: above 1 is faster (a time ratio is inverted)."""
    return ratio if higher_is_better else (1 / ratio if ratio > 0 else math.inf)


def speed_interval(c: Comparison, higher_is_better: bool) -> tuple[float, float, float]:
    """A comparison as speed ratios (estimate, low, high), above 1 faster."""
    if higher_is_better:
        return c.ratio, c.ci_low, c.ci_high
    return speed(c.ratio, False), speed(c.ci_high, False), speed(c.ci_low, False)


def factor(x: float) -> str:
    """A speed ratio as a factor: 0.15x, 2.62x, 37x, 120x (as the table prints it, so the texts agree). One that
    would print as 1.00x but is not 1 shows its side of 1 with a third decimal: 0.999x, 1.001x (never above or
    below what it is)."""
    if x >= 10:
        return f"{x:,.0f}x"
    if x != 1 and f"{x:.2f}" == "1.00":
        return f"{math.floor(x * 1000) / 1000:.3f}x" if x < 1 else f"{math.ceil(x * 1000) / 1000:.3f}x"
    return f"{x:.2f}x"


def factor_interval(s: float, lo: float, hi: float) -> str:
    """'1.72x [1.24x to 2.41x]': a speed ratio and its interval, in the one unit every view uses (factors)."""
    return f"{factor(s)} [{factor(lo)} to {factor(hi)}]"


PAIR_FAMILY = "95%, this pair alone"  # the label of an interval of a pair the table does not show


def speed_words(c: Comparison, higher_is_better: bool) -> str:
    """'1.16x as fast [1.09x to 1.24x]': the estimate and its interval in speed as factors (the one unit of
    every view), whatever the metric's direction."""
    s, lo, hi = speed_interval(c, higher_is_better)
    return f"{factor(s)} as fast [{factor(lo)} to {factor(hi)}]"


def fmt_p(p: float) -> str:
    """A p-value as 'p=0.012', or 'p<0.001' when it would print as zero."""
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def verdict(row: Row, baseline: str | None) -> tuple[str, str]:
    """The comparison with the baseline as text, and its tone: neutral, good or bad."""
    c, m = row.comparison, row.primary.metric
    if row.cell.config.name == baseline:
        return "baseline", "neutral"
    if c is None:
        return "-", "neutral"
    if not c.significant:
        return f"not significant: {speed_words(c, m.higher_is_better)}", "neutral"
    faster = speed(c.ratio, m.higher_is_better) > 1
    return f"{speed_words(c, m.higher_is_better)} {fmt_p(c.p_adjusted)}", "good" if faster else "bad"


MAX_VALUES_SHOWN = 12


def values_text(row: Row, limit: int | None = MAX_VALUES_SHOWN) -> str:
    """The primary figure of every run or slice, in the order measured (the first `limit`)."""
    vals = row.primary.values
    shown = vals if limit is None else vals[:limit]
    text = " ".join(fmt_value(v, row.primary.metric) for v in shown)
    if len(vals) > len(shown):
        text += f" ... ({len(vals) - len(shown)} more in --json)"
    return text


def sanitized(row: Row) -> str:
    """The mean without the highest and lowest value (R4's sanitized mean)."""
    s = row.primary.summary
    return fmt_value(s.sanitized_mean, row.primary.metric) if s else "-"


def method_lines(view: WorkloadView, full: bool = True) -> list[str]:
    """How the view's cells were measured, what this run can resolve, and where its variance came from; a race's
    in one line and the resolution unless `full` (its log: who left when, its images, what was flagged)."""
    if view.race is not None:
        return race_method_lines(view, full)
    if not full:
        return resolution_line(view, short=True)
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
        out.append(f"resolution: differences under {med:.0%} cannot be told apart on this machine in this run"
                   f"{by_configuration(lo, hi)}")
    comps = [r.comparison for r in view.rows if isinstance(r.comparison, PairedComparison) and r.comparison.blocks > 1]
    if comps:
        between_blocks = sum(c.block_share for c in comps) / len(comps)
        between_rounds = sum(c.round_share for c in comps) / len(comps)
        out.append(f"variance of the ratios: {between_blocks:.0%} between blocks (one mkfs against the next), "
                   f"{between_rounds:.0%} between rounds (one moment against the next), "
                   f"{1 - between_blocks - between_rounds:.0%} slice to slice")
    stalled = sum(r.comparison.stalled for r in view.rows if isinstance(r.comparison, PairedComparison))
    if stalled:
        out.append(f"{stalled} slice(s) measured nothing at all (a stall) and are left out of the ratios")
    return out


def status_detail(row: Row) -> str:
    """Why a cell that is not ok has no values (its notes, without repeating the status)."""
    return ("; ".join(row.notes) or "no measured run").removeprefix(row.status + ": ")


SPACE = MetricDef("space", "B", False)
SPACE_ROWS = ("after mkfs", "data in place", "peak in the run", "size of the filesystem", "free with the data in place")


def breakdown_cells(view: WorkloadView, space: bool = True) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The breakdown as configurations (columns) and (label, cells) rows: median, and vs the baseline.

    Rows are the workload's breakdown metrics (phases, sync methods) and (with `space`) the space used.
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
        out.append((f"{d.name} ({d.unit}, {direction(d)})" if d.unit != "s" else f"{d.name} ({direction(d)})", cells))
    for label in SPACE_ROWS if space else ():
        if any(label in r.space for r in rows):
            head = label if label.startswith(("size", "free")) else f"space used {label}"
            out.append((head, [fmt_bytes(r.space[label]) if label in r.space else "-" for r in rows]))
    return [r.cell.config.name for r in rows], out


def scored(rows: list[tuple[str, list[str]]]) -> bool:
    """Does the breakdown hold a score against the baseline, '(n)', to name in its title?"""
    return any(c.endswith(")") and "(" in c for _, cells in rows for c in cells)


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

        def n(k: str, m: dict[str, float] = m) -> str:
            return f"{int(m.get(k, 0)):,}"
        out.append((r.cell.config.name, [
            n("crash_states"), n("crash_states_lost"), n("crash_max_lost"), f"{m.get('crash_max_lost_s', 0):.2f} s",
            n("crash_unmountable"), n("crash_fsck_failed"), n("crash_db_failed"), n("crash_inconsistent"),
            c.short()], c.lost_any))
    return out


def crash_model(view: WorkloadView) -> str:
    return next((r.crash.model for r in view.rows if r.crash and r.crash.model), "")


def live_line(run: RunRecord | AnalysedRun) -> str:
    """What a report of a run still being executed says first: how far it is, and that its figures are partial."""
    analysis = analysed(run)
    rows = [r for v in analysis.views for r in v.rows]
    what = "slices" if any(r.slice_s for r in rows) else "runs"
    done = sum(1 for t in analysis.record.trials if t.ok and t.phase == "measured")
    return (f"still running ({done} {what} so far); partial results: the answer comes when the run ends "
            f"(then: pickfs report {analysis.record.id})")
