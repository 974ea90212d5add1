"""Fixed-rate runs: latency from the scheduled start side by side, and the capacity search (pure: results to tables)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from rich.table import Table

from pickfs.model import RunRecord, plan_from_dict
from pickfs.report.text import fmt_seconds
from pickfs.stats.capacity import Capacity, LatencyTarget, Verdict, capacity, judge, parse_target
from pickfs.stats.decision import Decision, decide
from pickfs.stats.latency import (
    PERCENTILES,
    PercentileRatio,
    RateSummary,
    Slice,
    fixed_rate_block,
    latency_fit,
    merge,
    percentile_ratio,
    percentile_us,
    slice_from,
    summarize_rate,
)

# every configuration is offered the same load: its throughput differs only when it falls behind
FIXED_RATE_NOTE = "(same load for all: compare latencies, not tx/s)"
CPU_BOUND_SHARE = 0.9  # as workloads/latency.py flags a slice (the report imports no workload)
RATIO_Q = 99.0


@dataclass(frozen=True)
class RateRow:
    config: str
    summary: RateSummary
    p99_ratio: PercentileRatio | None  # over the baseline's, paired in time; None for the baseline itself


@dataclass(frozen=True)
class RateView:
    label: str
    baseline: str
    rows: tuple[RateRow, ...]


def rate_slices(record: RunRecord) -> dict[str, dict[str, list[Slice]]]:
    """Every measured fixed-rate slice, by workload label and configuration."""
    plan = plan_from_dict(record.plan)
    cells = {c.index: c for c in plan.cells()}
    out: dict[str, dict[str, list[Slice]]] = {}
    for t in record.trials:
        cell = cells.get(t.cell_index)
        if cell is None or t.phase != "measured" or not t.ok:
            continue
        block = fixed_rate_block(t.raw_output)
        if block is None:
            continue
        cpu_bound = t.metrics.get("client_cpu_share", 0.0) > CPU_BOUND_SHARE
        s = slice_from(t.block, t.round if t.round is not None else t.repetition, block, cpu_bound)
        out.setdefault(cell.workload.label, {}).setdefault(cell.config.name, []).append(s)
    return out


def rate_views(record: RunRecord) -> list[RateView]:
    plan = plan_from_dict(record.plan)
    views = []
    for label, by_config in rate_slices(record).items():
        names = [c.name for c in plan.configs if c.name in by_config]
        base = plan.baseline if plan.baseline in by_config else names[0]
        rows = []
        for name in names:
            summary = summarize_rate(by_config[name])
            if summary is None:
                continue
            ratio = None if name == base else percentile_ratio(by_config[name], by_config[base], RATIO_Q)
            rows.append(RateRow(name, summary, ratio))
        views.append(RateView(label, base, tuple(rows)))
    return views


def _ratio_text(r: PercentileRatio | None) -> str:
    if r is None:
        return "baseline"
    if r.low is None or r.high is None:
        return f"×{r.ratio:.2f} (too few rounds for an interval)"
    return f"×{r.ratio:.2f} [{r.low:.2f}-{r.high:.2f}]"


def rate_cells(view: RateView) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the fixed-rate table (pure)."""
    header = ["configuration", "rate", *(f"p{q:g}" for q in PERCENTILES), "late", "skipped",
              f"p{RATIO_Q:g} vs {view.baseline} [95%]", "slices"]
    rows = []
    for row in view.rows:
        s = row.summary
        slices = f"{s.slices}" + (f" ({s.cpu_bound_slices} CPU-bound)" if s.cpu_bound_slices else "")
        rows.append([row.config, f"{s.offered:g}/s",
                     *(fmt_seconds(s.percentiles_s[q]) if q in s.percentiles_s else "-" for q in PERCENTILES),
                     "-" if s.late_share is None else f"{s.late_share:.1%}", f"{s.missed_share:.1%}", _ratio_text(row.p99_ratio), slices])
    return header, rows


# -- the capacity search (engine/capacity.py): every figure derived again from its slices --------------------
@dataclass(frozen=True)
class CapacityRow:
    config: str
    verdicts: tuple[Verdict, ...]  # one per rate tried, in the order tried
    capacity: Capacity


