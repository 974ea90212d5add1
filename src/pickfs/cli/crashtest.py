"""`pickfs crashtest`: does each configuration keep acknowledged commits through a simulated power cut?"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from pickfs.cli.common import results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.cli.report import with_exports
from pickfs.cli.run import execute_plan
from pickfs.crash.states import STRATEGIES, parse_strategies
from pickfs.errors import PlanError
from pickfs.model import Plan, Target, method_of
from pickfs.plan import build_plan, configs_from_names, load_plan_file
from pickfs.plan.flags import crash_goal, workload_specs
from pickfs.units import parse_duration, parse_size

DEFAULT_FS = "ext4,ext4-nobarrier,xfs,btrfs"
FIRST_STATES = 12  # states checked first; with a budget, more follow
DEFAULT_CRASH_TIME = "2m"  # checking time per configuration when neither --states nor --crash-time is given


@click.command("crashtest", epilog=examples('pickfs crashtest                                # sqlite-tpcb on ext4, ext4-nobarrier, xfs, btrfs',
         'pickfs crashtest --fs ext4,xfs --set synchronous=OFF --states 24    # exactly 24 states each',
         'pickfs crashtest --fs ext4 --crash-time 10m                     # as many states as fit in 10 minutes',
         'pickfs crashtest --workload pgbench --set full_page_writes=off --states 40 --duration 10s',
         'pickfs crashtest --plan examples/crash-safety.toml --html crash.html',
         'pickfs crashtest --fs ext4,xfs --workload pgbench --fault flush    # the disk fails a flush'))
@click.option("--plan", "plan_file", type=click.Path(path_type=Path), help="a TOML plan file: crash-test its cells")
@click.option("--fs", default=None, help=f"comma-separated presets or filesystem types [{DEFAULT_FS}]")
@click.option("--workload", "workloads", multiple=True,
              help="the database, as a workload: sqlite-tpcb (default), pgbench, sysbench-oltp, tpcc, "
                   "firebird-tpcb, or command with a server; repeatable")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="a durability setting, e.g. synchronous=OFF or fsync=off")
@click.option("--states", type=int, default=None,
              help=f"power-cut states to build and check: exactly this many unless --crash-time is given too "
                   f"[{FIRST_STATES}, then more within --crash-time]")
@click.option("--crash-time", default=None,
              help=f"checking time per configuration: after --states states, more until it ends or the answer is "
                   f"clear [{DEFAULT_CRASH_TIME}; with --states alone: none]")
@click.option("--crash-bound", "crash_bound", type=int, default=None,
              help="with a budget: a configuration that lost nothing stops once its states cut at random moments "
                   "rule out a loss in 1 power cut of this many or more (e.g. 150), its time going to the next "
                   "[the plan's crash_bound; none: the whole budget]")
@click.option("--duration", default="3s", show_default=True, help="how long commits are recorded")
@click.option("--size", default=None,
              help="the recorded image's size, at least 64M (xfs needs 300M) [sized to the job: 512M, or more as "
                   "the workload needs, at most 4G]")
@click.option("--unit", default=None,
              help="the disk's atomic unit: unflushed writes land or are lost in pieces of this size (512 or 4K) [4K]")
@click.option("--recovery-crashes", "recovery", type=float, default=None,
              help="share of states that lose power again while recovering (then recover again); 0 for none [0.25]")
@click.option("--keep-states", "keep", type=click.Path(path_type=Path),
              help="a directory to keep the image of every state that lost or broke something, for inspection")
@click.option("--strategies", default=None,
              help="which subsets of the unflushed writes to try, comma-separated: " + ", ".join(STRATEGIES) + " [all]")
@click.option("--check", "check", help="with --workload command: your check, run on each state (exit 0 = consistent); "
                                      "with --fault, once, after the restart")
@click.option("--fault", default=None,
              help="instead of power cuts, make the disk fail: flush (a cache flush), write:wal (a write to the "
                   "write-ahead log's blocks), write:data (to the data files' blocks), write:table (a write-back of "
                   "the commits table's blocks, rows never written again: the case data_sync_retry decides), "
                   "write:journal (to the filesystem's journal: ext3, ext4, xfs), write:outside-journal (anywhere but "
                   "the journal: xfs then retries its metadata, with --fault-for forever it hangs); comma-separated "
                   "for several")
@click.option("--fault-at", type=int, default=None,
              help="with --fault: the k-th matching request once commits flow is the first to fail [1]")
@click.option("--fault-for", default=None,
              help="with --fault: once, a count (3), a duration (2s: every matching request for that long) or "
                   "forever [once]")
@click.option("--fault-seed", type=int, default=None,
              help="with --fault: the seed of the fault's moment and of the client's transactions [1]")
@click.option("--fault-limit", default=None,
              help="with --fault: how long a cell may run past its commits; then it is reported as hung [2m]")
@with_exports
@workdir_option
@results_option
def command(**o: Any) -> None:
    """Record every write and flush of each configuration while a database commits, then rebuild the
    disk as a power cut could have left it, many times over, and check each: does it mount, does
    fsck pass, does the database recover, and are all acknowledged commits there?

    The model is a worst-case disk whose volatile cache keeps any subset of the unflushed writes,
    unit by unit (so pages tear), in any order; some states lose power again during recovery.
    With `--workload command --set command=CMD --check CHECK` your own program runs instead, and
    your check judges each state. No speed is measured here (the recorder is slow by design);
    `pickfs run --crash-states N` does both.

    With `--fault KIND` the disk fails a write or a flush instead, while the database commits; the
    report says what the server and the filesystem did and, after a restart, which acknowledged
    commits were lost and which failed ones were there.
    """
    if o["fault"] is None and (o["fault_at"], o["fault_for"], o["fault_seed"], o["fault_limit"]) != \
            (None, None, None, None):
        raise PlanError("--fault-at, --fault-for, --fault-seed and --fault-limit need --fault",
                        "add --fault flush (or write:wal, write:data), or put them in the plan file")
    plan = crash_plan(o)
    if o["fault"] is not None or plan.method.faults.kinds:
        from pickfs.cli.faults import run_faults  # deferred: the fault path, loaded only when asked for

        run_faults(plan, o)
        return
    execute_plan(plan, o)


def crash_plan(o: dict[str, Any]) -> Plan:
    """The crash test's plan from the command's options, checked completely (nothing is created)."""
    if o["states"] is not None and o["states"] < 1:
        raise PlanError("--states must be at least 1", "e.g. --states 12")
    duration = parse_duration(o["duration"])
    crash: dict[str, Any] = {"crash_states": o["states"] or FIRST_STATES, "crash_duration": duration,
                             "crash_time": _budget(o["crash_time"], o["states"])}
    if o["size"] is not None:
        size = parse_size(o["size"])
        if size < 64 * 1024**2:
            raise PlanError(f"--size {o['size']} is too small for a crash test's image",
                            "use at least --size 64M (xfs needs 300M), or leave it out to have it sized to the job")
        crash |= {"crash_size": size, "crash_size_auto": False}
    crash |= _fidelity(o) | crash_goal(o["crash_bound"], crash["crash_time"], "leave out --states, or add --crash-time 2m")
    # --check is a command line, always a string: quoted, so `--check true` is not read as TOML's true
    sets = tuple(o["sets"]) + ((f"check={json.dumps(o['check'], ensure_ascii=False)}",) if o["check"] else ())
    if o["plan_file"]:
        if o["fs"] or o["workloads"] or sets:
            raise PlanError("--fs, --workload, --set and --check cannot be combined with --plan",
                            "put them in the plan file")
        loaded = load_plan_file(o["plan_file"], {}, o["workdir"])
        method = loaded.method.but(speed=False, **crash)
        plan = build_plan(loaded.target, list(loaded.configs), list(loaded.workloads), method, loaded.baseline)
    else:
        configs = configs_from_names(o["fs"] or DEFAULT_FS)
        method = method_of(runs=1, warmup=0, speed=False, **crash)
        plan = build_plan(Target(workdir=o["workdir"]), configs,
                          workload_specs(o["workloads"], sets, None), method, None)
    for w in plan.workloads:
        if w.name == "command" and not w.get("check"):
            raise PlanError(f"workload {w.label}: a crash test of your own command needs your check of each state",
                            "add --check 'CMD' (or check = \"CMD\" in the plan): exit status 0 = consistent")
    return plan


def _budget(given: str | None, states: int | None) -> float:
    """The checking time per configuration: as given; none when only --states is; else the default (seconds)."""
    if given is None:
        return 0.0 if states is not None else parse_duration(DEFAULT_CRASH_TIME)
    seconds = parse_duration(given)
    if seconds <= 0:
        raise PlanError(f"--crash-time {given} is no time to check states in", "e.g. --crash-time 2m")
    return seconds


def _fidelity(o: dict[str, Any]) -> dict[str, Any]:
    """The crash-fidelity settings: given here, they override a plan's [method]; else the plan's (or the defaults)."""
    crash: dict[str, Any] = {}
    if o["unit"] is not None:
        unit = parse_size(o["unit"])
        if unit < 512 or unit % 512 or unit & (unit - 1):
            raise PlanError(f"--unit {o['unit']} is not a power of two of at least 512 bytes",
                            "e.g. --unit 4K or --unit 512")
        crash["crash_unit"] = unit
    if o["recovery"] is not None:
        if not 0 <= o["recovery"] <= 1:
            raise PlanError("--recovery-crashes must be a share from 0 to 1", "e.g. --recovery-crashes 0.25")
        crash["crash_recovery"] = float(o["recovery"])
    if o["strategies"] is not None:
        try:
            crash["crash_strategies"] = ",".join(parse_strategies(o["strategies"]))
        except ValueError as exc:
            raise PlanError(f"--strategies: {exc}", f"use some of: {', '.join(STRATEGIES)}") from None
    if o["keep"] is not None:
        if o["keep"].exists() and not o["keep"].is_dir():
            raise PlanError(f"--keep-states {o['keep']} is not a directory", "name a directory (it is made if missing)")
        crash["crash_keep"] = os.path.abspath(o["keep"])  # not resolved: a link on the way is judged, not followed
    return crash
