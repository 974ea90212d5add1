"""Terminal tables (pure: builds Rich renderables; the console prints them)."""

from __future__ import annotations

import math
import time

from rich.console import Group
from rich.table import Table
from rich.text import Text

from pickfs.model import MetricDef, RunRecord
from pickfs.report.recommend import recommend
from pickfs.report.views import Row, WorkloadView, build_views


def fmt_value(value: float | None, metric: MetricDef) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if metric.unit == "s":
        return fmt_seconds(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def fmt_seconds(value: float) -> str:
    if value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.2f} ms"
    return f"{value:.2f} s"


def _interval(row: Row) -> str:
    s = row.primary.summary
    if s is None:
        return "-"
    if s.n < 2:
        return f"{fmt_value(s.mean, row.primary.metric)} (1 run)"
    half = (s.ci_high - s.ci_low) / 2
    pct = f" ({half / s.mean:.1%})" if s.mean else ""
    return f"{fmt_value(s.mean, row.primary.metric)} ± {fmt_value(half, row.primary.metric)}{pct}"


def _p99(row: Row) -> str:
    mv = row.metric("lat_p99")
    if mv is None or mv.summary is None:
        return "-"
    return fmt_seconds(mv.summary.median)


def _notes(row: Row) -> Text:
    text = Text()
    if row.status != "ok":
        detail = "; ".join(row.notes) or "no measured run"
        text.append(row.status, style="bold red")
        text.append(": " + detail.removeprefix(row.status + ": "))
        return text
    if row.flags:
        text.append("⚠ " + ", ".join(row.flags), style="yellow")
    if row.notes:
        if text:
            text.append("; ")
        text.append("; ".join(row.notes), style="dim")
    return text


def verdict(row: Row, metric: MetricDef, baseline: str | None) -> Text:
    c = row.comparison
    if row.cell.config.name == baseline:
        return Text("baseline", style="dim")
    if c is None:
        return Text("-")
    if not c.significant:
        return Text(f"no significant difference (p={c.p_adjusted:.2f})", style="dim")
    better = (c.ratio > 1) == metric.higher_is_better
    word = ("faster" if better else "slower") if metric.higher_is_better or metric.unit == "s" else \
        ("better" if better else "worse")
    return Text(f"{word} ×{c.ratio:.2f} [{c.ci_low:.2f}-{c.ci_high:.2f}] p={c.p_adjusted:.3f}",
                style="green" if better else "red")


def workload_table(view: WorkloadView) -> Table:
    metric = view.rows[0].primary.metric if view.rows else MetricDef("value", "", True)
    settings = ", ".join(f"{k}={v}" for k, v in sorted(view.settings.items()))
    title = f"{view.label} ({settings})" if settings else view.label
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("configuration")
    table.add_column(f"median {metric.unit}", justify="right")
    table.add_column("mean ± 95% CI", justify="right")
    table.add_column(f"vs {view.baseline or 'baseline'}", justify="right")
    table.add_column("significance (Holm)")
    table.add_column("p99 latency", justify="right")
    table.add_column("runs", justify="right")
    table.add_column("notes", overflow="fold")
    ok_rows = [r for r in view.rows if r.primary.summary]
    best = None
    if ok_rows:
        pick = max if metric.higher_is_better else min
        best = pick(ok_rows, key=lambda r: r.primary.summary.median).cell.config.name
    for row in view.rows:
        s = row.primary.summary
        name = Text(row.cell.config.name, style="bold" if row.cell.config.name == best else "")
        rel = "-" if row.relative is None else f"{row.relative:.1f}"
        table.add_row(name, fmt_value(s.median if s else None, metric), _interval(row), rel,
                      verdict(row, metric, view.baseline), _p99(row), str(s.n if s else 0), _notes(row))
    return table


def risk_legend(views: list[WorkloadView]) -> list[str]:
    seen: list[str] = []
    for v in views:
        for r in v.rows:
            for risk in r.risks:
                if risk not in seen:
                    seen.append(risk)
    return seen


def explanation_block(view: WorkloadView) -> list[Text]:
    out = []
    for row in view.rows:
        if row.explanation:
            out.append(Text(f"why {row.cell.config.name}:", style="bold"))
            out.extend(Text(f"  {line}") for line in row.explanation)
    return out


def render_run(record: RunRecord, explain: bool = True) -> Group:
    views = build_views(record)
    parts: list = []
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.created))
    host = record.host
    parts.append(Text(f"run {record.id} ({record.status}), {when}, {host.get('hostname', '?')}: "
                      f"{host.get('os', '?')}, kernel {host.get('kernel', '?')}, "
                      f"images on {host.get('workdir_backing', {}).get('fstype', '?')}", style="dim"))
    for w in record.plan.get("warnings", []):
        parts.append(Text(f"warning: {w}", style="yellow"))
    for view in views:
        parts.append(workload_table(view))
        if explain:
            parts.extend(explanation_block(view))
        parts.append(Text("recommendation: " + " ".join(recommend(view)), style="bold"))
    legend = risk_legend(views)
    if legend:
        parts.append(Text("⚠ trades safety for speed:", style="yellow"))
        parts.extend(Text(f"  {line}") for line in legend)
    for note in record.notes:
        parts.append(Text(f"note: {note}", style="dim"))
    return Group(*parts)
