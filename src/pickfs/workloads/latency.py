"""Latency percentiles from a raw output's histogram (pure)."""

from __future__ import annotations

from collections.abc import Mapping

from pickfs.model import MetricDef
from pickfs.stats import percentile_from_histogram

LATENCY_METRICS = (
    MetricDef("lat_p50", "s", False, "median latency"),
    MetricDef("lat_p95", "s", False, "95th percentile latency"),
    MetricDef("lat_p99", "s", False, "99th percentile latency"),
    MetricDef("lat_max", "s", False, "slowest transaction"),
)


def latency_metrics(histogram_us: Mapping[str, int]) -> dict[str, float]:
    """{'123': count, ...} in microseconds -> lat_p50/p95/p99/max in seconds."""
    hist = {float(k) / 1e6: int(v) for k, v in histogram_us.items()}
    if not hist:
        return {}
    return {name: percentile_from_histogram(hist, q)
            for q, name in ((50, "lat_p50"), (95, "lat_p95"), (99, "lat_p99"), (100, "lat_max"))}
