"""Latency at a fixed rate, side by side (pure functions: no I/O, no printing).

Each slice of a fixed-rate run keeps a histogram of latencies measured from every transaction's
scheduled start (microseconds, three significant digits). A configuration's percentiles are those
of its slices' histograms added up (histograms merge exactly; percentiles do not average).

A ratio of percentiles (a configuration's p99 over the baseline's) gets its interval by a paired
bootstrap over the units both were measured in: a unit is one round of one block, in which every
configuration ran one slice seconds from the others. Each resample draws units with replacement
and takes, for both sides, the percentile of the drawn slices' histograms added up; the interval
is the 2.5th and 97.5th percentile of the resampled ratios. Resampling whole units keeps each
configuration paired with the baseline measured beside it in time, and the percentile is taken
over transactions as the headline figure is, so a stall that lands in one slice of twenty
weighs as it does in the whole run. With fewer than MIN_UNITS units there is no interval.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pickfs.stats.weather import Fit, Spread

MIN_UNITS = 3
RESAMPLES = 2000
PERCENTILES = (50.0, 99.0, 99.9)

Hist = Mapping[int, int]  # microseconds -> transactions


def fixed_rate_block(raw: str) -> dict[str, Any] | None:
    """The fixed-rate block of a client's JSON document (clients/pacing.py), or None."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    block = doc.get("fixed_rate") if isinstance(doc, dict) else None
    return block if isinstance(block, dict) else None


def hist_of(block: Mapping[str, Any], key: str = "latency_us") -> dict[int, int]:
    return {int(k): int(v) for k, v in (block.get(key) or {}).items()}


def merge(hists: Sequence[Hist]) -> dict[int, int]:
    out: dict[int, int] = {}
    for h in hists:
        for k, v in h.items():
            out[k] = out.get(k, 0) + v
    return out


def percentile_us(hist: Hist, q: float) -> float | None:
    """The q-th percentile (nearest rank) of a histogram in microseconds; None when it is empty."""
    items = sorted((k, c) for k, c in hist.items() if c > 0)
    total = sum(c for _, c in items)
    if not total:
        return None
    rank = max(1, math.ceil(q / 100 * total))
    seen = 0
    for k, c in items:
        seen += c
        if seen >= rank:
            return float(k)
    return float(items[-1][0])


@dataclass(frozen=True)
class Slice:
    """One fixed-rate slice of one configuration: when it ran (its block and round) and what became of it."""

    block: int
    round: int
    hist: dict[int, int]  # latency from the scheduled start, microseconds
    due: int
    late: int | None  # None: the tool reports no per-transaction lag (sysbench)
    missed: int  # skipped past the latency limit, or left unfinished when the drain ended
    offered: float  # transactions due per second
    cpu_bound: bool = False


def slice_from(block: int, round_no: int, raw_block: Mapping[str, Any], cpu_bound: bool = False) -> Slice:
    return Slice(block, round_no, hist_of(raw_block), int(raw_block.get("due", 0)),
                 int(raw_block["late"]) if "late" in raw_block else None,
                 int(raw_block.get("skipped", 0)) + int(raw_block.get("unfinished", 0)),
                 float(raw_block.get("offered", 0.0)), cpu_bound)


@dataclass(frozen=True)
class RateSummary:
    """One configuration at a fixed rate, over all its slices."""

    slices: int
    offered: float
    due: int
    percentiles_s: dict[float, float]  # q -> seconds from the scheduled start
    late_share: float | None  # None: not known for every slice
    missed_share: float
    cpu_bound_slices: int


def summarize_rate(slices: Sequence[Slice]) -> RateSummary | None:
    if not slices:
        return None
    hist = merge([s.hist for s in slices])
    due = sum(s.due for s in slices)
    pct = {q: v / 1e6 for q in PERCENTILES if (v := percentile_us(hist, q)) is not None}
    return RateSummary(len(slices), float(np.median([s.offered for s in slices])), due, pct,
                       _late_share(slices, due),
                       sum(s.missed for s in slices) / due if due else 0.0,
                       sum(1 for s in slices if s.cpu_bound))


def _late_share(slices: Sequence[Slice], due: int) -> float | None:
    lates = [s.late for s in slices]
    if any(n is None for n in lates):
        return None
    return sum(n or 0 for n in lates) / due if due else 0.0


@dataclass(frozen=True)
class PercentileRatio:
    """A configuration's percentile over the baseline's, with a paired bootstrap interval (None: too few units)."""

    q: float
    ratio: float
    low: float | None
    high: float | None
    units: int


def _grid(hists: Sequence[Hist]) -> tuple[np.ndarray, np.ndarray]:
    """Histograms as rows of counts over their common sorted keys."""
    keys = sorted(set().union(*(h.keys() for h in hists))) if hists else []
    index = {k: i for i, k in enumerate(keys)}
    rows = np.zeros((len(hists), len(keys)), dtype=np.int64)
    for r, h in enumerate(hists):
        for k, c in h.items():
            rows[r, index[k]] = c
    return np.array(keys, dtype=float), rows


