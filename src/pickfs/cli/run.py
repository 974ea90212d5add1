"""`pickfs run`: build each configuration, run the workloads, report."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from pickfs import console
from pickfs.cli.common import results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.cli.plan_check import show_plan
from pickfs.cli.report import check_export_targets, export_targets, with_exports, write_exports
from pickfs.errors import EXIT_INTERRUPTED, PlanError
from pickfs.model import SCHEDULERS, Plan
from pickfs.plan import load_plan_file
from pickfs.plan.flags import PLAN_FLAGS, check_flags, method_overrides, plan_from_flags
from pickfs.report.terminal import render_run, terse_lines
from pickfs.run_console import ConsoleEvents
from pickfs.stack.targets import KINDS
from pickfs.usecases.run import RunRequest, run_plan
from pickfs.workloads import DEFAULT_WORKLOAD, REGISTRY


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
@click.option("--crash-bound", type=int, help="with --crash-time: a cell that lost nothing stops once its states cut "
              "at random moments rule out a loss in 1 power cut of this many or more (e.g. 150), its time going to "
              "the next [the plan's crash_bound; none: the whole budget]")
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
        if plan.method.faults.kinds:
            raise PlanError(f"{o['plan_file']}: fault = {plan.method.faults.kinds!r} is read by pickfs crashtest, which "
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
