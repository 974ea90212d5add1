"""Latency percentiles from a raw output's histogram (pure), and the fixed-rate settings and figures."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from pickfs.errors import PlanError
from pickfs.model import MetricDef
from pickfs.stats import percentile_from_histogram
from pickfs.units import parse_duration

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


# -- fixed rate (open loop): settings every pickfs-client workload accepts, present only when given --------
RATE_DEFAULTS: dict[str, Any] = {"rate": 0.0, "arrivals": "poisson", "latency_limit": 0.0}
ARRIVALS = ("poisson", "uniform")
RATE_METRICS = (
    MetricDef("offered_rate", "tx/s", True, "fixed rate: transactions due per second"),
    MetricDef("sched_p50", "s", False, "fixed rate: median latency from each transaction's scheduled start"),
    MetricDef("sched_p99", "s", False, "fixed rate: 99th percentile latency from the scheduled start"),
    MetricDef("sched_p999", "s", False, "fixed rate: 99.9th percentile latency from the scheduled start"),
    MetricDef("late_share", "share", False, "fixed rate: share of transactions due that began over 1 ms late"),
    MetricDef("skipped_share", "share", False, "fixed rate: share of transactions due that were skipped "
                                               "(later than the latency limit) or left unfinished"),
    MetricDef("lag_p99", "s", False, "fixed rate: 99th percentile of start minus scheduled start"),
)

# the client process's CPU in CPUs: one Python process drives the database, so near 1 it set the pace itself
CPU_SHARE = MetricDef("client_cpu_share", "CPU", False, "CPU the client itself used, in CPUs (near 1: the client, "
                                                          "not the disk, set the pace)")
CPU_BOUND_SHARE = 0.9  # a fixed-rate slice whose client used more CPU than this is flagged


def rate_settings(name: str, given: dict[str, Any]) -> dict[str, Any]:
    """The fixed-rate settings checked (rate in transactions per second, latency_limit in seconds); {} when
    no rate is given, so a closed-loop job's settings stay as they were. Raises PlanError naming the fix."""
    if not given.get("rate"):
        extra = sorted(k for k in given if k != "rate")
        if extra:
            raise PlanError(f"{name} {', '.join(extra)} needs a fixed rate", "add rate = N (transactions per second), "
                            "or --rate N/s")
        return {}
    try:
        rate = parse_rate(given["rate"])
    except ValueError as exc:
        raise PlanError(f"{name} rate: {exc}", "e.g. rate = 400 or --rate 400/s") from None
    arrivals = str(given.get("arrivals", RATE_DEFAULTS["arrivals"])).lower()
    if arrivals not in ARRIVALS:
        raise PlanError(f"{name} arrivals {arrivals!r} is not valid", f"use one of {', '.join(ARRIVALS)}")
    limit = given.get("latency_limit", 0.0)
    try:
        limit = parse_duration(limit) if limit else 0.0
    except (PlanError, ValueError):
        raise PlanError(f"{name} latency_limit {limit!r} is not a duration", "e.g. latency_limit = \"50ms\"") from None
    return {"rate": rate, "arrivals": arrivals, "latency_limit": float(limit)}


def parse_rate(value: Any) -> float:
    """'400', '400/s', 400 -> 400.0 transactions per second (pure)."""
    text = str(value).strip().lower().removesuffix("/s").removesuffix("tx").strip()
    try:
        rate = float(text)
    except ValueError:
        raise ValueError(f"{value!r} is not a rate (transactions per second, e.g. 400/s)") from None
    if not math.isfinite(rate) or rate <= 0:
        raise ValueError(f"{value!r} is not a positive rate")
    return rate


def rate_args(settings: dict[str, Any]) -> list[str]:
    """The client's fixed-rate arguments; none for a closed-loop run."""
    if not settings.get("rate"):
        return []
    return ["--rate", repr(float(settings["rate"])), "--arrivals", settings["arrivals"],
            "--latency-limit", repr(float(settings["latency_limit"]))]


def rate_metrics(doc: Mapping[str, Any]) -> dict[str, float]:
    """A client's fixed_rate block -> offered rate, percentiles from the scheduled start, late and skipped shares."""
    due = int(doc["due"])
    out = {"offered_rate": float(doc["offered"])}
    if due:
        if "late" in doc:  # sysbench reports no per-transaction lag: nothing known late
            out["late_share"] = int(doc["late"]) / due
        out["skipped_share"] = (int(doc["skipped"]) + int(doc["unfinished"])) / due
    hist = {float(k) / 1e6: int(v) for k, v in doc["latency_us"].items()}
    if hist:
        for q, name in ((50, "sched_p50"), (99, "sched_p99"), (99.9, "sched_p999")):
            out[name] = percentile_from_histogram(hist, q)
    lag = {float(k) / 1e6: int(v) for k, v in doc["lag_us"].items()}
    if lag:
        out["lag_p99"] = percentile_from_histogram(lag, 99)
    return out


class FixedRate:
    """Mixin for workloads driven by pickfs's own clients: the fixed-rate settings, accepted beside their own."""

    defaults: ClassVar[dict[str, Any]]
    name: ClassVar[str]

    @classmethod
    def setting_names(cls) -> set[str]:
        return set(cls.defaults) | set(RATE_DEFAULTS)

    @classmethod
    def normalize(cls, settings: dict[str, Any]) -> dict[str, Any]:
        own = {k: v for k, v in settings.items() if k not in RATE_DEFAULTS}
        out: dict[str, Any] = super().normalize(own)  # type: ignore[misc]
        out.update(rate_settings(cls.name, {k: v for k, v in settings.items() if k in RATE_DEFAULTS}))
        return out


def rate_notes(doc: Mapping[str, Any]) -> list[str]:
    """A fixed-rate slice's honest limits, from its client's JSON document (pure): a client that was
    CPU-bound, and transactions skipped or left unfinished."""
    block = doc.get("fixed_rate")
    if not isinstance(block, Mapping):
        return []
    notes = []
    elapsed, cpu = float(doc.get("elapsed_s") or 0.0), float(doc.get("client_cpu_s") or 0.0)
    if elapsed > 0 and cpu / elapsed > CPU_BOUND_SHARE:
        notes.append(f"fixed rate: the client was CPU-bound ({cpu / elapsed:.2f} CPU): it, not the storage, "
                     "may have set the latency of this slice")
    missed = int(block.get("skipped", 0)) + int(block.get("unfinished", 0))
    if missed:
        notes.append(f"fixed rate: {missed} of {block.get('due')} transactions due were not run "
                     f"({block.get('skipped', 0)} past the latency limit, {block.get('unfinished', 0)} still waiting "
                     "when the backlog's drain ended)")
    return notes
