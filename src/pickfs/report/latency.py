"""Fixed-rate runs: latency from the scheduled start side by side, and the capacity search, as cells of text, the
points of a chart and sentences (pure; the figures and the judge are analysis/latency.py). The formats draw them:
the terminal's tables, the HTML's charts (report/charts.py, the one place plotly is loaded), Markdown, JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pickfs.analysis.latency import (
    RATIO_Q,
    ByCapacity,
    ByPercentile,
    FixedRate,
    LatencyChoice,
    RateView,
)
from pickfs.report.text import fmt_seconds
from pickfs.stats.capacity import Capacity
from pickfs.stats.latency import PERCENTILES, PercentileRatio, merge, percentile_ratio, percentile_us

# every configuration is offered the same load: its throughput differs only when it falls behind
FIXED_RATE_NOTE = "(same load for all: compare latencies, not tx/s)"


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


def capacity_text(c: Capacity) -> tuple[str, str]:
    """(the capacity, its interval) in words (pure)."""
    if c.rate <= 0:
        return (f"below {c.lowest_failed:,.0f}/s" if c.lowest_failed else "-"), ""
    high = f"{c.high:,.0f}" if c.high is not None else "open"
    return f"{c.rate:,.0f}/s", f"[{c.low:,.0f}-{high}]"


def latency_dict(fixed: FixedRate) -> dict[str, Any]:
    """The fixed-rate figures and the capacity search for the JSON export ({} when the run has neither):
    per configuration its percentiles from the schedule, shares, p99 ratio and merged histogram."""
    out: dict[str, Any] = {}
    slices, views = fixed.slices, fixed.views
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
    searches = fixed.capacity
    if searches:
        out["capacity"] = [{
            "workload": label, "target": target.words(),
            "configs": [{"config": r.config, "capacity_per_s": r.capacity.rate, "low_per_s": r.capacity.low,
                         "high_per_s": r.capacity.high, "lowest_over_per_s": r.capacity.lowest_failed,
                         "steps": [{"rate_per_s": v.rate, "percentile_s": v.point_s, "low_s": v.low_s, "high_s": v.high_s,
                                    "skipped_share": v.missed_share, "within": v.passed, "sure": v.sure}
                                   for v in r.verdicts]} for r in rows]} for label, target, rows in searches]
    return out


# -- the points of the charts: percentile curves at a fixed rate ------------------------------------------------
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


def latency_cells(fixed: FixedRate) -> list[tuple[str, list[str], list[list[str]]]]:
    """Every fixed-rate and capacity table as (title, header, rows) of text, for text renderers (pure)."""
    out = []
    for view in fixed.views:
        header, rows = rate_cells(view)
        out.append((f"{view.label} at a fixed rate: latency from each transaction's scheduled start "
                    f"{FIXED_RATE_NOTE}", header, rows))
    for label, target, searched in fixed.capacity:
        rows = []
        for found in searched:
            words, interval = capacity_text(found.capacity)
            tried = ", ".join(f"{v.rate:,.0f}/s {fmt_seconds(v.point_s) if v.point_s is not None else '-'}"
                              f"{'' if v.passed else ' (over)'}" for v in sorted(found.verdicts, key=lambda v: v.rate))
            rows.append([found.config, words, interval, tried])
        out.append((f"{label}: the highest rate held with {target.words()} from the scheduled start",
                    ["configuration", "capacity", "interval [tx/s]", f"rates tried: p{target.q:g}"], rows))
    return out


# -- the recommendation at a fixed rate, in words (the judge is analysis/latency.py) ------------------------------
def _named(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def latency_sentences(choice: LatencyChoice) -> tuple[str, ...]:
    """What a fixed-rate run or a capacity search recommends, in sentences."""
    if choice.by_capacity is not None:
        return (_capacity_sentence(choice.by_capacity, choice.what_is_lost),)
    assert choice.by_percentile is not None
    return (_percentile_sentence(choice.by_percentile, choice.what_is_lost),)


def _percentile_sentence(found: ByPercentile, what_is_lost: str) -> str:
    view, slices, d = found.view, found.slices, found.decision
    rate = view.rows[0].summary.offered if view.rows else 0.0
    head = f"{view.label} at {rate:g}/s"
    if d is None:
        return (f"{head}: every configuration measured has a setting that can lose {what_is_lost} on a "
                "power cut; add one with safe settings (such as plain ext4 or xfs) to compare.")
    p99 = {r.config: r.summary.percentiles_s.get(RATIO_Q) for r in view.rows}

    def fig(name: str) -> str:
        value = p99.get(name)
        return f"p{RATIO_Q:g} {fmt_seconds(value)}" if value is not None else "no p99"

    def vs(name: str, ref: str) -> str:
        r = percentile_ratio(slices[name], slices[ref], RATIO_Q)
        return f"{name} {fig(name)}, ×{r.ratio:.2f}" + (f" [{r.low:.2f}-{r.high:.2f}]" if r and r.low is not None
                                                          and r.high is not None else "") if r else name

    if d.answer is None:
        return (f"{head}: no safe configuration has a p{RATIO_Q:g} from the scheduled start "
                "with enough slices to judge; run longer (more rounds).")
    if d.settled:
        rest = [n for n in found.safe if n != d.answer]
        text = (f"{head}: use {d.answer} ({fig(d.answer)} from the scheduled start, lowest with no setting known to "
                f"lose {what_is_lost}")
        text += (f"; {vs(rest[0], d.answer)} against it)" if rest else ")")
        return text + "."
    tied = [d.answer, *d.undecided]
    detail = "; ".join(vs(n, d.answer) for n in d.undecided)
    return (f"{head}: could not decide between {_named(tied)}: their p{RATIO_Q:g} from the scheduled "
            f"start cannot be told apart at the {d.margin:.0%} margin ({d.answer} {fig(d.answer)}; "
            f"{detail}); run longer (more rounds).")


def _capacity_sentence(found: ByCapacity, what_is_lost: str) -> str:
    safe, close = found.safe, found.close
    head = f"{found.label} within {found.target.words()} from the scheduled start"
    if not safe or safe[0].capacity.rate <= 0:
        return (f"{head}: no configuration with no setting known to lose {what_is_lost} held the "
                "target at any rate tried.")
    best = safe[0]
    words, interval = capacity_text(best.capacity)
    if close:
        names = _named([best.config, *(r.config for r in close)])
        detail = "; ".join(f"{r.config} {' '.join(capacity_text(r.capacity))}" for r in close)
        return (f"{head}: could not decide between {names}: their capacities cannot be told apart "
                f"({best.config} {words} {interval}; {detail}); run longer or search finer.")
    rest = f"; the next, {safe[1].config}, {' '.join(capacity_text(safe[1].capacity))}" if len(safe) > 1 else ""
    return (f"{head}: use {best.config}: it holds {words} {interval}, the highest with no setting "
            f"known to lose {what_is_lost}{rest}.")
