"""Fields read back from a results database, checked before anything believes them (pure).

A results file can be damaged, edited or written by another program: every JSON field is parsed and
its shape checked here, so a bad one ends in one line naming the run, never in an internal error
somewhere in a report.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pickfs.model import plan_from_dict


class Damaged(ValueError):
    """A stored field that is not what pickfs wrote."""


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


def check_plan(plan: dict[str, Any]) -> dict[str, Any]:
    """A stored plan that reports can read: Damaged naming what is wrong otherwise."""
    for key in ("configs", "workloads"):
        if not isinstance(plan.get(key), list) or not all(isinstance(x, dict) for x in plan[key]):
            raise Damaged(f"its plan's {key} are not a list of tables")
    for c in plan["configs"]:
        if not all(isinstance(c.get(k), str) for k in ("name", "fstype")) or \
                not _strings(c.get("mkfs_options")) or not _strings(c.get("mount_options")):
            raise Damaged("its plan has a configuration without a name, a filesystem or options")
    for w in plan["workloads"]:
        if not all(isinstance(w.get(k), str) for k in ("name", "label")) or not isinstance(w.get("settings"), dict):
            raise Damaged("its plan has a workload without a name, a label or settings")
    if not isinstance(plan.get("method"), dict) or not isinstance(plan.get("target"), dict):
        raise Damaged("its plan has no method or target")
    if not _strings(plan.get("warnings", [])) or not isinstance(plan.get("baseline"), (str, type(None))):
        raise Damaged("its plan's warnings or baseline are not text")
    try:
        plan_from_dict(plan)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise Damaged(f"its plan cannot be read ({type(exc).__name__}: {exc})"[:160]) from None
    return plan


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
