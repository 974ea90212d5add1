"""[method]: its keys, types and ranges as the schema declares them, and the rules between them."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from pickfs.crash.runner import kept_images_only
from pickfs.crash.states import STRATEGIES, parse_strategies
from pickfs.errors import PlanError
from pickfs.faults.plan import FaultPlan, parse_faults
from pickfs.model import Method, Target, method_of
from pickfs.plan.schema import METHOD_DEFAULTS, METHOD_KEYS, Span
from pickfs.plan.values import unknown_keys
from pickfs.safepaths import check_own_dir
from pickfs.stack.targets import target_kind
from pickfs.stats.capacity import parse_target


def method_from_table(t: dict[str, Any]) -> Method:
    """The [method] table: known keys, each of its type (ranges are checked with the whole plan)."""
    unknown_keys(t, set(METHOD_KEYS), "[method]")
    for key, value in t.items():
        check_method_value(key, value)
    if "runs" in t and "rounds" not in t:  # side by side, a plan's "3 runs" is 3 rounds (as --runs)
        t = {**t, "rounds": t["runs"]}
    return method_of(**t, crash_size_auto="crash_size" not in t)


def _want(key: str) -> type:
    """The Python type a [method] value must have: the schema's, else (a field that is no plan key) its default's."""
    spec = METHOD_KEYS.get(key)
    if spec is not None and spec.python is not None:
        return spec.python
    return type(METHOD_DEFAULTS[key])


def fault_plans(method: Method) -> list[FaultPlan]:
    """The faults the method injects (its faults part), checked: PlanError naming the fix (pure)."""
    f = method.faults
    return parse_faults(f.kinds, f.at, f.lasts, f.seed)


def check_method(method: Method) -> None:
    """Every field of the method of the right type, finite, and within its range."""
    for key, value in method.flat().items():
        if value is None and METHOD_DEFAULTS[key] is None:
            continue
        check_method_value(key, value)
        spec = METHOD_KEYS.get(key)
        if isinstance(value, float) and not math.isfinite(value):
            raise PlanError(f"[method] {key} must be a finite number, not {value}",
                            f"e.g. {spec.example if spec else ''}")
        if spec is None or spec.span is None or spec.apart or isinstance(value, (bool, str)):
            continue
        if not spec.span.contains(value):
            raise PlanError(f"[method] {key} = {value} is out of range: it must be {spec.span.words()}",
                            f"e.g. {spec.example}")


def check_method_value(key: str, value: Any) -> None:
    """One [method] value of the type its default has (None allowed where the default is None)."""
    default = METHOD_DEFAULTS[key]
    want = _want(key)
    ok = isinstance(value, want) and not (want is not bool and isinstance(value, bool))
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        example = {bool: "true", int: "3", float: "1.5"}.get(want, repr(default))
        raise PlanError(f"[method] {key} must be {'a whole number' if want is int else want.__name__}, "
                        f"not {value!r}", f"e.g. {key} = {example}")


def _span(key: str) -> Span:
    span = METHOD_KEYS[key].span
    assert span is not None
    return span


def check_method_ranges(method: Method) -> None:
    """Counts, lengths and shares of the method within their ranges (the ones with a hint of their own)."""
    if method.runs < 1:
        raise PlanError("runs must be at least 1", "e.g. --runs 5")
    if method.warmup < 0:
        raise PlanError("warmup cannot be negative", "e.g. --warmup 1")
    if method.slices.blocks is not None and method.slices.blocks < 1:
        raise PlanError("blocks must be at least 1", "e.g. --blocks 3")
    if method.slices.rounds is not None and method.slices.rounds < 1:
        raise PlanError("rounds must be at least 1", "e.g. --rounds 5")
    if method.slices.slice_seconds is not None and not _span("slice_seconds").contains(method.slices.slice_seconds):
        raise PlanError(f"slice length {method.slices.slice_seconds} s is out of range", "e.g. --slice 1s (0.1 s to 1 h)")
    if method.max_seconds is not None and method.max_seconds <= 0:
        raise PlanError("the time budget must be positive", "e.g. --max-time 8m")
    if method.latency_target is not None:  # the capacity search (engine/capacity.py)
        try:
            parse_target(method.latency_target)
        except ValueError as exc:
            raise PlanError(f"latency_target {exc}", 'e.g. latency_target = "p99<=5ms" (or --latency-target)') from None
    if method.target_ci is not None and not _span("target_ci").contains(method.target_ci):
        raise PlanError("target_ci must be a share between 0 and 1", "e.g. target_ci = 0.05 (or --target-ci 5%)")
    if method.target_ci is not None and method.max_runs < method.runs:
        raise PlanError(f"max_runs {method.max_runs} is below runs {method.runs}", "raise --max-runs or lower --runs")


def check_crash_method(method: Method, target: Target) -> None:
    """The crash test's settings: states, duration, the unit and the strategies."""
    if method.crash.states < 0 or (not method.speed and method.crash.states < 1):
        raise PlanError("crash_states must be a positive number of power-cut states", "e.g. --states 12")
    if method.crash.keep:
        keep = Path(method.crash.keep)
        problem = check_own_dir(keep, "crash_keep", made=kept_images_only)
        if problem:
            raise PlanError(problem, "name a new or empty directory of your own (it is made if missing)")
        if not Path(os.path.abspath(keep)).parent.is_dir():
            raise PlanError(f"crash_keep {keep}: its parent directory does not exist", "make it first, or name another")
    if method.faults.kinds:
        fault_plans(method)  # PlanError naming the fix
    if not method.crash.states:
        return
    if method.crash.duration <= 0:
        raise PlanError("crash_duration must be positive", "e.g. crash_duration = 3.0")
    if method.crash.time < 0:
        raise PlanError("crash_time must be 0 (exactly crash_states states) or a positive number of seconds",
                        "e.g. crash_time = 120 (or --crash-time 2m)")
    if method.crash.bound == 1:
        raise PlanError("crash_bound = 1 rules out nothing", "crash_bound = 150: stop once a loss in 1 power cut of 150 "
                        "or more is ruled out (0: no goal)")
    if method.crash.unit & (method.crash.unit - 1):
        raise PlanError(f"crash_unit = {method.crash.unit} is not a power of two", "e.g. crash_unit = 4096")
    try:
        parse_strategies(method.crash.strategies)
    except ValueError as exc:
        raise PlanError(f"crash_strategies: {exc}", f"use some of: {', '.join(STRATEGIES)}") from None
    if not target_kind(target).builds:
        raise PlanError("a crash test builds its own filesystems; it cannot use existing directories",
                        "use an image target (the default) for crash tests")
