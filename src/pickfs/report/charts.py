"""The HTML report's charts (pure): plotly figures built from the views, chosen per kind of workload.

Every ratio is drawn as speed against the baseline (a time ratio inverted, so right is always
faster) on a logarithmic axis, where an interval of a ratio is symmetric and never crosses zero.
Configuration names are axis categories, one row each, so no two labels can overlap.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pickfs.analysis.answer import recommended
from pickfs.analysis.latency import CapacityRow, RateView
from pickfs.analysis.views import FILE_TREE, Row, WorkloadView
from pickfs.fsfacts import is_reference as is_reference_type
from pickfs.model import RunRecord, Trial
from pickfs.report.colours import BAD, BASE, GOOD, PALETTE, SAFE, SAME, UNSAFE, colour_of
from pickfs.report.latency import CURVE_QS, capacity_text, percentile_curve
from pickfs.report.text import direction, factor, fmt_value, speed, speed_interval, verdict
from pickfs.stats.capacity import LatencyTarget
from pickfs.stats.latency import Slice, merge

BAND = "rgba(28,126,214,0.12)"
NICE_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0,
              5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0)
ROW_PX = 34  # height per configuration in the row charts


def is_reference(row: Row) -> bool:
    """An upper bound or yardstick (in memory, the raw device), not a candidate."""
    return is_reference_type(row.cell.config.fstype)


def label(row: Row, chosen: str | None) -> str:
    """A configuration's name as a row label: ⚠ when a setting trades safety, ★ when recommended."""
    name = row.cell.config.name
    return name + (" ⚠" if row.unsafe else "") + (" ★" if name == chosen else "")


def log_axis(lo: float, hi: float) -> dict[str, Any]:
    """A log axis over [lo, hi] (speed ratios) with ticks at round ratios, written as ×r."""
    lo, hi = min(lo, 1.0) / 1.08, max(hi, 1.0) * 1.08
    gap = (math.log10(hi) - math.log10(lo)) / 8  # ticks at least an eighth of the axis apart, 1 always
    ticks = [1.0]
    for t in sorted((t for t in NICE_TICKS if lo <= t <= hi and t != 1.0), key=lambda t: abs(math.log10(t))):
        if all(abs(math.log10(t) - math.log10(u)) >= gap for u in ticks):
            ticks.append(t)
    for end in (max((t for t in NICE_TICKS if t <= hi), default=None), min((t for t in NICE_TICKS if t >= lo),
                                                                          default=None)):
        # a tick near each end, so the labels reach every interval drawn (a close neighbour gives way)
        if end is not None and lo <= end <= hi and end not in ticks:
            ticks = [u for u in ticks if u == 1.0 or abs(math.log10(end) - math.log10(u)) >= gap] + [end]
    ticks.sort()
    return {"type": "log", "range": [math.log10(lo), math.log10(hi)], "tickvals": ticks,
            "ticktext": [f"×{t:g}" for t in ticks], "zeroline": False, "tickangle": 0}


def si(value: float) -> str:
    """A tick label with its magnitude: 0.5, 2, 20, 500, 1k, 2k, 50k, 1M."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def value_ticks(values: Sequence[float]) -> dict[str, Any]:
    """A log axis over positive values with ticks at 1, 2 and 5 of each decade, every one labelled in full
    (1k, 2k, 5k, 10k: never a bare '2' or '5' standing for a minor tick)."""
    pos = [v for v in values if v and v > 0]
    if not pos:
        return {"type": "log"}
    lo, hi = min(pos) / 1.15, max(pos) * 1.15
    ticks = [m * 10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if lo <= t <= hi]
    if len(ticks) > 8:  # a wide range: decades only
        ticks = [t for t in ticks if f"{t:e}".startswith("1")]
    if len(ticks) < 2:  # a narrow range: its ends and middle, rounded
        ticks = sorted({float(f"{x:.2g}") for x in (lo * 1.1, math.sqrt(lo * hi), hi / 1.1)})
    return {"type": "log", "range": [math.log10(lo), math.log10(hi)], "tickvals": ticks,
            "ticktext": [si(t) for t in ticks]}


def speed_of(row: Row, view: WorkloadView) -> tuple[float, float, float] | None:
    """The row's speed against the baseline with its interval (1 for the baseline itself)."""
    higher = row.primary.metric.higher_is_better
    if row.cell.config.name == view.baseline:
        return 1.0, 1.0, 1.0
    if row.comparison is not None:
        return speed_interval(row.comparison, higher)
    if row.relative is not None and row.relative > 0:
        s = speed(row.relative / 100, higher)
        return s, s, s
    return None


