"""Fields read back from a results database, checked before anything believes them (pure).

A results file can be damaged, edited or written by another program: every JSON field is parsed and
its shape checked here, so a bad one ends in one line naming the run, never in an internal error
somewhere in a report.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
import typing
from typing import Any

from pickfs.model import (
    METHOD_PARTS,
    PART_TYPES,
    STOP_REASONS,
    FsConfig,
    Method,
    MetricDef,
    RaceRound,
    Target,
    plan_from_dict,
)


class Damaged(ValueError):
    """A stored field that is not what pickfs wrote."""


_hints = functools.cache(typing.get_type_hints)  # a dataclass's field types, resolved once per class


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def loads(text: Any, kind: type, what: str) -> Any:
    """A JSON field of the type `kind` (dict or list); Damaged otherwise."""
    if not isinstance(text, str):
        raise Damaged(f"its {what} is not text")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise Damaged(f"its {what} is not JSON") from None
    if not isinstance(value, kind):
        raise Damaged(f"its {what} is not a JSON {'object' if kind is dict else 'list'}")
    return value


def _strings(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def _fits(value: Any, hint: Any) -> bool:
    """Whether a stored value is of a dataclass field's type (the plain types a plan holds)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if origin is tuple:
        return isinstance(value, (list, tuple)) and all(_fits(v, args[0]) for v in value)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if hint is str:
        return isinstance(value, str)
    return True


def _check_fields(d: Any, cls: type, what: str, extra: tuple[str, ...] = ()) -> None:
    """A stored dataclass as a dict: only its fields (and `extra`), each of its type, the required ones there."""
    if not isinstance(d, dict):
        raise Damaged(f"its {what} is not a table")
    hints = _hints(cls)
    unknown = set(d) - set(hints) - set(extra)
    if unknown:
        raise Damaged(f"its {what} has unknown fields ({', '.join(sorted(map(str, unknown)))[:60]})")
    for f in dataclasses.fields(cls):
        if f.name not in d:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise Damaged(f"its {what} has no {f.name}")
        elif isinstance(hints[f.name], type) and dataclasses.is_dataclass(hints[f.name]):
            _check_fields(d[f.name], hints[f.name], f"{what} {f.name}")
        elif not _fits(d[f.name], hints[f.name]):
            raise Damaged(f"its {what}'s {f.name} is not what pickfs writes")


def _check_workload(w: Any) -> None:
    if not isinstance(w, dict) or not all(isinstance(w.get(k), str) for k in ("name", "label")) or \
            not isinstance(w.get("settings"), dict) or not all(isinstance(k, str) for k in w["settings"]):
        raise Damaged("its plan has a workload without a name, a label or settings")
    if not isinstance(w.get("metrics", []), list):
        raise Damaged("its plan's workload metrics are not a list")
    for m in w.get("metrics", []):
        _check_fields(m, MetricDef, f"workload {w['label']}'s metrics")
    if not _strings(w.get("breakdown", [])) or not _strings(w.get("risks", [])) or not isinstance(w.get("database"), (str, type(None))):
        raise Damaged(f"its plan's workload {w['label']} has a breakdown, risks or a database that are not text")


def _check_method(d: Any) -> None:
    """A stored method: its own fields and each mode's part nested, or (a run stored before the split) every setting
    by its flat key; each of its type."""
    _check_fields(d, Method, "plan's method", extra=tuple(METHOD_PARTS))
    for key, (part, name) in METHOD_PARTS.items():
        if key in d and not _fits(d[key], _hints(PART_TYPES[part])[name]):
            raise Damaged(f"its plan's method's {key} is not what pickfs writes")


def check_plan(plan: dict[str, Any]) -> dict[str, Any]:
    """A stored plan that reports can read: Damaged naming what is wrong otherwise."""
    for key in ("configs", "workloads"):
        if not isinstance(plan.get(key), list):
            raise Damaged(f"its plan's {key} are not a list of tables")
    for c in plan["configs"]:
        _check_fields(c, FsConfig, "plan's configuration", extra=("risks",))
        if not _strings(c.get("risks", [])):
            raise Damaged("its plan's configuration risks are not text")
    for w in plan["workloads"]:
        _check_workload(w)
    _check_method(plan.get("method"))
    _check_fields(plan.get("target"), Target, "plan's target")
    if not _strings(plan.get("warnings", [])) or not isinstance(plan.get("baseline"), (str, type(None))):
        raise Damaged("its plan's warnings or baseline are not text")
    try:
        plan_from_dict(plan)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise Damaged(f"its plan cannot be read ({type(exc).__name__}: {exc})"[:160]) from None
    return plan


