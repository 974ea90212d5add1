"""`pickfs run`: build each configuration, run the workloads, report."""

from __future__ import annotations

import os
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from pickfs import console
from pickfs.cli.common import results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.cli.plan_check import show_plan
from pickfs.cli.report import check_export_targets, export_targets, with_exports, write_exports
from pickfs.errors import EXIT_INTERRUPTED, PlanError
from pickfs.model import SCHEDULERS, Method, Plan, Target, TargetKind, WorkloadSpec
from pickfs.plan import (
    aging_fields,
    build_plan,
    check_setting_types,
    configs_from_names,
    directory_config,
    expand_clients,
    load_plan_file,
    parse_clients,
    parse_memory,
    parse_scale,
)
from pickfs.report.terminal import render_run, terse_lines
from pickfs.run_console import ConsoleEvents
from pickfs.stack.targets import KINDS
from pickfs.stats.capacity import parse_target
from pickfs.units import parse_duration, parse_size
from pickfs.usecases.run import RunRequest, run_plan
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
    method = replace(Method(), **method_overrides(o), drop_caches=not o["no_drop_caches"],
                     interleave=not o["sequential"])
    if o["sequential"]:  # "each configuration's repetitions together" is the one-at-a-time method
        method = replace(method, side_by_side=False)
    rate_sets = at_rate(o["workloads"], o["rate"]) if o.get("rate") else ()  # fixed rate: workloads/latency.py
    specs = workload_specs(o["workloads"], (*o["sets"], *rate_sets), o["duration"])
    clients_warnings: list[str] = []
    if o.get("clients"):  # concurrency as a dimension
        specs, clients_warnings = expand_clients(specs, parse_clients(o["clients"]))
    if method.latency_target:
        no_rate = [s.name for s in specs if "rate" not in workload_class(s.name).setting_names()]
        if no_rate:
            having = sorted(n for n, c in REGISTRY.items() if "rate" in c.setting_names())
            raise PlanError(f"--latency-target: {', '.join(no_rate)} has no fixed-rate mode",
                            f"workloads that have one: {', '.join(having)}")
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
    out = []
    for name in names or (DEFAULT_WORKLOAD,):
        if "rate" not in workload_class(name).setting_names():
            having = sorted(n for n, c in REGISTRY.items() if "rate" in c.setting_names())
            raise PlanError(f"--rate: {name} has no fixed-rate mode", f"workloads that have one: {', '.join(having)}")
        out.append(f"{name}.rate={rate.strip()}")
    return tuple(out)


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
        out["target_ci"] = parse_share(o["target_ci"], "--target-ci", "e.g. --target-ci 2% or 0.02", upper=1.0)
    if o["max_time"] is not None:
        out["max_seconds"] = parse_max_time(str(o["max_time"]))
    for flag, key, value in (("no_race", "race", False), ("accept_busy", "accept_busy", True),
                             ("no_monitors", "monitors", False)):
        if o.get(flag):
            out[key] = value
    if o.get("margin") is not None:
        out["margin"] = parse_share(o["margin"], "--margin", "e.g. --margin 5% or 0.05", upper=0.5)
    if o.get("latency_target"):
        out["latency_target"] = latency_target(o["latency_target"], bool(o.get("one_at_a_time")))
    if o.get("crash_states") is not None:
        out["crash_states"] = o["crash_states"]
    if o.get("crash_time") is not None:
        if not o.get("crash_states"):
            raise PlanError("--crash-time needs --crash-states", "e.g. --crash-states 12 --crash-time 2m")
        out["crash_time"] = parse_duration(str(o["crash_time"]))
    return out


def parse_share(given: Any, flag: str, example: str, upper: float) -> float:
    """A share given as '5%' or 0.05; a bare number of 1 or more is refused, since it reads as a percentage."""
    text = str(given).strip()
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise PlanError(f"{flag} {text!r} is not a share", example) from None
    if not text.endswith("%") and value >= 1:
        raise PlanError(f"{flag} {text} is read as a share, {value:g} = {value:.0%}: a bare number is a share from "
                        "0 to 1", f"for {value:g} percent write {flag} {value:g}% or {value / 100:g}")
    if not 0 < value < upper:
        raise PlanError(f"{flag} {text} is not above 0% and below {upper:.0%}", example)
    return value


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


@click.command("run", epilog=examples('pickfs run                                      # sqlite-tpcb on every preset, side by side',
         'pickfs run --fs ext4,xfs --workload pgbench --max-time 20m',
         'pickfs run --fs ext4,ext4-nobarrier --set synchronous=FULL --crash-states 12',
         'pickfs run --plan examples/r2-postgresql.toml --html report.html',
         'pickfs run --dir /srv/a --dir /mnt/b            # existing directories: no mkfs, no root',
         'pickfs run --fs ext4,xfs --dry-run              # the matrix and the time; nothing is made'))
