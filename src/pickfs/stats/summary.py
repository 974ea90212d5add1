"""Summaries of repeated measurements (pure functions)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from scipy import stats as sps

from pickfs.model import Summary


def sanitized_mean(values: Sequence[float]) -> float:
    """Mean without the single highest and lowest value (R4's "sanitized mean").

    With fewer than three values there is nothing to drop, so it is the plain mean.
    """
    if not values:
        raise ValueError("no values")
    if len(values) < 3:
        return statistics.fmean(values)
    ordered = sorted(values)
    return statistics.fmean(ordered[1:-1])


def mean_confidence_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean. A single value gives a zero-width interval at it."""
    n = len(values)
    m = statistics.fmean(values)
    if n < 2:
        return (m, m)
    sem = statistics.stdev(values) / math.sqrt(n)
    half = float(sps.t.ppf(0.5 + level / 2, n - 1)) * sem
    return (m - half, m + half)


def summarize(values: Sequence[float], level: float = 0.95) -> Summary:
    if not values:
        raise ValueError("no values to summarize")
    vals = [float(v) for v in values]
    mean = statistics.fmean(vals)
    sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
    lo, hi = mean_confidence_interval(vals, level)
    return Summary(
        n=len(vals),
        mean=mean,
        sanitized_mean=sanitized_mean(vals),
        median=statistics.median(vals),
        stdev=sd,
        cv=(sd / mean) if mean else math.nan,
        ci_low=lo,
        ci_high=hi,
        minimum=min(vals),
        maximum=max(vals),
    )


def relative(value: float, baseline: float) -> float:
    """Score against a baseline = 100."""
    if baseline == 0:
        return math.nan
    return 100.0 * value / baseline


def percentile_from_histogram(histogram: Mapping[float, int], q: float) -> float:
    """The q-th percentile (0..100) of values given as value -> count (nearest rank)."""
    if not 0 <= q <= 100:
        raise ValueError("q must be within 0..100")
    items = sorted((float(k), int(c)) for k, c in histogram.items() if int(c) > 0)
    total = sum(c for _, c in items)
    if total == 0:
        raise ValueError("empty histogram")
    rank = max(1, math.ceil(q / 100 * total))
    seen = 0
    for value, count in items:
        seen += count
        if seen >= rank:
            return value
    return items[-1][0]


def drift(values: Sequence[float]) -> float:
    """Relative change from the first to the last value, e.g. 0.05 for +5%."""
    if len(values) < 2 or values[0] == 0:
        return 0.0
    return (values[-1] - values[0]) / values[0]


def trend(values: Sequence[float]) -> tuple[float, float]:
    """Kendall's tau of the values against their order, and its two-sided p-value.

    A p-value under 0.05 says the runs drift one way (warming up, filling up, throttling)
    rather than scattering; with fewer than four runs there is no evidence either way (p = 1).
    """
    if len(values) < 4 or len(set(values)) < 2:
        return 0.0, 1.0
    result = sps.kendalltau(range(len(values)), values)
    return float(result.statistic), float(result.pvalue)


def log_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float] | None:
    """Geometric mean and its Student-t interval on the log scale, for positive figures (rates, times).

    A rate or a time cannot go below zero, and its spread is multiplicative: the interval of the
    mean of the logs, taken back, stays positive and is as wide in ratio either side. None when
    a value is not positive or there are fewer than two.
    """
    if len(values) < 2 or any(v <= 0 for v in values):
        return None
    logs = [math.log(v) for v in values]
    m = statistics.fmean(logs)
    half = float(sps.t.ppf(0.5 + level / 2, len(logs) - 1)) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(m), math.exp(m - half), math.exp(m + half)