def check_host(host: dict[str, Any]) -> dict[str, Any]:
    """A stored host record: its fingerprint (when there is one) a table of names and plain values, its tools
    a table of names and versions."""
    for key in ("fingerprint", "tools"):
        value = host.get(key)
        if value is not None and (not isinstance(value, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, (str, int, float, bool))) for k, v in value.items())):
            raise Damaged(f"its host record's {key} is not a table of names and plain values")
    return host


def check_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    if not all(isinstance(k, str) and (v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)))
               for k, v in metrics.items()):
        raise Damaged("a trial's metrics are not numbers")
    return metrics


def check_trial_row(row: tuple[Any, ...]) -> None:
    """The plain columns of a stored trial (cell, repetition, phase, started, elapsed, ok)."""
    cell, rep, phase, started, elapsed = row[0], row[1], row[2], row[3], row[4]
    if not isinstance(cell, int) or not isinstance(rep, int) or not isinstance(phase, str) or \
            not _finite(started) or not _finite(elapsed):
        raise Damaged("a trial's cell, repetition, phase or times are not what pickfs writes")


_MONITOR_NAMES = ("disk", "journal")  # the only totals that are names, not numbers


def _entries(value: Any, numbers: tuple[str, ...]) -> bool:
    """A list of tables, each with a `comm` of text and the numbers named."""
    return isinstance(value, list) and all(
        isinstance(e, dict) and isinstance(e.get("comm"), str) and all(_finite(e.get(k)) for k in numbers)
        for e in value)


def check_monitor(monitor: dict[str, Any]) -> dict[str, Any]:
    """What the monitors recorded of a trial, in the shape reports read: totals of numbers (the disk's and the
    journal's names aside), processes with their bytes, waiting shares, series of numbers with their times."""
    totals = monitor.get("totals", {})
    if not isinstance(totals, dict) or not all(
            isinstance(v, str) if k in _MONITOR_NAMES else _finite(v) for k, v in totals.items()):
        raise Damaged("a trial's monitor totals are not numbers")
    if not all(_entries(monitor.get(k, []), ("read_bytes", "write_bytes")) for k in ("processes", "other_processes")) \
            or not all(_entries(monitor.get(k, []), ("share",)) for k in ("io_waiting", "io_waiting_other")):
        raise Damaged("a trial's monitored processes are not what pickfs writes")
    series = monitor.get("series", {})
    if not isinstance(series, dict) or not all(
            isinstance(v, list) and all(_finite(x) for x in v) for v in series.values()) or (series and "t" not in series):
        raise Damaged("a trial's monitor series are not lists of numbers with their times")
    return monitor


def check_mount(mount: dict[str, Any]) -> dict[str, Any]:
    """The mount a trial read back: its options in force, when there, a list of text."""
    if not _strings(mount.get("effective_options", [])) or not _strings(mount.get("requested_options", [])):
        raise Damaged("a trial's mount options are not text")
    return mount


_DECISION: dict[str, type | tuple[type, ...]] = {"settled": bool, "answer": (str, type(None)), "undecided": list, "out": list, "decided": list,
             "pending": list, "margin": (int, float)}


def race_round(row: tuple[Any, ...]) -> RaceRound:
    """A stored round of a race (workload, round, decision_json, stop), its shape checked; Damaged otherwise."""
    label, round_no, text, stop = row
    if not isinstance(label, str) or not isinstance(round_no, int) or isinstance(round_no, bool) or \
            (stop is not None and stop not in STOP_REASONS):
        raise Damaged("a race's round has a workload, round or reason to stop that pickfs does not write")
    wrapped = loads(f"[{text}]" if isinstance(text, str) else None, list, "race's decision")
    if len(wrapped) != 1:
        raise Damaged(f"the decision of {label}'s round {round_no} is not JSON")
    decision: Any = wrapped[0]
    if decision is not None and (not isinstance(decision, dict) or any(
            not isinstance(decision.get(k), kinds) for k, kinds in _DECISION.items())
            or not all(_strings(decision[k]) for k in ("undecided", "pending"))
            or not all(_strings(pair) and len(pair) == 2 for k in ("out", "decided") for pair in decision[k])):
        raise Damaged(f"the decision of {label}'s round {round_no} is not one the race records")
    return RaceRound(label, round_no, decision, stop)
