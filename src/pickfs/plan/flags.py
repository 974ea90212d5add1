"""Flags become a plan: `pickfs run`'s options (a dict of click's values) turned into a validated `Plan`, with the
same checks a plan file gets; `pickfs run` only gathers the flags. The workloads and their --set items
(`workload_specs`), --max-time (`parse_max_time`) and --crash-bound (`crash_goal`) are read here for `pickfs crashtest`
and `pickfs search` too, which make their own plans of them (cli/crashtest.py, cli/search.py)."""

from __future__ import annotations

import os
import tomllib
from dataclasses import replace
from typing import Any

from pickfs.errors import PlanError
from pickfs.model import SCHEDULERS, Plan, Target, TargetKind, WorkloadSpec, method_of
from pickfs.plan.build import build_plan
from pickfs.plan.configs import aging_fields, configs_from_names, directory_config
from pickfs.plan.production import (
    expand_clients,
    parse_clients,
    parse_memory,
    parse_scale,
    refuse_without_fixed_rate,
)
from pickfs.plan.settings import check_setting_types
from pickfs.plan.values import parse_share
from pickfs.stack.targets import KINDS
from pickfs.stats.capacity import parse_target
from pickfs.units import parse_duration, parse_size
from pickfs.workloads import DEFAULT_WORKLOAD, REGISTRY, workload_class


def _parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def workload_specs(names: tuple[str, ...], sets: tuple[str, ...], duration: str | None) -> list[WorkloadSpec]:
    # --set scoping: A key that more than one selected workload has must be scoped
    # (--set sysbench-oltp.threads=8); a scoped key applies to that workload only.
    classes = [workload_class(n) for n in names or (DEFAULT_WORKLOAD,)]
    per: dict[str, dict[str, Any]] = {cls.name: {} for cls in classes}
    for key, value in scoped_settings(sets, [cls.name for cls in classes]):
        if "." in key:
            wl, name = key.split(".", 1)
            if name not in workload_class(wl).setting_names():
                raise PlanError(f"--set {key}: {wl} has no setting {name!r}",
                                f"its settings: {', '.join(sorted(workload_class(wl).setting_names()))}")
            per[wl][name] = value
            continue
        having = [cls.name for cls in classes if key in cls.setting_names()]
        if not having:
            known = set().union(*(cls.setting_names() for cls in classes))
            raise PlanError(f"no selected workload has the setting {key}",
                            f"valid settings: {', '.join(sorted(known))}")
        if len(having) > 1:
            raise PlanError(f"--set {key} is a setting of {len(having)} selected workloads ({', '.join(having)})",
                            "say which: " + " or ".join(f"--set {w}.{key}=..." for w in having))
        per[having[0]][key] = value
    specs = []
    for cls in classes:
        own = per[cls.name]
        check_setting_types(cls, own, f"--set for {cls.name}:")
        if duration is not None and "duration" in cls.defaults:
            own["duration"] = parse_duration(duration)
        specs.append(WorkloadSpec(cls.name, cls.name, tuple(sorted(cls.normalize(own).items()))))
    return specs


def scoped_settings(sets: tuple[str, ...], selected: list[str]) -> list[tuple[str, Any]]:
    """--set items as (key, value); a key 'WORKLOAD.KEY' must name a selected workload (pure but for TOML)."""
    out = []
    for item in sets:
        if "=" not in item:
            raise PlanError(f"--set {item!r} is not KEY=VALUE", "e.g. --set synchronous=NORMAL")
        key, value = item.split("=", 1)
        key = key.strip()
        if "." in key:
            wl = key.split(".", 1)[0]
            if wl not in selected:
                raise PlanError(f"--set {key}: {wl!r} is not a selected workload",
                                f"selected: {', '.join(selected)} (add --workload {wl}, "
                                "or scope the key to one of them)")
        out.append((key, _parse_value(value.strip())))
    return out


# Flags whose value cannot be empty: an empty value is a mistake (a shell variable that was not set), not a default.
NOT_EMPTY = ("fs", "size", "memory", "scale", "age", "clients", "device", "confirm_device", "baseline", "duration", "slice", "max_time", "target_ci", "margin", "rate", "latency_target",
             "workdir", "resume")