def speeds(view: WorkloadView) -> list[tuple[Row, tuple[float, float, float]]]:
    """Every configuration with figures and its speed against the baseline."""
    return [(r, s) for r in view.rows if r.primary.summary and (s := speed_of(r, view)) is not None]


def _colour(row: Row, view: WorkloadView) -> str:
    if row.cell.config.name == view.baseline:
        return BASE
    c = row.comparison
    if c is None or not c.significant:
        return SAME
    return GOOD if speed(c.ratio, row.primary.metric.higher_is_better) > 1 else BAD


def _axis_title(view: WorkloadView) -> str:
    m = view.rows[0].primary.metric
    what = (f"{m.unit}" if m.higher_is_better else f"{view.baseline}'s time / its time ({m.name}; lower is better)")
    return f"speed relative to {view.baseline} (log scale; right is faster; {what})"


def forest_chart(view: WorkloadView, references: bool = False, live: bool = False) -> go.Figure | None:
    """Each configuration's speed against the baseline with its 95% interval, sorted, on a log axis.

    With references=False the candidates (the baseline among them) with the run's resolution as a band
    around 1; with references=True the in-memory and raw yardsticks apart, so they never set the scale. `live`: a
    run still being executed, none marked recommended."""
    chosen = None if live else recommended(view)
    rows = [(r, s) for r, s in speeds(view) if is_reference(r) == references
            and (not references or r.cell.config.name != view.baseline)]
    if not rows or (not references and len(rows) < 2):
        return None
    rows.sort(key=lambda x: -x[1][0])
    fig = go.Figure()
    lows = [s[1] for _, s in rows]
    highs = [s[2] for _, s in rows]
    names = [label(r, chosen) for r, _ in rows]
    fig.add_trace(go.Scatter(
        x=[s[0] for _, s in rows], y=names, mode="markers",
        error_x={"type": "data", "symmetric": False, "array": [s[2] - s[0] for _, s in rows],
                 "arrayminus": [s[0] - s[1] for _, s in rows], "thickness": 2, "width": 6},
        marker={"size": 13, "color": [_colour(r, view) for r, _ in rows],
                "symbol": ["diamond" if r.unsafe else "circle" for r, _ in rows],
                "line": {"width": 2, "color": [UNSAFE if r.unsafe else "white" for r, _ in rows]}},
        hovertext=[f"{r.cell.config.name}: {verdict(r, view.baseline)[0]}" for r, _ in rows], hoverinfo="text",
        showlegend=False))
    if view.resolution and not references:
        half = view.resolution[0]
        fig.add_vrect(x0=1 / (1 + half), x1=1 + half, fillcolor=BAND, line_width=0, layer="below")
        fig.add_annotation(x=math.log10(1 + half), y=1.0, yref="paper", yanchor="bottom", xanchor="left",
                           text=f"resolution ±{half:.0%}", showarrow=False, font={"size": 11, "color": "#1c7ed6"})
    fig.add_vline(x=1, line_width=1.5, line_color=BASE)
    fig.update_xaxes(**log_axis(min(lows), max(highs)), title_text=_axis_title(view))
    fig.update_yaxes(autorange="reversed", type="category")
    what = ("reference configurations (in memory, raw device): upper bounds, not candidates, on their own scale"
            if references else "each configuration against the baseline, 95% interval")
    key = ("" if references else "<br><sup>green/red: significantly faster/slower (Holm); grey: not significant; "
           "◆ ⚠ trades safety for speed; ★ recommended; band: what this run cannot tell apart</sup>")
    fig.update_layout(title=f"{view.label}: {what}{key}", height=max(240, 150 + ROW_PX * len(rows)),
                      margin={"l": 170, "t": 80})
    fig.update_xaxes(tickangle=0)
    return fig


SAFETY_LEVELS = ("lost commits in a crash test", "can lose acknowledged commits (settings)",
                 "stale data or a full fsck after a power cut (settings)", "no setting known to lose commits",
                 "none lost in a crash test")
LEVEL_COLOURS = (BAD, UNSAFE, "#f08c00", "#74b816", SAFE)


def loses_commits(risk: str) -> bool:
    """Does a risk line, in its own words, lose acknowledged commits (or everything), rather than leave stale
    blocks or call for a full fsck?"""
    text = risk.split(":", 1)[-1].lower()
    return "commit" in text or "everything is lost" in text or "lose them" in text


