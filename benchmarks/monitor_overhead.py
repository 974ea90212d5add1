"""What do pickfs's monitors cost? The same SQLite run with and without them, alternated.

On tmpfs (CPU-bound: any CPU the monitors take shows in full) the sqlite-tpcb client runs
--pairs times with the monitor sampling and as often without; prints the median throughput
of each, their ratio, and the monitor thread's own CPU time as a share of the run.

Then what recording the disturbance adds (the CPU each task took, split into pickfs's, others' and
the kernel's, from the scans the sampler makes anyway): --scans scans of /proc as the sampler makes
them every 0.1 s, timed without and with that accounting, alternated; the difference per scan, as
a share of one CPU at the sampler's interval and of the machine's CPUs.

    .venv/bin/python benchmarks/monitor_overhead.py [--pairs 10] [--duration 3] [--scans 400]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pickfs.monitors.sampler import RunMonitor, read_tasks, tasks_waiting_on_io


def run_client(db: Path, duration: float) -> float:
    out = subprocess.run([sys.executable, "-m", "pickfs.clients.tpcb", "run", "--backend", "sqlite", "--db", str(db),
                          "--duration", str(duration)], check=True, capture_output=True, text=True)
    doc = json.loads(out.stdout)
    return doc["transactions"] / doc["elapsed_s"]


def scan_cost(scans: int) -> tuple[float, float]:
    """CPU seconds per scan: the sampler's scan without and with the disturbance's accounting (medians)."""
    mon = RunMonitor(None)
    mon.account_cpu(read_tasks())  # where counting starts
    plain: list[float] = []
    counted: list[float] = []
    for i in range(scans):
        c0 = time.thread_time()
        tasks = read_tasks()
        tasks_waiting_on_io(mon.scope, tasks)
        if i % 2:
            mon.account_cpu(tasks)
            counted.append(time.thread_time() - c0)
        else:
            plain.append(time.thread_time() - c0)
        time.sleep(0.1)
    return statistics.median(plain), statistics.median(counted)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--scans", type=int, default=400)
    args = ap.parse_args()
    with_m, without, costs = [], [], []
    with tempfile.TemporaryDirectory(dir="/dev/shm", prefix="pickfs-bench-") as tmp:
        db = Path(tmp) / "tpcb.db"
        subprocess.run([sys.executable, "-m", "pickfs.clients.tpcb", "load", "--backend", "sqlite", "--db", str(db)],
                       check=True, capture_output=True)
        for i in range(args.pairs):
            for monitored in ((True, False) if i % 2 == 0 else (False, True)):
                if monitored:
                    with RunMonitor(None) as mon:
                        with_m.append(run_client(db, args.duration))
                    totals = mon.result()["totals"]
                    costs.append(totals["sampler_cpu_s"] / totals["elapsed_s"])
                else:
                    without.append(run_client(db, args.duration))
    a, b = statistics.median(with_m), statistics.median(without)
    print(f"tmpfs, {args.pairs} runs each of {args.duration:.0f} s, alternated:")
    print(f"  with monitors:    {a:10,.0f} tx/s (median)")
    print(f"  without monitors: {b:10,.0f} tx/s (median)")
    print(f"  ratio {a / b:.3f}; the monitor thread used {statistics.median(costs):.2%} of one CPU")
    plain, counted = scan_cost(args.scans)
    cpus = os.cpu_count() or 1
    added = (counted - plain) / 0.1
    print(f"{args.scans} scans of /proc ({len(read_tasks())} tasks now), every 0.1 s as the sampler makes them:")
    print(f"  scan alone {plain * 1e3:.2f} ms, with the disturbance's accounting {counted * 1e3:.2f} ms (medians)")
    print(f"  recording the disturbance adds {added:.2%} of one CPU, {added / cpus:.2%} of this machine's {cpus}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
