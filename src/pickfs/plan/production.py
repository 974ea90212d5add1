"""Production conditions: the box's memory, data sized to it, and the client counts (pure parsing)."""

from __future__ import annotations

import math
from typing import Any

from pickfs.errors import PlanError
from pickfs.model import WorkloadSpec
from pickfs.plan.schema import PRODUCTION, Span
from pickfs.units import parse_size
from pickfs.workloads import REGISTRY, workload_class


def _span(name: str) -> Span:
    span = PRODUCTION.key(name).span
    assert span is not None
    return span


def parse_memory(value: Any) -> int:
    """The memory of the production box: at least 64 MiB."""
    size = parse_size(value)
    if not _span("memory").contains(size):
        raise PlanError(f"memory {value!r} is too small for a database server", 'e.g. memory = "1G" (at least 64M)')
    return size


def parse_scale(value: Any) -> float:
    """How many times the memory the workloads' data should be: 2, 2.5 or "2x"."""
    text = str(value).strip().lower().rstrip("x") if isinstance(value, (str, int, float)) \
        and not isinstance(value, bool) else ""
    try:
        scale = float(text)
    except ValueError:
        raise PlanError(f"scale {value!r} is not a multiple of the memory", 'e.g. scale = 2 (data twice the memory)') \
            from None
    span = _span("scale")
    if not math.isfinite(scale) or not span.contains(scale):
        raise PlanError(f"scale {value!r} is out of range",
                        f"a multiple of the memory from {span.low} to {span.high:g}, e.g. scale = 2")
    return scale


def parse_clients(value: Any) -> tuple[int, ...]:
    """The client counts of the concurrency dimension: [1, 2, 4, 8] or "1,2,4,8"."""
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else [value]
    counts = []
    span = _span("clients")
    for item in items:
        text = str(item).strip()
        if isinstance(item, bool) or not text.isdigit() or not span.contains(int(text)):
            raise PlanError(f"clients {value!r} is not a list of client counts", "e.g. clients = [1, 2, 4, 8]")
        counts.append(int(text))
    if not counts:
        raise PlanError("clients is empty", "e.g. clients = [1, 2, 4, 8]")
    return tuple(dict.fromkeys(counts))


def expand_clients(workloads: list[WorkloadSpec], counts: tuple[int, ...]) -> tuple[list[WorkloadSpec], list[str]]:
    """Every server workload once per client count, labelled LABEL-cN; the others as they are, with a warning."""
    out, warnings = [], []
    for w in workloads:
        cls = workload_class(w.name)
        key = cls.clients_setting
        if key is None:
            warnings.append(f"clients does not apply to {w.label}: it has no client count")
            out.append(w)
            continue
        for n in counts:
            settings = {**dict(w.settings), key: n}
            if "threads" in settings and key == "clients" and isinstance(settings["threads"], int):
                settings["threads"] = min(settings["threads"], n)  # pgbench: no more threads than clients
            out.append(WorkloadSpec(w.name, f"{w.label}-c{n}", tuple(sorted(cls.check(settings).items()))))
    return out, warnings


def has_fixed_rate(name: str) -> bool:
    """Whether the workload `name` has a fixed-rate mode (a `rate` setting: workloads/latency.py)."""
    return "rate" in workload_class(name).setting_names()


def refuse_without_fixed_rate(flag: str, names: list[str]) -> None:
    """PlanError naming the workloads that have a fixed-rate mode, when any of `names` has none (`flag` asks for
    one)."""
    no_rate = [n for n in names if not has_fixed_rate(n)]
    if no_rate:
        having = sorted(n for n in REGISTRY if has_fixed_rate(n))
        raise PlanError(f"{flag}: {', '.join(no_rate)} has no fixed-rate mode",
                        f"workloads that have one: {', '.join(having)}")


def budget_shares(workloads: list[WorkloadSpec] | tuple[WorkloadSpec, ...]) -> dict[str, float]:
    """Each workload's share of its time budget (pure): the client counts one workload was expanded into
    (LABEL-c1, LABEL-c2, ...) share that workload's budget; any other workload has it whole."""
    groups: dict[tuple[str, str], list[str]] = {}
    for w in workloads:
        key = workload_class(w.name).clients_setting
        count = dict(w.settings).get(key) if key else None
        base = w.label.removesuffix(f"-c{count}") if count is not None else w.label
        groups.setdefault((w.name, base), []).append(w.label)
    return {label: 1.0 / len(labels) for labels in groups.values() for label in labels}


def scaled_workloads(workloads: list[WorkloadSpec], data_bytes: int) -> tuple[list[WorkloadSpec], list[str]]:
    """Each workload with its data grown to about `data_bytes`; a warning for each that has no data to grow."""
    out, warnings = [], []
    for w in workloads:
        grown = workload_class(w.name).scaled(w, data_bytes)
        if grown is None:
            warnings.append(f"scale does not apply to {w.label}: it has no data-size setting")
            out.append(w)
        else:
            out.append(WorkloadSpec(w.name, w.label, tuple(sorted(grown.items()))))
    return out, warnings