def check_flags(o: dict[str, Any]) -> None:
    """Flag values no click type checks: none empty, every --dir and --workload named."""
    for key in NOT_EMPTY:
        if o.get(key) is not None and not str(o[key]).strip():
            flag = {"confirm_device": "confirm-device", "max_time": "max-time", "target_ci": "target-ci",
                    "latency_target": "latency-target"}.get(key, key)
            raise PlanError(f"--{flag} is empty", f"give it a value, or leave --{flag} out for its default")
    for key, flag in (("dirs", "dir"), ("workloads", "workload"), ("sets", "set")):
        if any(not str(v).strip() for v in o.get(key) or ()):
            raise PlanError(f"--{flag} is empty", f"give it a value, or leave --{flag} out")
    results = o.get("results_path")
    if results is not None and (not str(results).strip() or os.path.isdir(results)):
        raise PlanError(f"--results {str(results)!r} is not a file", "name the results database, e.g. --results runs.db")


def plan_from_flags(o: dict[str, Any]) -> Plan:
    check_flags(o)
    kind: TargetKind = o["target"] or ("directory" if o["dirs"] else "device" if o["device"] else "image")
    size = Target().size_bytes if o["size"] is None else parse_size(o["size"])
    target = Target(kind=kind, workdir=o["workdir"], size_bytes=size,
                    device=o["device"], confirm=o["confirm_device"], size_auto=o["size"] is None,
                    memory_bytes=parse_memory(o["memory"]) if o.get("memory") else None,
                    scale=parse_scale(o["scale"]) if o.get("scale") else None)
    if not KINDS[kind].builds:
        configs = [directory_config(d) for d in o["dirs"]]
        if not configs:
            raise PlanError("a directory target needs directories", "add --dir PATH (repeatable)")
    else:
        configs = configs_from_names(o["fs"] or "all")
    if o["scheduler"]:
        configs = [replace(c, scheduler=_scheduler(o["scheduler"])) for c in configs]
    if o.get("age"):  # every configuration aged before its data is laid out
        configs = [replace(c, **aging_fields({"age": o["age"]}, "--age")) for c in configs]
    method = method_of(**method_overrides(o), drop_caches=not o["no_drop_caches"], interleave=not o["sequential"])
    if o["sequential"]:  # "each configuration's repetitions together" is the one-at-a-time method
        method = replace(method, side_by_side=False)
    rate_sets = at_rate(o["workloads"], o["rate"]) if o.get("rate") else ()  # fixed rate: workloads/latency.py
    specs = workload_specs(o["workloads"], (*o["sets"], *rate_sets), o["duration"])
    clients_warnings: list[str] = []
    if o.get("clients"):  # concurrency as a dimension
        specs, clients_warnings = expand_clients(specs, parse_clients(o["clients"]))
    if method.latency_target:
        refuse_without_fixed_rate("--latency-target", [s.name for s in specs])
        for s in specs:  # settings a fixed rate cannot run with (fio's), refused before anything is made
            workload_class(s.name).normalize({**dict(s.settings), "rate": s.get("rate") or 1.0})
        if not KINDS[kind].side_by_side:
            raise PlanError("--latency-target searches side by side; a device holds one filesystem at a time",
                            "use image targets (the default) or --dir")
    plan = build_plan(target, configs, specs, method, o["baseline"])
    if clients_warnings:
        plan = replace(plan, warnings=(*plan.warnings, *clients_warnings))
    sliced = [w.name for w in plan.workloads if REGISTRY[w.name].sliceable]
    if o["duration"] and method.side_by_side and KINDS[kind].side_by_side and sliced:
        plan = replace(plan, warnings=(*plan.warnings, f"--duration does not change {', '.join(sliced)} side by side: "
                                       "they run in slices (--slice sets their length, --max-time the whole "
                                       "measurement); --one-at-a-time for runs of --duration each"))
    return plan


def latency_target(text: str, one_at_a_time: bool) -> str:
    """--latency-target p99<=5ms, checked (the capacity search: engine/capacity.py)."""
    try:
        parse_target(text)
    except ValueError as exc:
        raise PlanError(f"--latency-target {exc}", "e.g. --latency-target p99<=5ms") from None
    if one_at_a_time:
        raise PlanError("--latency-target searches side by side", "leave out --one-at-a-time")
    return text.strip()


def at_rate(names: tuple[str, ...], rate: str) -> tuple[str, ...]:
    """--rate N/s as a setting of every selected workload (each must have a fixed-rate mode)."""
    names = names or (DEFAULT_WORKLOAD,)
    for name in names:
        refuse_without_fixed_rate("--rate", [name])
    return tuple(f"{name}.rate={rate.strip()}" for name in names)