@click.option("--plan", "plan_file", type=click.Path(path_type=Path), help="a TOML plan file (see examples/)")
@click.option("--fs", help="comma-separated presets or filesystem types, or raw (the block device, for fio workloads); 'all' (default) for every preset")
@click.option("--workload", "workloads", multiple=True,
              help=f"workload name, repeatable: {', '.join(sorted(REGISTRY))} [{DEFAULT_WORKLOAD}]")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="a workload setting, e.g. synchronous=NORMAL")
@click.option("--duration", help="length of each run, e.g. 20s")
@click.option("--runs", type=int, help="measured runs per configuration; side by side (the default method) it "
                                    "means rounds, the same as --rounds [one at a time: 5]")
@click.option("--warmup", type=int, help="warm-up runs before each measured run, not counted; side by side, warm-up "
                                       "slices per configuration [1]")
@click.option("--target-ci", help="stopping rule: repeat until every 95% interval is within +/- this share, "
                                 "e.g. 2% or 0.02 [side by side: 5%; in the race, a configuration that can lose "
                                 "data, or a reference, leaves once its factor is known within twice this]")
@click.option("--max-runs", type=int, help="with --target-ci: the most measured runs (side by side: rounds) [20]")
@click.option("--max-time", help="time budget with its unit, e.g. 30m, 90s or 1h: side by side, per workload, "
                                 "setup included [9m]; one at a time, with --target-ci, start no new repetition "
                                 "after this long")
@click.option("--no-monitors", is_flag=True, help="do not sample /proc during measured runs")
@click.option("--baseline", help="configuration scored as 100 (default: the first)")
@click.option("--scheduler", help=f"the I/O scheduler for every configuration: {', '.join(SCHEDULERS)} (the "
                                  "older deadline, noop and cfq are mq-deadline, none and bfq)")
@click.option("--target", type=click.Choice(list(KINDS)), help="what to build on [image]")
@click.option("--size", help="image size, e.g. 4G [sized to the workloads' data, at least 4G]")
@click.option("--memory", help="the production box's memory: each configuration's server and client run in a "
                               "control group limited to it, e.g. 1G; server buffers follow it unless set")
@click.option("--scale", help="with --memory: grow each workload's data to this multiple of the memory, e.g. 2")
@click.option("--clients", help="concurrency as a dimension: run every server workload at each of these client "
                                "counts, e.g. 1,2,4,8; the report charts throughput and p99 against clients")
@click.option("--rate", help="fixed rate (open loop): transactions (fio: I/Os) due per second, the same for every configuration, "
                             "e.g. 400/s; latency is measured from each one's scheduled start (Poisson arrivals; "
                             "--set arrivals=uniform, --set latency_limit=50ms to skip those later than that)")
@click.option("--latency-target", help="capacity search: the highest fixed rate each configuration holds with "
                                       "this latency percentile from the scheduled start, e.g. p99<=5ms "
                                       "(--rate gives the first rate tried)")
@click.option("--age", help="age every filesystem to this share full before the data is laid out, e.g. 70%")
@click.option("--device", help="a spare block device to format (device target)")
@click.option("--confirm-device", help="repeat the device path to confirm it may be erased")
@click.option("--dir", "dirs", multiple=True, help="an existing directory to compare (directory target); repeatable")
@click.option("--no-drop-caches", is_flag=True, help="one at a time: do not drop the page cache before each trial")
@click.option("--sequential", is_flag=True, help="one at a time, each configuration's repetitions together")
@click.option("--one-at-a-time", is_flag=True,
              help="the older method: each run on its own fresh filesystem, configurations one after another, "
                   "instead of side by side in slices")
@click.option("--blocks", type=int, help="side by side: how many times every configuration is built (each a fresh "
                                       "mkfs, all standing at once) [as many as fit a fifth of the budget, 2-6]")
@click.option("--rounds", type=int, help="side by side: rounds, each visiting every configuration of every block "
                                       "(--runs means the same) [at least 3, then until the recommendation is settled "
                                       "or --max-time is spent]")
@click.option("--slice", help="side by side: length of one slice, e.g. 1s [the workload's own: 1-2 s]")
@click.option("--seed", type=int, help="seed of the rounds' random order [from the run id]")
@click.option("--margin", help="the smallest difference worth recommending a faster configuration over the safer "
                               "or default one, e.g. 5% [5%]; within it they count as equivalent")