def capacity_rows(record: RunRecord) -> list[tuple[str, LatencyTarget, list[CapacityRow]]]:
    """Per workload: the target and, per configuration, its verdict at every rate tried and its capacity."""
    plan = plan_from_dict(record.plan)
    if not plan.method.latency_target:
        return []
    target = parse_target(plan.method.latency_target)
    cells = {c.index: c for c in plan.cells()}
    by: dict[str, dict[str, dict[float, list[Slice]]]] = {}
    for t in sorted(record.trials, key=lambda t: t.started):
        cell = cells.get(t.cell_index)
        block = fixed_rate_block(t.raw_output) if t.phase == "capacity" and t.ok else None
        if cell is None or block is None:
            continue
        s = slice_from(t.block, t.round or 0, block, t.metrics.get("client_cpu_share", 0.0) > CPU_BOUND_SHARE)
        by.setdefault(cell.workload.label, {}).setdefault(cell.config.name, {}).setdefault(s.offered, []).append(s)
    out = []
    for label, configs in by.items():
        rows = []
        for c in plan.configs:
            steps = configs.get(c.name)
            if not steps:
                continue
            verdicts = tuple(judge(slices, target, rate) for rate, slices in steps.items())
            rows.append(CapacityRow(c.name, verdicts, capacity(verdicts)))
        out.append((label, target, rows))
    return out


def capacity_text(c: Capacity) -> tuple[str, str]:
    """(the capacity, its interval) in words (pure)."""
    if c.rate <= 0:
        return (f"below {c.lowest_failed:,.0f}/s" if c.lowest_failed else "-"), ""
    high = f"{c.high:,.0f}" if c.high is not None else "open"
    return f"{c.rate:,.0f}/s", f"[{c.low:,.0f}-{high}]"


def latency_dict(record: RunRecord) -> dict[str, Any]:
    """The fixed-rate figures and the capacity search for the JSON export ({} when the run has neither):
    per configuration its percentiles from the schedule, shares, p99 ratio and merged histogram."""
    out: dict[str, Any] = {}
    slices = rate_slices(record)
    views = rate_views(record)
    if views:
        out["fixed_rate"] = [{
            "workload": v.label, "baseline": v.baseline,
            "configs": [{"config": r.config, "offered_per_s": r.summary.offered, "slices": r.summary.slices,
                         "due": r.summary.due, "percentiles_s": {f"p{q:g}": x for q, x in r.summary.percentiles_s.items()},
                         "late_share": r.summary.late_share, "skipped_share": r.summary.missed_share,
                         "cpu_bound_slices": r.summary.cpu_bound_slices,
                         "p99_ratio": None if r.p99_ratio is None else
                         {"ratio": r.p99_ratio.ratio, "low": r.p99_ratio.low, "high": r.p99_ratio.high,
                          "rounds": r.p99_ratio.units},
                         "latency_us": {str(k): n for k, n in sorted(merge([s.hist for s in slices[v.label][r.config]]).items())}}
                        for r in v.rows]} for v in views]
    searches = capacity_rows(record)
    if searches:
        out["capacity"] = [{
            "workload": label, "target": target.words(),
            "configs": [{"config": r.config, "capacity_per_s": r.capacity.rate, "low_per_s": r.capacity.low,
                         "high_per_s": r.capacity.high, "lowest_over_per_s": r.capacity.lowest_failed,
                         "steps": [{"rate_per_s": v.rate, "percentile_s": v.point_s, "low_s": v.low_s, "high_s": v.high_s,
                                    "skipped_share": v.missed_share, "within": v.passed, "sure": v.sure}
                                   for v in r.verdicts]} for r in rows]} for label, target, rows in searches]
    return out


# -- HTML: percentile curves at a fixed rate, latency against rate in the capacity search ----------------------
CURVE_QS = (50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99)


def percentile_curve(hist: dict[int, int]) -> list[tuple[float, float]]:
    """(q, seconds) along the percentiles a tail plot shows, as far as the histogram's count supports (pure)."""
    total = sum(hist.values())
    out = []
    for q in CURVE_QS:
        if q <= 99 or (100 - q) * total >= 100 - 1e-9:  # enough transactions for this percentile
            v = percentile_us(hist, q)
            if v is not None:
                out.append((q, v / 1e6))
    return out


def _fragment(fig: go.Figure, kind: str) -> str:
    fig.update_layout(template="plotly_white", margin={"r": 20, "t": 60, "b": 80, "l": 60})
    body = fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False})
    return f'<div class="chart" data-chart="{html.escape(kind)}">{body}</div>'