def safety_level(row: Row) -> str:
    if row.crash_lost:
        return SAFETY_LEVELS[0]
    if any(loses_commits(r) for r in row.risks):
        return SAFETY_LEVELS[1]
    if row.risks:
        return SAFETY_LEVELS[2]
    if row.crash and not row.crash.error:
        return SAFETY_LEVELS[4]
    return SAFETY_LEVELS[3]


def safety_chart(view: WorkloadView, live: bool = False) -> go.Figure | None:
    """Speed against safety, for workloads that commit: one row per configuration (names never overlap),
    grouped from safest to least safe, speed on a log axis, safety from the crash test where one ran (`live`: a
    run still being executed, none marked recommended)."""
    if not view.commits:
        return None
    chosen = None if live else recommended(view)
    rows = [(r, sp) for r, sp in speeds(view) if not is_reference(r)]  # tmpfs and raw: their own chart
    if len(rows) < 2:
        return None
    order = {lvl: i for i, lvl in enumerate(reversed(SAFETY_LEVELS))}
    rows.sort(key=lambda x: (order[safety_level(x[0])], -x[1][0]))
    fig = go.Figure()
    for level, colour in zip(SAFETY_LEVELS, LEVEL_COLOURS):
        group = [(r, s) for r, s in rows if safety_level(r) == level]
        if not group:
            continue
        fig.add_trace(go.Scatter(
            x=[s[0] for _, s in group], y=[label(r, chosen) for r, _ in group], mode="markers", name=level,
            marker={"color": colour, "size": 13},
            hovertext=[f"{r.cell.config.name}: {factor(s[0])} as fast; "
                       + ("; ".join([*r.risks, *([r.crash.verdict()] if r.crash else [])]) or "no known risk")
                       for r, s in group], hoverinfo="text"))
    best = [(r, s) for r, s in rows if r.cell.config.name == chosen]
    if best:
        fig.add_trace(go.Scatter(x=[best[0][1][0]], y=[label(best[0][0], chosen)], mode="markers", name="recommended",
                                 marker={"symbol": "star-open", "size": 26, "color": BASE, "line": {"width": 2}},
                                 hoverinfo="skip"))
    fig.add_vline(x=1, line_width=1, line_color=BASE, line_dash="dot")
    fig.update_xaxes(**log_axis(min(s[0] for _, s in rows), max(s[0] for _, s in rows)),
                     title_text=_axis_title(view))
    fig.update_yaxes(autorange="reversed", type="category", categoryorder="array",
                     categoryarray=[label(r, chosen) for r, _ in rows])
    fig.update_layout(title=f"{view.label}: speed against safety<br><sup>safety from the crash test where one ran, "
                            "else from the settings; ★ recommended; references (tmpfs, raw) apart</sup>",
                      height=max(300, 200 + ROW_PX * len(rows)), margin={"l": 170, "b": 140},
                      legend={"orientation": "h", "y": -0.2, "yanchor": "top", "x": 0})
    return fig


LATENCY_FAMILIES = (("lat", "commit latency"), ("read", "read latency"), ("write", "write latency"),
                    ("sync", "fsync latency"))
PERCENTILES = (("p50", "p50"), ("p95", "p95"), ("p99", "p99"), ("max", "max"))


def latency_chart(view: WorkloadView) -> go.Figure | None:
    """Latency as distributions: percentile curves per configuration (median over runs), one panel per
    kind of call, fsync apart where the workload reports it."""
    families = []
    for prefix, title in LATENCY_FAMILIES:
        present = [(p, lab) for p, lab in PERCENTILES
                   if any((mv := r.metric(f"{prefix}_{p}")) and mv.summary for r in view.rows)]
        if len(present) >= 2:
            families.append((prefix, title, present))
    if not families:
        return None
    titles = [t for _, t, _ in families] if len(families) > 1 else None
    fig = make_subplots(rows=1, cols=len(families), subplot_titles=titles)
    names = [r.cell.config.name for r in view.rows]
    for col, (prefix, _, present) in enumerate(families, start=1):
        for r in view.rows:
            xs, ys = [], []
            for p, lab in present:
                mv = r.metric(f"{prefix}_{p}")
                if mv and mv.summary and mv.summary.median > 0:
                    xs.append(lab)
                    ys.append(mv.summary.median * 1000)
            if ys:
                name = r.cell.config.name
                fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=name, legendgroup=name,
                                         showlegend=col == 1, line={"color": colour_of(name, names)}),
                              row=1, col=col)
        fig.update_yaxes(**value_ticks([y for t in fig.data if t.xaxis == ("x" if col == 1 else f"x{col}")
                                        for y in t.y]),
                         title_text="ms (log scale; lower is better)" if col == 1 else None, row=1, col=col)
        fig.update_xaxes(title_text="percentile", row=1, col=col)
    fig.update_layout(title=f"{view.label}: {', '.join(t for _, t, _ in families)} as distributions (median "
                            "over the runs of each percentile)",
                      height=440 + 22 * math.ceil(len(view.rows) / 4), margin={"b": 60 + 22 * math.ceil(len(view.rows) / 4)},
                      legend={"orientation": "h", "y": -0.18, "yanchor": "top", "x": 0})
    return fig