# Flags that describe the matrix itself; with --plan, the plan file says these.
PLAN_FLAGS = ("fs", "workloads", "sets", "duration", "scheduler", "target", "size", "device", "dirs", "baseline",
              "memory", "scale", "age", "clients", "rate")


def method_overrides(o: dict[str, Any]) -> dict[str, Any]:
    """Method settings given as flags (only those given)."""
    out: dict[str, Any] = {}
    for key in ("runs", "warmup", "max_runs", "blocks", "rounds", "seed", "baseline_copies"):
        if o.get(key) is not None:
            out[key] = o[key]
    if o.get("one_at_a_time"):
        out["side_by_side"] = False
    elif o.get("runs") is not None and o.get("rounds") is None:  # side by side, "5 runs" is 5 rounds
        out["rounds"] = o["runs"]
    if o.get("slice") is not None:
        out["slice_seconds"] = parse_duration(o["slice"])
    if o["target_ci"] is not None:
        out["target_ci"] = parse_share(o["target_ci"], "--target-ci", "--target-ci 2% or 0.02", upper=1.0)
    if o["max_time"] is not None:
        out["max_seconds"] = parse_max_time(str(o["max_time"]))
    for flag, key, value in (("no_race", "race", False), ("accept_busy", "accept_busy", True),
                             ("no_monitors", "monitors", False)):
        if o.get(flag):
            out[key] = value
    if o.get("margin") is not None:
        out["margin"] = parse_share(o["margin"], "--margin", "--margin 5% or 0.05", upper=0.5)
    if o.get("latency_target"):
        out["latency_target"] = latency_target(o["latency_target"], bool(o.get("one_at_a_time")))
    return out | _crash_overrides(o)


def _crash_overrides(o: dict[str, Any]) -> dict[str, Any]:
    """`pickfs run`'s crash test as method settings: --crash-states, --crash-time, --crash-bound (only those given)."""
    out: dict[str, Any] = {}
    if o.get("crash_states") is not None:
        out["crash_states"] = o["crash_states"]
    if o.get("crash_time") is not None:
        if not o.get("crash_states"):
            raise PlanError("--crash-time needs --crash-states", "e.g. --crash-states 12 --crash-time 2m")
        out["crash_time"] = parse_duration(str(o["crash_time"]))
    if o.get("crash_bound") is not None:
        if not o.get("crash_states"):
            raise PlanError("--crash-bound needs --crash-states",
                            "e.g. --crash-states 12 --crash-time 2m --crash-bound 150")
        out |= crash_goal(o["crash_bound"], out.get("crash_time", 0.0), "add --crash-time 2m")
    return out


def crash_goal(given: int | None, budget: float, budget_fix: str) -> dict[str, Any]:
    """--crash-bound K (`pickfs crashtest`, `pickfs run`): the bound a configuration that lost nothing stops at, as
    method settings; none when not given (the plan's then holds). `budget` is the checking time per configuration
    in seconds (0: none), `budget_fix` how this command gets one."""
    if given is None:
        return {}
    if given < 2:
        raise PlanError(f"--crash-bound {given} rules out nothing", "e.g. --crash-bound 150: a loss in 1 power cut "
                        "of 150 or more ruled out")
    if budget <= 0:
        raise PlanError("--crash-bound needs a budget to stop early in", budget_fix)
    return {"crash_bound": given}


OLD_SCHEDULERS = {"deadline": "mq-deadline", "noop": "none", "cfq": "bfq"}  # the single-queue names, gone in 5.0


def _scheduler(name: str) -> str:
    if name in SCHEDULERS:
        return name
    newer = OLD_SCHEDULERS.get(name)
    raise PlanError(f"--scheduler {name!r} is not an I/O scheduler of this kernel's kind"
                    + (f": {name} was the single-queue scheduler that {newer} replaced" if newer else ""),
                    f"use --scheduler {newer}" if newer else f"use one of: {', '.join(SCHEDULERS)}")


def parse_max_time(text: str) -> float:
    """--max-time in seconds; a number without its unit is refused (5 could be seconds or minutes)."""
    try:
        float(text.strip())
    except ValueError:
        return parse_duration(text)
    raise PlanError(f"--max-time {text.strip()} has no unit", f"write --max-time {text.strip()}m for minutes, "
                    f"{text.strip()}s for seconds, 1h for an hour")
