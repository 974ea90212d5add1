"""`pickfs run`: build each configuration, run the workloads, report."""

from __future__ import annotations

import os
import time
import tomllib
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from pickfs import __version__, console, host
from pickfs.cli.common import clean_orphans, ledger_for, open_store, require_root, results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.cli.report import check_export_targets, export_targets, with_exports, write_exports
from pickfs.engine import runlock
from pickfs.engine.executor import Executor
from pickfs.engine.schedule import Slot
from pickfs.errors import EXIT_INTERRUPTED, PickfsError, PlanError
from pickfs.model import (
    SCHEDULERS,
    Method,
    Plan,
    Target,
    TargetKind,
    Trial,
    WorkloadSpec,
    plan_from_dict,
    plan_to_dict,
)
from pickfs.plan import (
    aging_fields,
    build_plan,
    check_setting_types,
    check_stored_plan,
    configs_from_names,
    directory_config,
    expand_clients,
    load_plan_file,
    parse_clients,
    parse_memory,
    parse_scale,
)
from pickfs.report.terminal import render_run, terse_lines
from pickfs.report.text import fmt_with_unit
from pickfs.stack.ledger import Ledger
from pickfs.stack.safety import check_device
from pickfs.store import ResultStore, RunRecord
from pickfs.store.results import new_run_id
from pickfs.units import parse_duration, parse_size
from pickfs.workloads import DEFAULT_WORKLOAD, REGISTRY, workload_class
from pickfs.workloads.command import Command


def _parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def workload_specs(names: tuple[str, ...], sets: tuple[str, ...], duration: str | None) -> list[WorkloadSpec]:
    # truth: --set scoping. A key that more than one selected workload has must be scoped
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
    if results is not None and (not str(results).strip() or Path(results).is_dir()):
        raise PlanError(f"--results {str(results)!r} is not a file", "name the results database, e.g. --results runs.db")


def plan_from_flags(o: dict[str, Any]) -> Plan:
    check_flags(o)
    kind: TargetKind = o["target"] or ("directory" if o["dirs"] else "device" if o["device"] else "image")
    size = Target().size_bytes if o["size"] is None else parse_size(o["size"])
    target = Target(kind=kind, workdir=o["workdir"], size_bytes=size,
                    device=o["device"], confirm=o["confirm_device"], size_auto=o["size"] is None,
                    memory_bytes=parse_memory(o["memory"]) if o.get("memory") else None,
                    scale=parse_scale(o["scale"]) if o.get("scale") else None)
    if kind == "directory":
        configs = [directory_config(d) for d in o["dirs"]]
        if not configs:
            raise PlanError("a directory target needs directories", "add --dir PATH (repeatable)")
    else:
        configs = configs_from_names(o["fs"] or "all")
    if o["scheduler"]:
        configs = [replace(c, scheduler=_scheduler(o["scheduler"])) for c in configs]
    if o.get("age"):  # issue 13: every configuration aged before its data is laid out
        configs = [replace(c, **aging_fields({"age": o["age"]}, "--age")) for c in configs]
    method = replace(Method(), **method_overrides(o), drop_caches=not o["no_drop_caches"],
                     interleave=not o["sequential"])
    if o["sequential"]:  # "each configuration's repetitions together" is the one-at-a-time method
        method = replace(method, side_by_side=False)
    rate_sets = at_rate(o["workloads"], o["rate"]) if o.get("rate") else ()  # fixed rate: workloads/latency.py
    specs = workload_specs(o["workloads"], (*o["sets"], *rate_sets), o["duration"])
    clients_warnings: list[str] = []
    if o.get("clients"):  # issue 13: concurrency as a dimension
        specs, clients_warnings = expand_clients(specs, parse_clients(o["clients"]))
    if method.latency_target:
        no_rate = [s.name for s in specs if "rate" not in workload_class(s.name).setting_names()]
        if no_rate:
            having = sorted(n for n, c in REGISTRY.items() if "rate" in c.setting_names())
            raise PlanError(f"--latency-target: {', '.join(no_rate)} has no fixed-rate mode",
                            f"workloads that have one: {', '.join(having)}")
        for s in specs:  # settings a fixed rate cannot run with (fio's), refused before anything is made
            workload_class(s.name).normalize({**dict(s.settings), "rate": s.get("rate") or 1.0})
        if kind == "device":
            raise PlanError("--latency-target searches side by side; a device holds one filesystem at a time",
                            "use image targets (the default) or --dir")
    plan = build_plan(target, configs, specs, method, o["baseline"])
    if clients_warnings:
        plan = replace(plan, warnings=(*plan.warnings, *clients_warnings))
    sliced = [w.name for w in plan.workloads if REGISTRY[w.name].sliceable]
    if o["duration"] and method.side_by_side and kind != "device" and sliced:
        plan = replace(plan, warnings=(*plan.warnings, f"--duration does not change {', '.join(sliced)} side by side: "
                                       "they run in slices (--slice sets their length, --max-time the whole "
                                       "measurement); --one-at-a-time for runs of --duration each"))
    return plan