FACET_COLUMNS = 3


def over_time_chart(view: WorkloadView) -> go.Figure | None:
    """Every slice or run measured in rounds, at its moment: one small panel per configuration on one shared log
    axis (the host's speed moving, the configurations moving with it), the baseline faint in each for reference.
    A reference (tmpfs, the raw device) or a configuration far from the baseline's level has an axis of its own,
    marked in its title: on the shared axis it squeezed every other panel into a strip."""
    obs = [(r, sorted(r.observations, key=lambda o: o.t)) for r in view.rows if r.observations]
    if not obs:
        return None
    t0 = min(o.t for _, os_ in obs for o in os_)
    metric = view.rows[0].primary.metric
    cols = min(FACET_COLUMNS, len(obs))
    nrows = math.ceil(len(obs) / cols)
    base = next((os_ for r, os_ in obs if r.cell.config.name == view.baseline), None)
    names = [r.cell.config.name for r in view.rows]
    own = own_axis([(r.cell.config.fstype, [o.value for o in pts]) for r, pts in obs],
                   [o.value for o in base] if base else None)
    fig = make_subplots(rows=nrows, cols=cols, shared_xaxes=True,
                        subplot_titles=[r.cell.config.name + (" (own scale)" if mine else "")
                                        for (r, _), mine in zip(obs, own, strict=True)],
                        vertical_spacing=0.25 / nrows, horizontal_spacing=0.04)
    for i, (r, pts) in enumerate(obs):
        row, col = i // cols + 1, i % cols + 1
        if base is not None and r.cell.config.name != view.baseline:
            fig.add_trace(go.Scatter(x=[o.t - t0 for o in base], y=[o.value for o in base], mode="lines",
                                     line={"color": "#ced4da", "width": 1}, hoverinfo="skip", showlegend=False),
                          row=row, col=col)
        fig.add_trace(go.Scatter(
            x=[o.t - t0 for o in pts], y=[o.value for o in pts], mode="lines+markers", name=r.cell.config.name,
            line={"color": colour_of(r.cell.config.name, names), "width": 1}, marker={"size": 4}, showlegend=False,
            hovertext=[f"{r.cell.config.name}, block {o.block}, round {o.round}: {fmt_value(o.value, metric)}"
                       for o in pts], hoverinfo="text"), row=row, col=col)
    how = "slice" if any(r.slice_s for r in view.rows) else "run"
    shared = value_ticks([o.value for (_, os_), mine in zip(obs, own, strict=True) if not mine for o in os_])
    for i, ((_, pts), mine) in enumerate(zip(obs, own, strict=True)):
        fig.update_yaxes(**(value_ticks([o.value for o in pts]) if mine else shared), row=i // cols + 1,
                         col=i % cols + 1)
    fig.update_yaxes(title_text=f"{metric.unit} (log)", col=1)
    fig.update_xaxes(title_text=f"s since the first {how}", row=nrows)
    fig.update_annotations(font_size=12)
    fig.update_layout(title=f"{view.label}: every {how} at its moment, one panel per configuration ({direction(metric)}; "
                            f"grey: {view.baseline})", height=160 + 170 * nrows, showlegend=False)
    return fig


OWN_AXIS_FACTOR = 2.0  # a panel whose median is over twice or under half the baseline's gets an axis of its own


