"""`pickfs crashtest`: does each configuration keep acknowledged commits through a simulated power cut?"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from pickfs.cli.common import results_option, workdir_option
from pickfs.cli.report import with_exports
from pickfs.cli.run import workload_specs, execute_plan
from pickfs.errors import PlanError
from pickfs.model import Method, Target
from pickfs.plan import build_plan, load_plan_file, resolve_fs_name
from pickfs.stack.presets import PRESETS
from pickfs.units import parse_duration, parse_size

DEFAULT_FS = "ext4,ext4-nobarrier,xfs,btrfs"


@click.command("crashtest")
@click.option("--plan", "plan_file", type=click.Path(path_type=Path), help="a TOML plan file: crash-test its cells")
@click.option("--fs", default=None, help=f"comma-separated presets or filesystem types [{DEFAULT_FS}]")
@click.option("--workload", "workloads", multiple=True,
              help="the database, as a workload: sqlite-tpcb (default), pgbench, sysbench-oltp, tpcc, "
                   "firebird-tpcb, or command with a server; repeatable")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="a durability setting, e.g. synchronous=OFF or fsync=off")
@click.option("--states", type=int, default=12, show_default=True, help="power-cut states to build and check")
@click.option("--duration", default="3s", show_default=True, help="how long commits are recorded")
@click.option("--size", default="512M", show_default=True, help="the recorded image's size (xfs needs 300M)")
@with_exports
@workdir_option
@results_option
def command(**o: Any) -> None:
    """Record every write and flush of each configuration while a database commits, then rebuild the
    disk as a power cut could have left it, many times over, and check each: does it mount, does
    fsck pass, does the database recover, and are all acknowledged commits there?

    The model is a worst-case disk whose volatile cache drops unflushed writes. No speed is
    measured here (the recorder is slow by design); `pickfs run --crash-states N` does both.
    """
    if o["states"] < 1:
        raise PlanError("--states must be at least 1", "e.g. --states 12")
    duration = parse_duration(o["duration"])
    size = parse_size(o["size"])
    if o["plan_file"]:
        if o["fs"] or o["workloads"] or o["sets"]:
            raise PlanError("--fs, --workload and --set cannot be combined with --plan", "put them in the plan file")
        loaded = load_plan_file(o["plan_file"], {}, o["workdir"])
        method = replace(loaded.method, speed=False, crash_states=o["states"], crash_duration=duration,
                         crash_size=size)
        plan = build_plan(loaded.target, list(loaded.configs), list(loaded.workloads), method, loaded.baseline)
    else:
        names = [n.strip() for n in (o["fs"] or DEFAULT_FS).split(",") if n.strip()]
        expanded = [p for n in names for p in (list(PRESETS) if n == "all" else [n])]
        configs = [resolve_fs_name(n) for n in dict.fromkeys(expanded)]
        method = Method(runs=1, warmup=0, speed=False, crash_states=o["states"], crash_duration=duration,
                        crash_size=size)
        plan = build_plan(Target(workdir=o["workdir"], size_bytes=size), configs,
                          workload_specs(o["workloads"], o["sets"], None), method, None)
    execute_plan(plan, o)