def latency_target(text: str, one_at_a_time: bool) -> str:
    """--latency-target p99<=5ms, checked (the capacity search: engine/capacity.py)."""
    from pickfs.stats.capacity import parse_target

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
        out["max_seconds"] = _max_time(str(o["max_time"]))
    if o.get("no_race"):
        out["race"] = False
    if o.get("margin") is not None:
        out["margin"] = parse_share(o["margin"], "--margin", "e.g. --margin 5% or 0.05", upper=0.5)
    if o.get("latency_target"):
        out["latency_target"] = latency_target(o["latency_target"], bool(o.get("one_at_a_time")))
    if o["no_monitors"]:
        out["monitors"] = False
    if o.get("crash_states") is not None:
        out["crash_states"] = o["crash_states"]
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


def _max_time(text: str) -> float:
    """--max-time in seconds; a number without its unit is refused (5 could be seconds or minutes)."""
    try:
        float(text.strip())
    except ValueError:
        return parse_duration(text)
    raise PlanError(f"--max-time {text.strip()} has no unit", f"write --max-time {text.strip()}m for minutes, "
                    f"{text.strip()}s for seconds, 1h for an hour")


def plan_record(plan: Plan) -> dict[str, Any]:
    """The plan as stored with the run, with what its reports need to know and must not look up later:
    each workload's metric definitions, its database and the risks of its settings, and each
    configuration's risks (report/ reads these, and imports no workload, service or risk table)."""
    from pickfs.risks import config_risks, risks_of

    d = plan_to_dict(plan)
    for w, spec in zip(d["workloads"], plan.workloads, strict=True):
        cls = REGISTRY[w["name"]]
        w["metrics"] = [asdict(m) for m in cls.metrics]
        w["breakdown"] = list(cls.breakdown)
        w["database"] = cls.database_for(spec)
        w["risks"] = risks_of(spec, w["database"])
    for c, config in zip(d["configs"], plan.configs, strict=True):
        c["risks"] = config_risks(config)
    return d


class CliObserver:
    """Progress bar with time left, and one line per measured run."""

    def __init__(self, progress) -> None:
        self.progress = progress
        self.task = None
        self.done = 0
        self.count = 0

    def started(self, slots: list[Slot], estimate_s: float) -> None:
        self.count = len(slots)
        self.task = self.progress.add_task("starting", total=max(estimate_s, 1.0))
        console.info(f"{len(slots)} trials to run, about {estimate_s / 60:.0f} min")

    def slot_started(self, slot: Slot) -> None:
        self.progress.update(self.task, description=f"[{self.done + 1}/{self.count}] {slot.cell.key}")

    def trial_saved(self, slot: Slot, trial: Trial) -> None:
        if trial.phase != "measured":
            return
        metric = REGISTRY[slot.cell.workload.name].primary()
        value = trial.metrics.get(metric.name)
        self.progress.console.print(
            f"  {slot.cell.key} run {slot.repetition + 1}: {fmt_with_unit(value, metric)}",
            highlight=False)

    def slot_finished(self, slot: Slot, estimate_s: float) -> None:
        self.done += 1
        self.progress.advance(self.task, estimate_s)

    def reestimate(self, remaining_s: float) -> None:
        """truth: the time left, corrected by what the slots so far took."""
        task = self.progress.tasks[self.task]
        self.progress.update(self.task, total=max(task.completed + remaining_s, 1.0))

    def extend(self, estimate_s: float) -> None:
        """The stopping rule added a repetition."""
        self.count += 1
        self.progress.update(self.task, total=self.progress.tasks[self.task].total + estimate_s)

    def note(self, text: str) -> None:
        self.progress.console.print(Text.assemble(("note: ", "yellow"), text), highlight=False)

    def rounds_started(self, label: str, budget_s: float, blocks: int | None, configs: int) -> None:
        self.rounds_t0 = time.monotonic()
        self.task = self.progress.add_task(f"{label}: side by side", total=max(budget_s, 1.0))
        times = "as many times as fit a fifth of the time" if blocks is None else f"{blocks} time(s)"
        most = f"{budget_s / 60:.0f} min" if budget_s >= 90 else f"{budget_s:.0f} s"
        console.info(f"{label}: {configs} configurations side by side, each built {times} on fresh "
                     f"filesystems, at most {most}")

    def round_finished(self, label: str, block: int, round_no: int, widest: float | None) -> None:
        elapsed = time.monotonic() - self.rounds_t0
        width = "not yet known" if widest is None or widest > 1 else f"±{widest:.1%}"
        self.progress.update(self.task, completed=elapsed,
                             description=f"{label}: round {round_no}, widest interval {width}")
        if not console.interactive():
            console.info(f"  {label} round {round_no}: widest interval {width} ({elapsed:.0f} s)")


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
@click.option("--target", type=click.Choice(["image", "device", "directory"]), help="what to build on [image]")
@click.option("--size", help="image size, e.g. 4G [sized to the workloads' data, at least 4G]")
@click.option("--memory", help="the production box's memory: each configuration's server and client run in a "
                               "control group limited to it, e.g. 1G; server buffers follow it unless set")