def own_axis(panels: Sequence[tuple[str, Sequence[float]]], baseline: Sequence[float] | None) -> list[bool]:
    """Which panels (filesystem type, values) get a log axis of their own: references, and any whose median is
    more than OWN_AXIS_FACTOR from the baseline's (pure)."""
    def median(vs: Sequence[float]) -> float | None:
        pos = [v for v in vs if v > 0]
        return statistics.median(pos) if pos else None

    ref = median(baseline) if baseline else None
    out = []
    for fstype, values in panels:
        m = median(values)
        far = ref is not None and m is not None and max(m / ref, ref / m) > OWN_AXIS_FACTOR
        out.append(is_reference_type(fstype) or far)
    if all(out):  # nothing left to share: every panel on the one axis as before
        return [False] * len(out)
    return out


def phases_chart(view: WorkloadView) -> go.Figure | None:
    """File trees: each configuration's phases one after the other on a time axis (median seconds)."""
    phases = [d for d in view.breakdown if d.unit == "s"]
    if view.kind != FILE_TREE or not phases:  # other workloads' timed breakdowns are latencies, not phases
        return None
    rows = [r for r in view.rows if r.status == "ok"]
    fig = go.Figure()
    for i, d in enumerate(phases):
        xs, ys = [], []
        for r in rows:
            mv = r.metric(d.name)
            xs.append(mv.summary.median if mv and mv.summary else 0.0)
            ys.append(r.cell.config.name)
        fig.add_trace(go.Bar(x=xs, y=ys, orientation="h", name=d.name.removesuffix("_s"),
                             marker_color=PALETTE[i % len(PALETTE)], text=[f"{x:.2f} s" for x in xs],
                             textposition="inside", insidetextanchor="middle"))
    fig.update_layout(barmode="stack", title=f"{view.label}: phases on the time axis (median seconds each; "
                                             "the cache drop and preload between phases not counted)",
                      height=max(240, 140 + ROW_PX * len(rows)), margin={"l": 170},
                      legend={"orientation": "h", "y": -0.3, "traceorder": "normal"})
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(title_text="seconds (lower is better)")
    return fig


def _median_trial(record: RunRecord, row: Row) -> Trial | None:
    name = row.primary.metric.name
    trials = [t for t in record.trials if t.cell_index == row.cell.index and t.phase == "measured" and t.ok
              and name in t.metrics]
    if not trials:
        return None
    med = statistics.median(t.metrics[name] for t in trials)
    return min(trials, key=lambda t: abs(t.metrics[name] - med))


def per_second(trial: Trial) -> list[float]:
    try:
        series = json.loads(trial.raw_output).get("per_second", [])
    except (ValueError, AttributeError):
        return []
    whole = int(trial.elapsed_s)  # the last bucket is a partial second
    return [float(v) for v in series[:whole]] if whole else []


def device_chart(record: RunRecord, view: WorkloadView) -> go.Figure | None:
    """Whole runs (not sliced): the run nearest the median of each configuration, per second, next to the
    device's utilisation and the CPU's iowait; the throughput on a log axis so no configuration is flattened."""
    if any(r.slice_s for r in view.rows) or view.kind == FILE_TREE:
        return None  # slices: the over-time chart; file trees: no per-second figure, their phases instead
    medians = [(row, t) for row in view.rows if (t := _median_trial(record, row)) is not None]
    if not any(per_second(t) for _, t in medians):
        return None  # without a per-second figure, the monitors' panels alone are an empty-looking chart
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.07,
                        subplot_titles=("throughput per second (log scale)", "device utilisation", "CPU iowait"))
    drawn = False
    names = [r.cell.config.name for r in view.rows]
    for row, t in medians:
        per_s = per_second(t)
        name = row.cell.config.name
        style = {"name": name, "legendgroup": name, "line": {"color": colour_of(name, names)}}
        if per_s and all(v > 0 for v in per_s):
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
    fig.update_yaxes(**value_ticks([y for t in fig.data if t.yaxis in (None, "y") for y in (t.y or ())]), row=1,
                     col=1)
    fig.update_yaxes(tickformat=".0%", row=2, col=1)
    fig.update_yaxes(tickformat=".0%", row=3, col=1)
    fig.update_xaxes(title_text="seconds into the measured run (the run nearest the median)", row=3, col=1)
    fig.update_layout(title=f"{view.label}: over time", height=620)
    return fig


