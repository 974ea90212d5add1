"""What do pickfs's monitors cost? The same SQLite run with and without them, alternated.

On tmpfs (CPU-bound: any CPU the monitors take shows in full) the sqlite-tpcb client runs
--pairs times with the monitor sampling and as often without; prints the median throughput
of each, their ratio, and the monitor thread's own CPU time as a share of the run.

    .venv/bin/python benchmarks/monitor_overhead.py [--pairs 10] [--duration 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pickfs.monitors.sampler import RunMonitor


def run_client(db: Path, duration: float) -> float:
    out = subprocess.run([sys.executable, "-m", "pickfs.clients.tpcb", "run", "--backend", "sqlite", "--db", str(db),
                          "--duration", str(duration)], check=True, capture_output=True, text=True)
    doc = json.loads(out.stdout)
    return doc["transactions"] / doc["elapsed_s"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--duration", type=float, default=3.0)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
