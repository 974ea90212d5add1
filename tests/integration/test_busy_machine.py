"""A busy machine noticed: a short real race with busy loops running beside it records, per slice,
the CPU other processes took, and the run is said to be disturbed; the same race without them
records far less (the machine is shared: the control asserts only what another's load cannot break)."""

import ctypes
import json
import multiprocessing
import os
from pathlib import Path

from pickfs.stats.disturbance import disturbance
from pickfs.store import ResultStore
from tests.conftest import needs_root, pickfs

pytestmark = needs_root

LOAD_NAME = "pickfs-busyload"  # what /proc shows the busy loops as

PLAN = """
baseline = "ext4"
[target]
size = "1G"
[method]
max_seconds = 30
warmup = 0
blocks = 1
[[config]]
preset = "ext4"
[[config]]
preset = "xfs"
[[workload]]
name = "sqlite-tpcb"
"""


def _busy_loop() -> None:
    ctypes.CDLL(None).prctl(15, LOAD_NAME.encode(), 0, 0, 0)  # PR_SET_NAME
    while True:
        pass


def race(workdir: Path, name: str) -> tuple[object, list[float], str, dict]:
    """Run the race in its own results file; (its disturbance, the busy loops' cores per slice, the report
    pickfs printed, its JSON export)."""
    plan = workdir / f"{name}.toml"
    plan.write_text(PLAN)
    results = workdir / f"{name}.db"
    export = workdir / f"{name}.json"
    r = pickfs(workdir, "run", "--plan", str(plan), "--results", str(results), "--json", str(export))
    assert r.returncode == 0, r.stderr
    store = ResultStore.read_only(results)
    try:
        (run_id,) = store.run_ids()
        trials = store.load(run_id).trials
    finally:
        store.close()
    measured = [t for t in trials if t.phase == "measured" and t.ok and t.monitor]
    assert measured
    loops = [sum(p["cpu_s"] for p in t.monitor["other_cpu"] if p["comm"] == LOAD_NAME)
             / t.monitor["totals"]["elapsed_s"] for t in measured]
    return disturbance(trials), loops, r.stdout, json.loads(export.read_text())


def test_a_loaded_run_is_disturbed_and_a_quiet_one_records_less(workdir):
    quiet, quiet_loops, quiet_out, quiet_doc = race(workdir, "quiet")
    ctx = multiprocessing.get_context("fork")
    loops = [ctx.Process(target=_busy_loop, daemon=True) for _ in range(os.cpu_count() or 1)]
    try:
        for p in loops:
            p.start()
        loaded, loaded_loops, loaded_out, loaded_doc = race(workdir, "loaded")
    finally:
        for p in loops:
            p.kill()
            p.join(10)
    assert quiet is not None and loaded is not None
    assert loaded.disturbed and loaded.busy_share > 0.5 and loaded.by_others > 0, loaded
    # the busy loops are told apart as other processes: together they took at least half a core in most slices
    assert sorted(loaded_loops)[len(loaded_loops) // 2] >= 0.5, loaded_loops
    assert LOAD_NAME in loaded.others
    assert not any(quiet_loops)
    print(f"\nloaded: {loaded}\nquiet: {quiet}\nthe loops' cores per slice: {loaded_loops}")
    if quiet.other_cores <= quiet.cpus / 2:  # another's load can fill the shared machine's CPUs: compare with headroom
        assert loaded.other_cores > quiet.other_cores + 0.3, (loaded, quiet)
    # the report says so first: before the answer, in the terminal and in the JSON export
    flat = " ".join(loaded_out.split())  # the terminal may wrap a sentence
    said = flat.find("disturbed: the machine was busy")
    answer = [i for i in (flat.find("sqlite-tpcb: use "), flat.find(" is preferred but not settled")) if i >= 0]
    assert said >= 0 and answer and said < min(answer), loaded_out
    assert loaded_doc["disturbance"]["disturbed"] is True and LOAD_NAME in loaded_doc["disturbance"]["others"]
    if not quiet.disturbed:  # others may load the shared machine: only then is the control said to be quiet
        assert "disturbed" not in quiet_out and quiet_doc["disturbance"]["disturbed"] is False
