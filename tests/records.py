"""Stored runs with known values, for renderer tests."""

from dataclasses import asdict

from pickfs.model import FsConfig, Method, Plan, Target, Trial, WorkloadSpec, plan_to_dict
from pickfs.stack.presets import PRESETS
from pickfs.workloads.sqlite_tpcb import SqliteTpcb


def make_plan(baseline=None):
    wl = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", tuple(sorted(SqliteTpcb.normalize({}).items())))
    cfgs = (PRESETS["ext4"], PRESETS["ext4-nobarrier"], PRESETS["xfs"], FsConfig("jfs", "jfs"))
    return Plan(Target(), cfgs, (wl,), Method(runs=3), baseline)


def record_dict(plan):
    d = plan_to_dict(plan)
    for w in d["workloads"]:
        w["metrics"] = [asdict(m) for m in SqliteTpcb.metrics]
    return d


def fill(store, plan, run_id="20260101-000000-abcd", values=None, host=None):
    store.create_run(run_id, "0.1.0", record_dict(plan), host or {"hostname": "box", "kernel": "6.1"})
    values = values or {0: [1000, 1100, 900], 1: [2000, 2100, 1900], 2: [500, 500, 500]}
    for rep in range(3):
        for cell, vals in values.items():
            store.save_trial(Trial(run_id=run_id, cell_index=cell, repetition=rep, phase="warmup", started=1.0 + rep,
                                   elapsed_s=1.0, ok=True, metrics={"tps": 1.0}, raw_output="raw-w"))
            store.save_trial(Trial(run_id=run_id, cell_index=cell, repetition=rep, phase="measured",
                                   started=2.0 + rep, elapsed_s=1.0, ok=True,
                                   metrics={"tps": float(vals[rep]), "lat_p99": 0.001 * (cell + 1)},
                                   raw_output="raw-m",
                                   mount={"device": "/dev/loop0"}, notes=("a note",)))
    store.save_trial(Trial(run_id=run_id, cell_index=3, repetition=0, phase="measured", started=0.5, elapsed_s=0.0,
                           ok=False, error="unavailable: kernel has no jfs"))
    store.set_status(run_id, "complete")
    return run_id