def latency_html(record: RunRecord) -> str:
    """An HTML fragment: per fixed-rate workload its percentile curves from the scheduled start, per capacity
    search its percentile against the rates tried; '' when the run has neither."""
    parts = []
    slices = rate_slices(record)
    for view in rate_views(record):
        fig = go.Figure()
        for row in view.rows:
            pts = percentile_curve(merge([s.hist for s in slices[view.label][row.config]]))
            fig.add_trace(go.Scatter(x=[1 / (1 - q / 100) for q, _ in pts], y=[v * 1e3 for _, v in pts],
                                     mode="lines+markers", name=row.config,
                                     text=[f"p{q:g}" for q, _ in pts], hovertemplate="%{text}: %{y:.2f} ms"))
        fig.update_xaxes(type="log", title="percentile", tickvals=[1 / (1 - q / 100) for q in CURVE_QS],
                         ticktext=[f"p{q:g}" for q in CURVE_QS])
        fig.update_yaxes(type="log", title="latency from the scheduled start (ms)")
        fig.update_layout(title=f"{view.label} at {view.rows[0].summary.offered:g}/s: percentiles from the schedule")
        header, cells = rate_cells(view)
        table = "".join(f"<tr>{''.join(f'<td>{html.escape(c)}</td>' for c in r)}</tr>" for r in cells)
        parts.append(f"<h2>{html.escape(view.label)} at a fixed rate</h2>" + _fragment(fig, "percentiles")
                     + "<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + f"</tr>{table}</table>")
    for label, target, searched in capacity_rows(record):
        fig = go.Figure()
        for found in searched:
            steps = sorted((v for v in found.verdicts if v.point_s is not None), key=lambda v: v.rate)
            fig.add_trace(go.Scatter(x=[v.rate for v in steps], y=[(v.point_s or 0) * 1e3 for v in steps],
                                     mode="lines+markers", name=f"{found.config}: {capacity_text(found.capacity)[0]}"))
        fig.add_hline(y=target.limit_s * 1e3, line_dash="dash", annotation_text=target.words())
        fig.update_xaxes(type="log", title="fixed rate (tx/s)")
        fig.update_yaxes(type="log", title=f"p{target.q:g} from the scheduled start (ms)")
        fig.update_layout(title=f"{label}: latency against rate, and the highest rate within {target.words()}")
        parts.append(f"<h2>{html.escape(label)}: capacity within {html.escape(target.words())}</h2>"
                     + _fragment(fig, "capacity"))
    return "\n".join(parts)


def latency_cells(record: RunRecord) -> list[tuple[str, list[str], list[list[str]]]]:
    """Every fixed-rate and capacity table as (title, header, rows) of text, for text renderers (pure)."""
    out = []
    for view in rate_views(record):
        header, rows = rate_cells(view)
        out.append((f"{view.label} at a fixed rate: latency from each transaction's scheduled start "
                    f"{FIXED_RATE_NOTE}", header, rows))
    for label, target, searched in capacity_rows(record):
        rows = []
        for found in searched:
            words, interval = capacity_text(found.capacity)
            tried = ", ".join(f"{v.rate:,.0f}/s {fmt_seconds(v.point_s) if v.point_s is not None else '-'}"
                              f"{'' if v.passed else ' (over)'}" for v in sorted(found.verdicts, key=lambda v: v.rate))
            rows.append([found.config, words, interval, tried])
        out.append((f"{label}: the highest rate held with {target.words()} from the scheduled start",
                    ["configuration", "capacity", "interval [tx/s]", f"rates tried: p{target.q:g}"], rows))
    return out


def latency_tables(record: RunRecord) -> list[Table]:
    """The terminal's fixed-rate and capacity tables ([] for a closed-loop run)."""
    tables = []
    for title, header, rows in latency_cells(record):
        table = Table(title=title, title_justify="left")
        for i, h in enumerate(header):
            table.add_column(h, justify="left" if i == 0 or h.startswith("rates tried") else "right")
        for r in rows:
            table.add_row(*r)
        tables.append(table)
    return tables


# -- the recommendation at a fixed rate: the lowest percentile from the schedule, or the highest capacity ---------
@dataclass(frozen=True)
class LatencyChoice:
    """What a fixed-rate run or a capacity search recommends, in sentences; `answer` only when settled."""

    sentences: tuple[str, ...]
    answer: str | None
    settled: bool
    decision: Decision | None = None  # at a fixed rate: the race's decision on the percentiles


def _named(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def latency_choice(record: RunRecord, label: str, candidates: Sequence[str], others: Sequence[str],
                   what_is_lost: str, margin: float) -> LatencyChoice | None:
    """The recommendation of a fixed-rate workload (`candidates`: the safe configurations, most preferred
    first; `others`: those with a setting that can lose data, or references; `margin`: the plan's): by capacity
    within the target for a capacity search, else by the lowest p99 from the scheduled start. None: nothing at a
    fixed rate."""
    for found_label, target, rows in capacity_rows(record):
        if found_label == label:
            return _by_capacity(label, target, rows, candidates, what_is_lost)
    view = next((v for v in rate_views(record) if v.label == label), None)
    if view is None:
        return None
    return _by_percentile(view, rate_slices(record)[label], candidates, others, what_is_lost, margin)


def _by_percentile(view: RateView, slices: dict[str, list[Slice]], candidates: Sequence[str],
                   others: Sequence[str], what_is_lost: str, margin: float) -> LatencyChoice:
    rate = view.rows[0].summary.offered if view.rows else 0.0
    head = f"{view.label} at {rate:g}/s"
    safe = [c for c in candidates if c in slices]
    if not safe:
        return LatencyChoice((f"{head}: every configuration measured has a setting that can lose {what_is_lost} on a "
                              "power cut; add one with safe settings (such as plain ext4 or xfs) to compare.",),
                             None, False)
    fit = latency_fit({n: slices[n] for n in [*safe, *others] if n in slices}, RATIO_Q)
    d = decide(fit, safe, [o for o in others if o in slices], view.baseline, margin)
    p99 = {r.config: r.summary.percentiles_s.get(RATIO_Q) for r in view.rows}

    def fig(name: str) -> str:
        value = p99.get(name)
        return f"p{RATIO_Q:g} {fmt_seconds(value)}" if value is not None else "no p99"

    def vs(name: str, ref: str) -> str:
        r = percentile_ratio(slices[name], slices[ref], RATIO_Q)
        return f"{name} {fig(name)}, ×{r.ratio:.2f}" + (f" [{r.low:.2f}-{r.high:.2f}]" if r and r.low is not None
                                                          and r.high is not None else "") if r else name

    if d.answer is None:
        return LatencyChoice((f"{head}: no safe configuration has a p{RATIO_Q:g} from the scheduled start "
                              "with enough slices to judge; run longer (more rounds).",), None, False, d)
    if d.settled:
        rest = [n for n in safe if n != d.answer]
        text = (f"{head}: use {d.answer} ({fig(d.answer)} from the scheduled start, lowest with no setting known to "
                f"lose {what_is_lost}")
        text += (f"; {vs(rest[0], d.answer)} against it)" if rest else ")")
        return LatencyChoice((text + ".",), d.answer, True, d)
    tied = [d.answer, *d.undecided]
    detail = "; ".join(vs(n, d.answer) for n in d.undecided)
    return LatencyChoice((f"{head}: could not decide between {_named(tied)}: their p{RATIO_Q:g} from the scheduled "
                          f"start cannot be told apart at the {d.margin:.0%} margin ({d.answer} {fig(d.answer)}; "
                          f"{detail}); run longer (more rounds).",), None, False, d)


def _by_capacity(label: str, target: LatencyTarget, rows: list[CapacityRow], candidates: Sequence[str],
                 what_is_lost: str) -> LatencyChoice:
    safe = sorted((r for r in rows if r.config in candidates), key=lambda r: (-r.capacity.rate,
                                                                               candidates.index(r.config)))
    head = f"{label} within {target.words()} from the scheduled start"
    if not safe or safe[0].capacity.rate <= 0:
        return LatencyChoice((f"{head}: no configuration with no setting known to lose {what_is_lost} held the "
                              "target at any rate tried.",), None, False)
    best = safe[0]
    # another is not told apart when its interval reaches the best one's: its highest rate surely failed (open:
    # none surely failed) lies above the best one's highest rate surely held
    close = [r for r in safe[1:] if r.capacity.rate > 0 and (r.capacity.high is None or r.capacity.high > best.capacity.low)]
    words, interval = capacity_text(best.capacity)
    if close:
        names = _named([best.config, *(r.config for r in close)])
        detail = "; ".join(f"{r.config} {' '.join(capacity_text(r.capacity))}" for r in close)
        return LatencyChoice((f"{head}: could not decide between {names}: their capacities cannot be told apart "
                              f"({best.config} {words} {interval}; {detail}); run longer or search finer.",),
                             None, False)
    rest = f"; the next, {safe[1].config}, {' '.join(capacity_text(safe[1].capacity))}" if len(safe) > 1 else ""
    return LatencyChoice((f"{head}: use {best.config}: it holds {words} {interval}, the highest with no setting "
                          f"known to lose {what_is_lost}{rest}.",), best.config, True)
