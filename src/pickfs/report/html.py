"""A self-contained HTML report (pure): plotly charts with plotly.js embedded, so it works offline."""

from __future__ import annotations

import html
import json
import statistics
import time
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from pickfs.model import RunRecord, Trial
from pickfs.report.recommend import recommend
from pickfs.report.scaling import scaling_html
from pickfs.report.text import (CRASH_COLUMNS, breakdown_cells, crash_cells, crash_model, fmt_value, interval,
                                method_lines, status_detail, verdict)
from pickfs.report.views import Row, WorkloadView, build_views, risk_legend

SAFE, UNSAFE, FAILED = "#2b8a3e", "#e8590c", "#868e96"
_CONFIG = {"displaylogo": False, "responsive": True}

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1200px;color:#212529;
padding:0 1rem}h1{font-size:1.6rem}h2{margin-top:2.5rem;border-bottom:1px solid #dee2e6}table{border-collapse:collapse;
margin:1rem 0;font-size:.9rem}th,td{padding:.3rem .6rem;border-bottom:1px solid #e9ecef;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}.risk{color:#e8590c}.dim{color:#868e96}.good{color:#2b8a3e}
.bad{color:#c92a2a}.rec{background:#f1f3f5;padding:.8rem 1rem;border-left:4px solid #2b8a3e}
.why{font-family:ui-monospace,monospace;font-size:.85rem;white-space:pre-wrap;background:#f8f9fa;padding:.6rem}
.chart{min-height:380px}
"""

_PROBE = """
window.pickfsErrors = [];
window.addEventListener('error', function (e) { window.pickfsErrors.push(String(e.message)); });
(function () {
  var original = console.error;
  console.error = function () {
    window.pickfsErrors.push(Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
})();
window.addEventListener('load', function () {
  setTimeout(function () {
    var charts = document.querySelectorAll('.plotly-graph-div');
    var drawn = Array.prototype.filter.call(charts, function (c) { return c.querySelector('.main-svg'); });
    document.body.setAttribute('data-charts', String(charts.length));
    document.body.setAttribute('data-charts-drawn', String(drawn.length));
    document.body.setAttribute('data-errors', window.pickfsErrors.join(' | '));
  }, 300);
});
"""


def _e(text: Any) -> str:
    return html.escape(str(text))


def _fig_html(fig: go.Figure) -> str:
    fig.update_layout(template="plotly_white", margin={"l": 60, "r": 20, "t": 50, "b": 60}, height=420)
    return f'<div class="chart">{fig.to_html(full_html=False, include_plotlyjs=False, config=_CONFIG)}</div>'


def _color(row: Row) -> str:
    return FAILED if row.status != "ok" else UNSAFE if row.risks else SAFE


def throughput_chart(view: WorkloadView) -> go.Figure:
    rows = [r for r in view.rows if r.primary.summary]
    metric = rows[0].primary.metric
    fig = go.Figure(go.Bar(
        x=[r.cell.config.name for r in rows],
        y=[r.primary.summary.mean for r in rows],
        error_y={"type": "data", "symmetric": False,
                 "array": [r.primary.summary.ci_high - r.primary.summary.mean for r in rows],
                 "arrayminus": [r.primary.summary.mean - r.primary.summary.ci_low for r in rows]},
        marker_color=[_color(r) for r in rows],
        text=[f"{r.relative:.0f}" if r.relative is not None else "" for r in rows], textposition="outside",
        hovertext=[f"median {fmt_value(r.primary.summary.median, metric)}; " + verdict(r, view.baseline)[0]
                   for r in rows],
    ))
    fig.update_layout(title=f"{view.label}: mean {metric.unit} with 95% interval; label = median vs "
                            f"{view.baseline or 'baseline'} (=100); orange = trades safety for speed",
                      yaxis_title=metric.unit)
    return fig


def latency_chart(view: WorkloadView) -> go.Figure | None:
    fig = go.Figure()
    for name, label in (("lat_p50", "p50"), ("lat_p95", "p95"), ("lat_p99", "p99"), ("lat_max", "max")):
        xs, ys = [], []
        for r in view.rows:
            mv = r.metric(name)
            if mv and mv.values:
                xs += [r.cell.config.name] * len(mv.values)
                ys += [v * 1000 for v in mv.values]
        if ys:
            fig.add_trace(go.Box(x=xs, y=ys, name=label, boxpoints="all", jitter=0.3))
    if not fig.data:
        return None
    fig.update_layout(title=f"{view.label}: commit latency per run (ms, log scale)", boxmode="group",
                      yaxis_type="log", yaxis_title="ms")
    return fig


def breakdown_chart(view: WorkloadView) -> go.Figure | None:
    """Median of each breakdown metric (phase times, sync methods) per configuration, grouped."""
    if not view.breakdown:
        return None
    fig = go.Figure()
    for r in view.rows:
        xs, ys = [], []
        for d in view.breakdown:
            mv = r.metric(d.name)
            if mv and mv.summary:
                xs.append(d.name)
                ys.append(mv.summary.median)
        if ys:
            fig.add_trace(go.Bar(x=xs, y=ys, name=r.cell.config.name))
    if not fig.data:
        return None
    unit = view.breakdown[0].unit
    fig.update_layout(title=f"{view.label}: median per {'phase' if unit == 's' else 'method'} ({unit})",
                      barmode="group", yaxis_title=unit)
    return fig


def _breakdown_table(view: WorkloadView) -> str:
    configs, rows = breakdown_cells(view)
    if not rows or not configs:
        return ""
    head = "<tr><th></th>" + "".join(f"<th>{_e(c)}</th>" for c in configs) + "</tr>"
    body = "".join("<tr><td>" + _e(label) + "</td>" + "".join(f"<td class=num>{_e(c)}</td>" for c in cells) + "</tr>"
                   for label, cells in rows)
    note = f" ((n): {_e(view.baseline)} = 100)" if view.baseline else ""
    return f"<p class=dim>Medians per configuration{note}</p><table>{head}{body}</table>"


def _crash_table(view: WorkloadView) -> str:
    rows = crash_cells(view)
    if not rows:
        return ""
    head = "<tr><th>configuration</th>" + "".join(f"<th>{_e(c)}</th>" for c in CRASH_COLUMNS) + "</tr>"
    body = "".join(f"<tr><td>{_e(name)}</td>" + "".join(f"<td class=num>{_e(c)}</td>" for c in cells[:-1])
                   + f"<td class={'bad' if lost else 'good'}>{_e(cells[-1])}</td></tr>" for name, cells, lost in rows)
    return (f"<h3>Crash test</h3><p class=dim>Acknowledged commits after a simulated power cut. Model: "
            f"{_e(crash_model(view))}.</p><table>{head}{body}</table>")


def _median_trial(record: RunRecord, row: Row) -> Trial | None:
    name = row.primary.metric.name
    trials = [t for t in record.trials if t.cell_index == row.cell.index and t.phase == "measured" and t.ok
              and name in t.metrics]
    if not trials:
        return None
    med = statistics.median(t.metrics[name] for t in trials)
    return min(trials, key=lambda t: abs(t.metrics[name] - med))


def _per_second(trial: Trial) -> list[float]:
    try:
        series = json.loads(trial.raw_output).get("per_second", [])
    except (ValueError, AttributeError):
        return []
    whole = int(trial.elapsed_s)  # the last bucket is a partial second
    return [float(v) for v in series[:whole]] if whole else []


PALETTE = ("#1c7ed6", "#e8590c", "#2b8a3e", "#ae3ec9", "#f08c00", "#0ca678", "#c2255c", "#5c7cfa",
           "#868e96", "#74b816", "#d6336c", "#15aabf")


def timeline_chart(record: RunRecord, view: WorkloadView) -> go.Figure | None:
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=("throughput per second", "device utilisation", "CPU iowait"))
    drawn = False
    for i, row in enumerate(view.rows):
        t = _median_trial(record, row)
        if t is None:
            continue
        per_s = _per_second(t)
        name = row.cell.config.name
        style = {"name": name, "legendgroup": name, "line": {"color": PALETTE[i % len(PALETTE)]}}
        if per_s:
            fig.add_trace(go.Scatter(x=list(range(1, len(per_s) + 1)), y=per_s, mode="lines+markers", **style),
                          row=1, col=1)
            drawn = True
        series = t.monitor.get("series", {})
        if series.get("disk_util"):
            fig.add_trace(go.Scatter(x=series["t"], y=series["disk_util"], showlegend=not per_s, mode="lines",
                                     **style), row=2, col=1)
            drawn = True
        if series.get("iowait"):
            fig.add_trace(go.Scatter(x=series["t"], y=series["iowait"], showlegend=False, mode="lines", **style),
                          row=3, col=1)
    if not drawn:
        return None
    fig.update_yaxes(tickformat=".0%", row=2, col=1)
    fig.update_yaxes(tickformat=".0%", row=3, col=1)
    fig.update_xaxes(title_text="seconds into the measured run (the run nearest the median)", row=3, col=1)
    fig.update_layout(title=f"{view.label}: over time", height=620)
    return fig


SAFETY_LEVELS = ("lost commits in a crash test", "can lose acknowledged commits (settings)",
                 "no setting known to lose commits", "none lost in a crash test")


def safety_level(row: Row) -> str:
    if row.crash_lost:
        return SAFETY_LEVELS[0]
    if row.risks:
        return SAFETY_LEVELS[1]
    if row.crash and not row.crash.error:
        return SAFETY_LEVELS[3]
    return SAFETY_LEVELS[2]


def safety_chart(view: WorkloadView) -> go.Figure:
    """Speed against safety: the speed runs joined with the crash test (or the settings) per configuration."""
    rows = [r for r in view.rows if r.primary.summary]
    metric = rows[0].primary.metric
    fig = go.Figure()
    for level in SAFETY_LEVELS:
        group = [r for r in rows if safety_level(r) == level]
        if group:
            fig.add_trace(go.Scatter(
                x=[r.primary.summary.median for r in group], y=[level] * len(group), mode="markers+text",
                text=[r.cell.config.name for r in group], textposition="top center", name=level,
                marker={"color": UNSAFE if level in SAFETY_LEVELS[:2] else SAFE, "size": 14},
                hovertext=["; ".join([*r.risks, *([r.crash.verdict()] if r.crash else [])]) or "no known risk"
                           for r in group]))
    fig.update_layout(title=f"{view.label}: speed against safety (median {metric.unit}; safety from the crash "
                            "test where one ran, else from the settings)",
                      xaxis_title=f"median {metric.unit}", showlegend=False)
    fig.update_yaxes(categoryorder="array", categoryarray=list(SAFETY_LEVELS))
    return fig


def _summary_table(view: WorkloadView) -> str:
    metric = view.rows[0].primary.metric if view.rows else None
    head = (f"<tr><th>configuration</th><th>median {_e(metric.unit if metric else '')}</th><th>mean ± 95% CI</th>"
            f"<th>vs {_e(view.baseline or 'baseline')}</th><th>significance (Holm)</th>"
            f"<th>{'slices' if any(r.slice_s for r in view.rows) else 'runs'}</th><th>notes</th></tr>")
    body = []
    for r in view.rows:
        s = r.primary.summary
        text, tone = verdict(r, view.baseline)
        cls = {"neutral": "dim", "good": "good", "bad": "bad"}[tone]
        flags = "".join(f'<span class="risk">⚠ {_e(f)}</span> ' for f in r.flags)
        notes = flags + _e("; ".join(r.notes)) if r.status == "ok" else f"<b>{_e(r.status)}</b>: {_e(status_detail(r))}"
        body.append(f"<tr><td>{_e(r.cell.config.name)}</td><td class=num>{fmt_value(s.median if s else None, r.primary.metric)}</td>"
                    f"<td class=num>{_e(interval(r))}</td><td class=num>{'-' if r.relative is None else f'{r.relative:.1f}'}</td>"
                    f"<td class={cls}>{_e(text)}</td><td class=num>{s.n if s else 0}</td><td>{notes}</td></tr>")
    return f"<table>{head}{''.join(body)}</table>"


def _settings_table(record: RunRecord) -> str:
    rows = []
    for c in record.plan["configs"]:
        rows.append(f"<tr><td>{_e(c['name'])}</td><td>{_e(c['fstype'])}</td><td>{_e(' '.join(c['mkfs_options']) or '-')}</td>"
                    f"<td>{_e(','.join(c['mount_options']) or '-')}</td><td>{_e(c['scheduler'] or 'default')}</td>"
                    f"<td>{_e(c['description'])}</td></tr>")
    return ("<table><tr><th>configuration</th><th>filesystem</th><th>mkfs options</th><th>mount options</th>"
            f"<th>scheduler</th><th>what</th></tr>{''.join(rows)}</table>")


def _host_table(record: RunRecord) -> str:
    facts = {k: v for k, v in record.host.items() if not isinstance(v, dict)}
    facts.update({f"storage under the images: {k}": v for k, v in record.host.get("fingerprint", {}).items()
                  if not k.startswith("host.")})
    facts.update({f"tool: {k}": v for k, v in record.host.get("tools", {}).items()})
    rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in facts.items())
    return f"<table>{rows}</table>"


def render_html(record: RunRecord) -> str:
    views = build_views(record)
    method = record.plan.get("method", {})
    sliced = any(r.slice_s for v in views for r in v.rows)
    how = ("configurations measured side by side (each workload's method is stated under its recommendation)"
           if sliced else f"{method.get('runs')} measured runs per configuration after {method.get('warmup')} "
           "warm-up, each on a freshly made filesystem")
    parts = [f"<h1>pickfs run {_e(record.id)}</h1>",
             f"<p class=dim>{_e(time.strftime('%Y-%m-%d %H:%M', time.localtime(record.created)))}, "
             f"{_e(record.host.get('hostname', '?'))}, status {_e(record.status)}; {_e(how)}.</p>"]
    for w in record.plan.get("warnings", []):
        parts.append(f'<p class="risk">warning: {_e(w)}</p>')
    for view in views:
        settings = ", ".join(f"{k}={v}" for k, v in sorted(view.settings.items()))
        parts.append(f"<h2>{_e(view.label)}</h2><p class=dim>{_e(settings)}</p>")
        if view.measured:
            parts.append(f'<p class="rec">{_e(" ".join(recommend(view)))}</p>')
            parts.append("".join(f"<p class=dim>{_e(line)}</p>" for line in method_lines(view)))
            parts.append(_summary_table(view))
        parts.append(_breakdown_table(view))
        parts.append(_crash_table(view))
        if any(r.primary.summary for r in view.rows):
            parts.append(_fig_html(throughput_chart(view)))
            parts.append(_fig_html(safety_chart(view)))
            for fig in (breakdown_chart(view), latency_chart(view), timeline_chart(record, view)):
                if fig is not None:
                    parts.append(_fig_html(fig))
        why = [f"{r.cell.config.name}:\n" + "\n".join(f"  {line}" for line in r.explanation)
               for r in view.rows if r.explanation]
        if why:
            parts.append(f"<h3>Why</h3><div class=why>{_e(chr(10).join(why))}</div>")
    risks = risk_legend(views)
    if risks:
        parts.append("<h2>Settings that trade safety for speed</h2><ul>"
                     + "".join(f"<li>{_e(r)}</li>" for r in risks) + "</ul>"
                     "<p class=dim>Safety here is judged from the settings; a simulated power cut would measure it.</p>")
    parts.append(scaling_html(record))  # issue 13: throughput and p99 against clients (report/scaling.py)
    parts.append(f"<h2>Configurations</h2>{_settings_table(record)}")
    parts.append(f"<h2>Host</h2>{_host_table(record)}")
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<title>pickfs run {_e(record.id)}</title><style>{_STYLE}</style>"
            f"<script>{_PROBE}</script><script>{get_plotlyjs()}</script></head><body>"
            + "\n".join(parts) + "</body></html>\n")