def crash_chart(views: Sequence[WorkloadView]) -> go.Figure | None:
    """Crash results as a picture: configurations x database settings (one column per workload crash-tested),
    coloured by the share of power-cut states that lost commits, the worst loss on hover."""
    cols = [v for v in views if any(r.crash for r in v.rows)]
    if not cols:
        return None
    configs: list[str] = []
    for v in cols:
        for r in v.rows:
            if r.crash and r.cell.config.name not in configs:
                configs.append(r.cell.config.name)
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    hover: list[list[str]] = []
    for name in configs:
        zr: list[float | None] = []
        tr: list[str] = []
        hr: list[str] = []
        for v in cols:
            found = next((x for x in v.rows if x.cell.config.name == name and x.crash), None)
            c = found.crash if found else None
            if c is None or c.error or not c.tried:
                zr.append(None)
                tr.append("-" if c is None else "not run")
                hr.append(f"{name} / {v.label}: " + (c.error if c else "not crash-tested"))
                continue
            m = c.metrics
            bad = max(m.get("crash_states_lost", 0), m.get("crash_db_failed", 0) + m.get("crash_inconsistent", 0)
                      + m.get("crash_unmountable", 0))
            zr.append(min(bad, c.tried) / c.tried)
            tr.append(f"{int(m.get('crash_states_lost', 0))}/{c.tried}")
            hr.append(f"{name} / {v.label}: {c.verdict()}")
        z.append(zr)
        text.append(tr)
        hover.append(hr)
    xs = [f"{v.label}<br>{_durability(v)}" for v in cols]
    fig = go.Figure(go.Heatmap(z=z, x=xs, y=configs, text=text, texttemplate="%{text}", hovertext=hover,
                               hoverinfo="text", zmin=0, zmax=1, xgap=3, ygap=3,
                               colorscale=[[0, "#d3f9d8"], [0.001, "#ffe3e3"], [1, "#c92a2a"]],
                               colorbar={"title": "share of states<br>that lost commits", "tickformat": ".0%"}))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", side="top")
    fig.update_layout(title="crash test: states that lost acknowledged commits, of the states tried "
                            "(hover for the worst loss)",
                      height=max(260, 170 + ROW_PX * len(configs)), margin={"l": 170, "t": 110})
    return fig


DURABILITY_KEYS = ("synchronous", "journal_mode", "fsync", "synchronous_commit", "full_page_writes",
                   "wal_sync_method", "innodb_flush_log_at_trx_commit", "innodb_flush_method", "innodb_doublewrite",
                   "sync_binlog", "forced_writes", "backend", "server")


def _durability(view: WorkloadView) -> str:
    """The workload's database settings that bear on durability, for a column heading."""
    parts = [f"{k}={view.settings[k]}" for k in DURABILITY_KEYS if view.settings.get(k) not in (None, "")]
    return ", ".join(parts) or view.name


def percentile_chart(view: RateView, slices: Mapping[str, Sequence[Slice]]) -> go.Figure:
    """A fixed-rate workload: each configuration's percentile curve from the scheduled start (log-log)."""
    fig = go.Figure()
    for row in view.rows:
        pts = percentile_curve(merge([s.hist for s in slices[row.config]]))
        fig.add_trace(go.Scatter(x=[1 / (1 - q / 100) for q, _ in pts], y=[v * 1e3 for _, v in pts],
                                 mode="lines+markers", name=row.config,
                                 text=[f"p{q:g}" for q, _ in pts], hovertemplate="%{text}: %{y:.2f} ms"))
    fig.update_xaxes(type="log", title="percentile", tickvals=[1 / (1 - q / 100) for q in CURVE_QS],
                     ticktext=[f"p{q:g}" for q in CURVE_QS])
    fig.update_yaxes(type="log", title="latency from the scheduled start (ms)")
    fig.update_layout(title=f"{view.label} at {view.rows[0].summary.offered:g}/s: percentiles from the schedule")
    return fig


def capacity_chart(label: str, target: LatencyTarget, searched: Sequence[CapacityRow]) -> go.Figure:
    """A capacity search: each configuration's percentile against the rates tried, and the target as a line."""
    fig = go.Figure()
    for found in searched:
        steps = sorted((v for v in found.verdicts if v.point_s is not None), key=lambda v: v.rate)
        fig.add_trace(go.Scatter(x=[v.rate for v in steps], y=[(v.point_s or 0) * 1e3 for v in steps],
                                 mode="lines+markers", name=f"{found.config}: {capacity_text(found.capacity)[0]}"))
    fig.add_hline(y=target.limit_s * 1e3, line_dash="dash", annotation_text=target.words())
    fig.update_xaxes(type="log", title="fixed rate (tx/s)")
    fig.update_yaxes(type="log", title=f"p{target.q:g} from the scheduled start (ms)")
    fig.update_layout(title=f"{label}: latency against rate, and the highest rate within {target.words()}")
    return fig