@click.option("--scale", help="with --memory: grow each workload's data to this multiple of the memory, e.g. 2")
@click.option("--clients", help="concurrency as a dimension: run every server workload at each of these client "
                                "counts, e.g. 1,2,4,8; the report charts throughput and p99 against clients")
@click.option("--rate", help="fixed rate (open loop): transactions due per second, the same for every configuration, "
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
@click.option("--no-race", is_flag=True,
              help="side by side without the race: every configuration in every round to the end, each compared "
                   "with the baseline's slices around it (the earlier design)")
@click.option("--baseline-copies", type=int, help="side by side: images of the baseline per block [about the square "
                                                  "root of the number of other configurations]")
@click.option("--crash-states", type=int, help="also crash-test each cell over this many power-cut states")
@click.option("--resume", help="continue an interrupted run (its id), keeping every finished trial")
@click.option("--quiet", "-q", is_flag=True, help="for scripts: print only one line per workload at the end, the "
              "configuration the run names ('LABEL: NAME'), instead of the tables")
@click.option("--explain", is_flag=True, help="also the other central values (geometric mean with its "
              "interval, sanitized mean), every slice's figure, every note whole and every configuration's full "
              "explanation (by default one line for each that matters)")
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
    previous: tuple[Trial, ...] = ()
    store: ResultStore | None = None
    run_id: str | None = None
    check_flags(o)
    check_export_targets(export_targets(o))  # before anything is built: never a finished run with nowhere to go
    if o["dry_run"] and o["resume"]:
        raise PlanError("--dry-run checks a new plan; a resumed run's plan was checked when it started",
                        "drop --dry-run, or look at the saved run with: pickfs report RUN")
    if o["resume"]:
        store = open_store(o["workdir"], o["results_path"])
        record = store.load(o["resume"])
        plan = plan_from_dict(record.plan)
        resumable(store, plan)
        run_id = record.id
        previous = record.trials
    elif o["plan_file"]:
        clash = [f"--{k.replace('_', '-')}" for k in PLAN_FLAGS if o[k]]
        if clash:
            raise PlanError(f"{', '.join(clash)} cannot be combined with --plan", "put them in the plan file instead")
        source = click.get_current_context().get_parameter_source("workdir")
        given = (source is not None and source.name == "COMMANDLINE") or bool(os.environ.get("PICKFS_WORKDIR"))
        plan = load_plan_file(o["plan_file"], method_overrides(o), o["workdir"], workdir_given=given)
    else:
        plan = plan_from_flags(o)
    if o["dry_run"]:
        from pickfs.cli.plan_check import show_plan

        show_plan(plan)
        return
    execute_plan(plan, o, store, run_id, previous)


def resumable(store: ResultStore, plan: Plan) -> None:
    """A stored plan is run again (as root) only from a results file no other user can write, and only once it
    passes every check a new plan passes."""
    path = getattr(store, "path", None)
    if isinstance(path, Path) and path.is_file():
        st = path.stat()
        if st.st_uid not in (0, os.geteuid()) or st.st_mode & 0o022:
            raise PlanError(f"results file {path} can be written by another user than pickfs's: a run resumed from it "
                            "would run whatever plan it holds", "resume only from a results file of your own (0600)")
    check_stored_plan(plan)


def execute_plan(plan: Plan, o: dict[str, Any], store: ResultStore | None = None, run_id: str | None = None,
                 previous: tuple[Trial, ...] = ()) -> None:
    """Run a plan (or the rest of a resumed one), then show and export the result."""
    check_export_targets(export_targets(o))
    if plan.target.kind != "directory":
        require_root(f"building filesystems on {plan.target.kind} targets (losetup, mkfs, mount)",
                     "run as root (sudo), or compare existing directories with --dir PATH")
    if store is None:
        store = open_store(o["workdir"], o["results_path"])
    if plan.target.kind == "device":
        check_device(plan.target.device or "", plan.target.confirm)
    ledger = ledger_for(plan.target.workdir)
    Path(plan.target.workdir).mkdir(parents=True, exist_ok=True)
    n, problems = clean_orphans(ledger)
    if n:
        console.warn(f"undid {n} resource(s) left by an earlier pickfs that did not finish")
    for p in problems:
        console.warn(f"could not undo: {p}")
    for w in (*plan.warnings, *(Command.root_warning(spec) for spec in plan.workloads)):
        if w:
            console.warn(w)
    if run_id is not None:
        lock = runlock.hold(Path(plan.target.workdir), run_id)  # refused while another pickfs runs it
        store.set_status(run_id, "running")
    else:
        run_id = store_new_run(store, plan)
        lock = runlock.hold(Path(plan.target.workdir), run_id)
    try:
        record = _execute(plan, o, store, ledger, run_id, previous)
    finally:
        runlock.release(lock)
    if o.get("quiet"):
        for line in terse_lines(record):
            console.plain(line)
    else:
        console.show(render_run(record, explain=bool(o.get("explain"))))
    write_exports(record, export_targets(o))
    console.info(f"saved as run {run_id} in {store.path}; re-render with: pickfs report {run_id}")
    if record.status == "failed":
        raise PickfsError(f"run {run_id} failed: no configuration gave a result (each one's error is above)",
                          "fix what the errors name, then run again")


def _execute(plan: Plan, o: dict[str, Any], store: ResultStore, ledger: Ledger, run_id: str,
             previous: tuple[Trial, ...]) -> RunRecord:
    """Execute the run; whatever ends it, it ends with a final status and says what was kept."""
    console.info(f"run {run_id}: {len(plan.configs)} configurations x {len(plan.workloads)} workload(s), "
                 f"{method_words(plan.method)}; results in {store.path}")
    with console.progress() as bar:
        executor = Executor(plan, run_id, store, ledger, CliObserver(bar))
        try:
            executor.execute(previous)
        except BaseException as exc:
            bar.stop()
            if not interrupted(exc):
                # a full disk, an I/O error, an internal error: the run ends failed, never 'running'
                _end_run(store, run_id, "failed", "failed")
                raise
            # Ctrl-C (or SIGTERM) always ends the run as interrupted, even when undoing what was
            # built raised on the way out; that error is reported after.
            if not isinstance(exc, KeyboardInterrupt):
                console.warn(f"while undoing after the interrupt: {one_line(exc)}")
            _end_run(store, run_id, "interrupted", "interrupted")
            raise SystemExit(EXIT_INTERRUPTED) from None
    record = store.load(run_id)
    status = "complete" if any(t.ok and t.phase in RESULT_PHASES for t in record.trials) else "failed"
    store.set_status(run_id, status)
    return store.load(run_id)


RESULT_PHASES = ("measured", "crash", "capacity")  # trials that are a result (a capacity search's steps too)


def _end_run(store: ResultStore, run_id: str, status: str, how: str) -> None:
    """Best effort (the results file may be what failed): the final status, and what was kept."""
    try:
        store.set_status(run_id, status)
    except (PickfsError, OSError):
        pass
    try:
        kept = sum(1 for t in store.load(run_id).trials if t.phase in RESULT_PHASES and t.ok)
        said = f"{kept} measured runs kept in {store.path}"
    except (PickfsError, OSError):
        said = f"what was saved before is kept in {store.path}"
    console.error(f"run {run_id} {how}: {said}; continue with: pickfs run --resume {run_id}")


def method_words(m: Method) -> str:
    """How the run measures, in a few words (pure)."""
    if not m.speed:
        what = "no speed runs"
    elif m.side_by_side:
        until = f"rounds until the answer is settled at a {m.margin:.0%} margin" if m.race else \
            "rounds until the intervals settle"
        rounds = f"{m.rounds} rounds" if m.rounds else until
        blocks = "automatic blocks" if m.blocks is None else f"{m.blocks} block(s)"
        what = f"side by side, {blocks}, {rounds}, after {m.warmup} warm-up slice(s)"
    else:
        what = f"{m.runs} runs each after {m.warmup} warm-up, one at a time"
    if m.crash_states:
        what += f"; a crash test of {m.crash_states} power-cut states each"
    return what


def interrupted(exc: BaseException | None) -> bool:
    """A KeyboardInterrupt, or an error raised while handling one (a teardown step that failed)."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__context__
        seen += 1
    return False


def one_line(exc: BaseException) -> str:
    return exc.one_line() if isinstance(exc, PickfsError) else f"{type(exc).__name__}: {exc}"


def store_new_run(store: ResultStore, plan: Plan) -> str:
    run_id = new_run_id()
    store.create_run(run_id, __version__, plan_record(plan), host.collect(plan.target.workdir))
    return run_id