@click.option("--accept-busy", is_flag=True,
              help="a busy machine is the condition to measure: slices while other processes take the CPUs count "
                   "like the others, and the report says the answer is for a busy machine (by default a disturbed "
                   "run decides on its quiet slices where the busy ones would change the answer)")
@click.option("--no-race", is_flag=True,
              help="side by side without the race: every configuration in every round to the end, each compared "
                   "with the baseline's slices around it (the earlier design)")
@click.option("--baseline-copies", type=int, help="side by side: images of the baseline per block [about the square "
                                                  "root of the number of other configurations]")
@click.option("--crash-states", type=int, help="also crash-test each cell over this many power-cut states")
@click.option("--crash-time", help="with --crash-states: then more states until this much checking time per cell "
              "(e.g. 2m)")
@click.option("--resume", help="continue an interrupted run (its id), keeping every finished trial")
@click.option("--quiet", "-q", is_flag=True, help="for scripts: print only one line per workload at the end, the "
              "configuration the run names ('LABEL: NAME'), instead of the tables")
@click.option("--explain", is_flag=True, help="also the other central values (geometric mean with its "
              "interval, sanitized mean), the space used, every slice's figure, the race log, what each configuration "
              "is, every note whole and every configuration's full explanation (by default one line for the "
              "recommended one)")
@click.option("--dry-run", is_flag=True,
              help="validate the plan and show the matrix, what this machine lacks and the time it would take; "
                   "create nothing")
@with_exports
@workdir_option
@results_option
def command(**o: Any) -> None:
    """Build each configuration for real and run the workloads on it.

    With no options: sqlite-tpcb on every filesystem preset this kernel supports, on
    loop-backed images.
    """
    check_flags(o)
    check_export_targets(export_targets(o))  # before anything is built: never a finished run with nowhere to go
    run_and_show(request_from_flags(o), o)


def request_from_flags(o: dict[str, Any]) -> RunRequest:
    """The run the flags ask for: a stored run to resume, a plan file, or a plan from the flags."""
    workdir, results, dry_run = str(o["workdir"]), o["results_path"], bool(o["dry_run"])
    if o["resume"]:
        return RunRequest(resume=o["resume"], workdir=workdir, results=results, dry_run=dry_run)
    if o["plan_file"]:
        clash = [f"--{k.replace('_', '-')}" for k in PLAN_FLAGS if o[k]]
        if clash:
            raise PlanError(f"{', '.join(clash)} cannot be combined with --plan", "put them in the plan file instead")
        source = click.get_current_context().get_parameter_source("workdir")
        given = (source is not None and source.name == "COMMANDLINE") or bool(os.environ.get("PICKFS_WORKDIR"))
        plan = load_plan_file(o["plan_file"], method_overrides(o), o["workdir"], workdir_given=given)
        if plan.method.fault:
            raise PlanError(f"{o['plan_file']}: fault = {plan.method.fault!r} is read by pickfs crashtest, which "
                            "measures no speed", f"run it with: pickfs crashtest --plan {o['plan_file']}")
    else:
        plan = plan_from_flags(o)
    return RunRequest(plan=plan, workdir=workdir, results=results, dry_run=dry_run)


def execute_plan(plan: Plan, o: dict[str, Any]) -> None:
    """Run a plan built from a command's flags (`pickfs crashtest`), then show and export the result."""
    check_export_targets(export_targets(o))
    run_and_show(RunRequest(plan=plan, workdir=o["workdir"], results=o["results_path"]), o)


def run_and_show(request: RunRequest, o: dict[str, Any]) -> None:
    """Run the request, then show the result (or the dry run's findings), export it and exit as it ended."""
    outcome = run_plan(request, ConsoleEvents())
    if outcome.preview is not None:
        show_plan(outcome.preview)
        return
    if outcome.record is None:  # interrupted: what was measured is kept, and the way to resume was said
        raise SystemExit(EXIT_INTERRUPTED)
    targets = export_targets(o)
    if any(path is not None and str(path) == "-" for path in targets.values()):
        pass  # standard output is the export's alone (a script reads it); the progress went to stderr
    elif o.get("quiet"):
        for line in terse_lines(outcome.record):
            console.plain(line)
    else:
        console.show(render_run(outcome.record, explain=bool(o.get("explain"))))
    write_exports(outcome.record, targets)
    console.info(f"saved as run {outcome.run_id} in {outcome.results}; re-render with: pickfs report {outcome.run_id}")
    error = outcome.error()
    if error is not None:
        raise error