def _percentiles_of_sums(keys: np.ndarray, sums: np.ndarray, q: float) -> np.ndarray:
    """Nearest-rank q-th percentile of each row of summed counts."""
    cum = np.cumsum(sums, axis=1)
    total = cum[:, -1]
    rank = np.maximum(1, np.ceil(q / 100 * total))
    pos = (cum < rank[:, None]).sum(axis=1)
    out = keys[np.minimum(pos, len(keys) - 1)]
    return np.where(total > 0, out, np.nan)


def paired_units(config: Sequence[Slice], baseline: Sequence[Slice]) -> list[tuple[Slice, Slice]]:
    """The (block, round) units in which both ran a slice, in time order."""
    base = {(s.block, s.round): s for s in baseline}
    return [(s, base[(s.block, s.round)]) for s in sorted(config, key=lambda s: (s.round, s.block))
            if (s.block, s.round) in base]


def percentile_ratio(config: Sequence[Slice], baseline: Sequence[Slice], q: float, resamples: int = RESAMPLES,
                     seed: int = 0) -> PercentileRatio | None:
    """The q-th percentile of `config` over the baseline's, on the units both ran in, with a 95% interval
    from the paired bootstrap (see the module's note). None when they share no unit."""
    pairs = paired_units(config, baseline)
    if not pairs:
        return None
    keys, rows = _grid([p[0].hist for p in pairs] + [p[1].hist for p in pairs])
    n = len(pairs)
    mine, theirs = rows[:n], rows[n:]
    point_a = _percentiles_of_sums(keys, mine.sum(axis=0)[None, :], q)[0]
    point_b = _percentiles_of_sums(keys, theirs.sum(axis=0)[None, :], q)[0]
    if not (point_a > 0 and point_b > 0):
        return None
    ratio = float(point_a / point_b)
    if n < MIN_UNITS:
        return PercentileRatio(q, ratio, None, None, n)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(resamples, n))
    counts = np.zeros((resamples, n), dtype=np.int64)
    np.add.at(counts, (np.arange(resamples)[:, None], draws), 1)
    a = _percentiles_of_sums(keys, counts @ mine, q)
    b = _percentiles_of_sums(keys, counts @ theirs, q)
    ok = (a > 0) & (b > 0)
    ratios = a[ok] / b[ok]
    if not len(ratios):
        return PercentileRatio(q, ratio, None, None, n)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return PercentileRatio(q, ratio, float(low), float(high), n)


def percentile_interval(slices: Sequence[Slice], q: float, resamples: int = RESAMPLES,
                        seed: int = 0) -> tuple[float, float, float] | None:
    """One configuration's q-th percentile in microseconds and its 95% bootstrap interval over its slices
    (the capacity search's decision at one rate); None when it has no transactions or too few slices."""
    if len(slices) < 1:
        return None
    keys, rows = _grid([s.hist for s in slices])
    if not len(keys):
        return None
    point = float(_percentiles_of_sums(keys, rows.sum(axis=0)[None, :], q)[0])
    if len(slices) < MIN_UNITS:
        return point, math.nan, math.nan
    rng = np.random.default_rng(seed)
    n = len(slices)
    counts = np.zeros((resamples, n), dtype=np.int64)
    np.add.at(counts, (np.arange(resamples)[:, None], rng.integers(0, n, size=(resamples, n))), 1)
    values = _percentiles_of_sums(keys, counts @ rows, q)
    low, high = np.nanpercentile(values, [2.5, 97.5])
    return point, float(low), float(high)


def log_percentile_spread(slices: Sequence[Slice], q: float, resamples: int = RESAMPLES,
                          seed: int = 0) -> tuple[float, float] | None:
    """The log of one configuration's q-th percentile over its slices' merged histogram, and that log's
    variance over a bootstrap of its slices; None when it has no transactions or too few slices."""
    if len(slices) < MIN_UNITS:
        return None
    keys, rows = _grid([s.hist for s in slices])
    if not len(keys):
        return None
    point = float(_percentiles_of_sums(keys, rows.sum(axis=0)[None, :], q)[0])
    if not point > 0:
        return None
    rng = np.random.default_rng(seed)
    n = len(slices)
    counts = np.zeros((resamples, n), dtype=np.int64)
    np.add.at(counts, (np.arange(resamples)[:, None], rng.integers(0, n, size=(resamples, n))), 1)
    values = _percentiles_of_sums(keys, counts @ rows, q)
    logs = np.log(values[values > 0])
    if len(logs) < 2:
        return None
    return math.log(point), float(np.var(logs, ddof=1))


def latency_fit(slices: Mapping[str, Sequence[Slice]], q: float) -> Fit:
    """The configurations' q-th percentiles from the scheduled start as the race's model of levels
    (stats/weather.Fit: a level per configuration, its variance and degrees of freedom), so the race's
    decision (stats/decision.decide) answers "which is lowest" as it answers "which is fastest": the level
    is minus the log of the percentile (higher is better), its variance from a bootstrap over the
    configuration's slices, its degrees of freedom the slices less one."""
    spreads = {}
    for name, own in slices.items():
        found = log_percentile_spread(own, q)
        if found is not None:
            spreads[name] = Spread(-found[0], found[1], float(len(own) - 1), 1, len(own), None)
    return Fit({}, {}, spreads, (), 0.0, 0.0, (), (), {}, False)
