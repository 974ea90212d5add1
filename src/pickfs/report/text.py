"""Texts every renderer shows the same way (pure): values, intervals, verdicts, notes."""

from __future__ import annotations

import math

from pickfs.model import MetricDef
from pickfs.report.views import Row


def fmt_seconds(value: float) -> str:
    if value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.2f} ms"
    return f"{value:.2f} s"


def fmt_value(value: float | None, metric: MetricDef) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if metric.unit == "s":
        return fmt_seconds(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


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
        return f"no significant difference (p={c.p_adjusted:.2f})", "neutral"
    better = (c.ratio > 1) == m.higher_is_better
    word = ("faster" if better else "slower") if m.higher_is_better else ("better" if better else "worse")
    return f"{word} ×{c.ratio:.2f} [{c.ci_low:.2f}-{c.ci_high:.2f}] p={c.p_adjusted:.3f}", \
        "good" if better else "bad"


def status_detail(row: Row) -> str:
    """Why a cell that is not ok has no values (its notes, without repeating the status)."""
    return ("; ".join(row.notes) or "no measured run").removeprefix(row.status + ": ")
