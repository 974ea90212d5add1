"""Terminal tables (pure: builds Rich renderables; the console prints them)."""

from __future__ import annotations

import time

from rich.console import Group
from rich.table import Table
from rich.text import Text

from pickfs.model import MetricDef, RunRecord
from pickfs.report.crash_text import crash_details, crash_statements
from pickfs.report.latency import latency_tables
from pickfs.report.recommend import recommend, recommended
from pickfs.report.scaling import scaling_text
from pickfs.report.text import (
    CRASH_COLUMNS,
    INTERVAL_HEAD,
    breakdown_cells,
    crash_cells,
    direction,
    fmt_seconds,
    fmt_value,
    interval,
    method_lines,
    sanitized,
    status_detail,
    values_text,
    verdict,
)
from pickfs.report.views import Row, WorkloadView, build_views, risk_legend

P99_METRICS = ("lat_p99", "sync_p99", "write_p99")


def _p99(row: Row) -> str:
    for name in P99_METRICS:
        mv = row.metric(name)
        if mv is not None and mv.summary is not None:
            return fmt_seconds(mv.summary.median)
    return "-"


def _notes(row: Row) -> Text:
    text = Text()
    if row.status != "ok":
        text.append(row.status, style="bold red")
        text.append(": " + status_detail(row))
        return text
    if row.flags:
        text.append("⚠ " + ", ".join(row.flags), style="yellow")
    if row.notes:
        if text:
            text.append("; ")
        text.append("; ".join(row.notes), style="dim")
    return text


TONES = {"neutral": "dim", "good": "green", "bad": "red"}


def workload_table(view: WorkloadView) -> Table:
    metric = view.rows[0].primary.metric if view.rows else MetricDef("value", "", True)
    settings = ", ".join(f"{k}={v}" for k, v in sorted(view.settings.items()))
    title = f"{view.label} ({settings})" if settings else view.label
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("configuration")
    table.add_column(f"median {metric.unit} ({direction(metric)})", justify="right")
    table.add_column(INTERVAL_HEAD, justify="right")
    table.add_column("sanitized mean", justify="right")
    table.add_column(f"vs {view.baseline or 'baseline'}", justify="right")
    table.add_column("against the baseline (Holm)")
    table.add_column("p99 latency", justify="right")
    table.add_column("slices" if any(r.slice_s for r in view.rows) else "runs", justify="right")
    table.add_column("notes", overflow="fold")
    chosen = recommended(view)
    for row in view.rows:
        s = row.primary.summary
        mark = "★ " if row.cell.config.name == chosen else ""
        name = Text(mark + row.cell.config.name, style="bold" if mark else "")
        rel = "-" if row.relative is None else f"{row.relative:.1f}"
        text, tone = verdict(row, view.baseline)
        table.add_row(name, fmt_value(s.median if s else None, metric), interval(row), sanitized(row), rel,
                      Text(text, style=TONES[tone]), _p99(row), str(s.n if s else 0), _notes(row))
    return table


def breakdown_table(view: WorkloadView) -> Table | None:
    configs, rows = breakdown_cells(view)
    if not rows or not configs:
        return None
    note = f"; (n) = {view.baseline} is 100" if view.baseline else ""
    table = Table(title=f"{view.label}: medians per configuration{note}", title_justify="left")
    table.add_column("")
    for name in configs:
        table.add_column(name, justify="right")
    for label, cells in rows:
        table.add_row(label, *cells)
    return table


def crash_table(view: WorkloadView) -> list:
    rows = crash_cells(view)
    if not rows:
        return []
    table = Table(title=f"{view.label}: crash test (acknowledged commits after a simulated power cut)",
                  title_justify="left")
    table.add_column("configuration")
    for col in CRASH_COLUMNS:
        table.add_column(col, justify="left" if col == "verdict" else "right")
    for name, cells, lost in rows:
        table.add_row(name, *cells[:-1], Text(cells[-1], style="red" if lost else "green"))
    return [table]


def explanation_block(view: WorkloadView) -> list[Text]:
    """Every configuration's full explanation (--explain)."""
    out = []
    for row in view.rows:
        if row.explanation:
            out.append(Text(f"why {row.cell.config.name}:", style="bold"))
            out.extend(Text(f"  {line}") for line in row.explanation)
    return out


def matters(view: WorkloadView) -> list[str]:
    """The configurations worth a line of explanation: those significantly different from the baseline,
    and the one recommended."""
    chosen = recommended(view)
    return [r.cell.config.name for r in view.rows
            if r.cell.config.name == chosen or (r.comparison is not None and r.comparison.significant)]


def explanation_lines(view: WorkloadView) -> list[Text]:
    """One line of explanation per configuration that matters (its first: the device's writes and flushes)."""
    names = set(matters(view))
    return [Text(f"why {r.cell.config.name}: {r.explanation[0]}", style="dim")
            for r in view.rows if r.cell.config.name in names and r.explanation]


def values_lines(view: WorkloadView) -> list[Text]:
    """Each configuration's figures run by run (or slice by slice), in the order measured."""
    rows = [r for r in view.rows if r.primary.values]
    if not rows:
        return []
    what = "slice" if any(r.slice_s for r in rows) else "run"
    width = max(len(r.cell.config.name) for r in rows)
    head = Text(f"per {what} ({rows[0].primary.metric.unit}, in the order measured):", style="dim")
    return [head, *(Text(f"  {r.cell.config.name:<{width}}  {values_text(r)}", style="dim") for r in rows)]


def render_run(record: RunRecord, explain: bool = False) -> Group:
    """The tables, the method, one line of explanation per configuration that matters, and the
    recommendation last, where it does not scroll away; explain=True prints every explanation in full."""
    views = build_views(record)
    parts: list = []
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.created))
    host = record.host
    parts.append(Text(f"run {record.id} ({record.status}), {when}, {host.get('hostname', '?')}: "
                      f"{host.get('os', '?')}, kernel {host.get('kernel', '?')}, "
                      f"images on {host.get('fingerprint', {}).get('mount.fstype', '?')}", style="dim"))
    for w in record.plan.get("warnings", []):
        parts.append(Text(f"warning: {w}", style="yellow"))
    for view in views:
        measured = view.measured
        if measured:
            parts.append(workload_table(view))
            details = breakdown_table(view)
            if details is not None:
                parts.append(details)
        parts.extend(crash_table(view))
        parts.extend(Text(line, style="dim") for line in crash_details(view))  # crash-fidelity work
        if measured:
            parts.extend(Text(line, style="dim") for line in method_lines(view))
            parts.extend(values_lines(view))
            parts.extend(explanation_block(view) if explain else explanation_lines(view))
            parts.append(Text("recommendation: " + " ".join(recommend(view)), style="bold"))
    parts.extend(Text(block) for block in scaling_text(record).split("\n\n") if block)  # issue 13: report/scaling.py
    parts.extend(latency_tables(record))  # fixed rate and the capacity search: report/latency.py
    parts.extend(Text(line, style="dim") for line in crash_statements(views))  # the model in force, what none shows
    legend = risk_legend(views)
    if legend:
        parts.append(Text("⚠ trades safety for speed:", style="yellow"))
        parts.extend(Text(f"  {line}") for line in legend)
    for note in record.notes:
        parts.append(Text(f"note: {note}", style="dim"))
    return Group(*parts)
