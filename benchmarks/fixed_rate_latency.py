"""SQLite TPC-B at a fixed rate of half of ext4's closed-loop throughput: p99 from each transaction's
scheduled start for ext4, ext4-nobarrier, xfs and btrfs side by side, the capacity of each at
p99 <= 10 ms, and the client's own scheduling error on tmpfs.

Three pickfs runs one after the other (each builds its filesystems on loop images in --workdir):
  1. closed loop, ext4 only: its throughput (median over slices);
  2. at half of it, the four side by side: p50/p99/p99.9 from the schedule, late and skipped
     shares, each p99 over ext4's with its paired bootstrap interval;
  3. the capacity search for p99 <= 10 ms, starting from that rate.
Then the TPC-B client in memory (/dev/shm) at the same rate: its scheduling error (start minus
scheduled start of the transactions it waited for), p50 and p99, waiting at real-time priority
(as pickfs does as root) and at normal priority.

The same three steps for fio (fileio: 16 KiB direct random writes, one at a time): closed-loop IOPS on
ext4, then at half of it side by side, with fio's own p99 (from when it issued each write) beside the p99
from each write's scheduled start, then the capacity at p99 <= 10 ms.

    flock /tmp/pickfs-bench.lock .venv/bin/python benchmarks/fixed_rate_latency.py [--workdir /var/tmp/pickfs-fixed-rate] [--part sqlite|fio|both]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pickfs.engine.ceiling import measure
from pickfs.model import WorkloadSpec
from pickfs.analysis.latency import capacity_rows, rate_views
from pickfs.report.latency import capacity_text
from pickfs.stats.latency import hist_of, percentile_us
from pickfs.store import ResultStore
from pickfs.workloads.sqlite_tpcb import SqliteTpcb

CONFIGS = "ext4,ext4-nobarrier,xfs,btrfs"
FIO = ("--workload", "fileio", "--set", "read_share=0", "--set", "fsync_every=0", "--set", "direct=true",
       "--set", "size=256M", "--set", "files=4")


def pickfs_run(workdir: str, *extra: str) -> tuple[str, float]:
    store_path = Path(workdir) / "results.db"
    before = {r.id for r in ResultStore(store_path).list_runs()} if store_path.exists() else set()
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "pickfs", "run", "--workdir", workdir, *extra],
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(r.stderr or r.stdout)
    [new] = [x.id for x in ResultStore(store_path).list_runs() if x.id not in before]
    return new, wall


def wake_error(rate: float, seconds: float, normal: bool) -> tuple[float, float, str]:
    """The TPC-B client on /dev/shm at `rate`: p50 and p99 of its wake-up error (microseconds), and how it waited."""
    scratch = Path(tempfile.mkdtemp(prefix="pickfs-wake-", dir="/dev/shm"))
    try:
        base = [sys.executable, "-m", "pickfs.clients.tpcb"]
        db = ["--backend", "sqlite", "--db", str(scratch / "t.db")]
        subprocess.run([*base, "load", *db], check=True, capture_output=True)
        out = subprocess.run([*base, "run", *db, "--duration", str(seconds), "--rate", str(rate),
                              *(["--normal-waits"] if normal else [])], check=True, capture_output=True, text=True)
        block = json.loads(out.stdout)["fixed_rate"]
        wake = hist_of(block, "wake_us")
        return percentile_us(wake, 50) or 0.0, percentile_us(wake, 99) or 0.0, block["waits"]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default="/var/tmp/pickfs-fixed-rate")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--slice", default="2s")
    ap.add_argument("--search-time", default="6m", help="the capacity search's budget")
    ap.add_argument("--part", choices=("sqlite", "fio", "both"), default="both")
    args = ap.parse_args()
    if args.part in ("fio", "both"):
        fio_part(args)
    if args.part == "fio":
        return 0
    common = ("--workload", "sqlite-tpcb", "--blocks", "1", "--slice", args.slice)

    closed, wall = pickfs_run(args.workdir, "--fs", "ext4", "--rounds", "3", *common)
    store = ResultStore(Path(args.workdir) / "results.db")  # once pickfs has made its work directory
    tps = [t.metrics["tps"] for t in store.load(closed).trials if t.phase == "measured" and t.ok]
    ext4_tps = statistics.median(tps)
    rate = round(ext4_tps / 2)
    print(f"1. closed loop, ext4: {ext4_tps:,.0f} tx/s (median of {len(tps)} slices; run {closed}, {wall:.0f} s)")

    fixed, wall = pickfs_run(args.workdir, "--fs", CONFIGS, "--rate", f"{rate}/s", "--rounds", str(args.rounds), *common)
    print(f"2. at {rate}/s (half of it), side by side (run {fixed}, {wall:.0f} s): latency from the scheduled start")
    for view in rate_views(store.load(fixed)):
        for row in view.rows:
            s, r = row.summary, row.p99_ratio
            ratio = "baseline" if r is None else f"x{r.ratio:.2f}" + (
                f" [{r.low:.2f}-{r.high:.2f}]" if r.low is not None and r.high is not None else "")
            p = {q: f"{v * 1e3:.2f} ms" for q, v in s.percentiles_s.items()}
            print(f"   {row.config:15s} p50 {p.get(50.0, '-'):>10s}  p99 {p.get(99.0, '-'):>10s}  "
                  f"p99.9 {p.get(99.9, '-'):>10s}  late {'-' if s.late_share is None else f'{s.late_share:.1%}':>6s}  skipped {s.missed_share:5.1%}  "
                  f"p99 vs {view.baseline} {ratio}  ({s.slices} slices, {s.cpu_bound_slices} CPU-bound)")

    search, wall = pickfs_run(args.workdir, "--fs", CONFIGS, "--rate", f"{rate}/s", "--latency-target", "p99<=10ms",
                              "--max-time", args.search_time, *common)
    print(f"3. capacity at p99 <= 10 ms from the scheduled start (run {search}, {wall:.0f} s)")
    for _, _, rows in capacity_rows(store.load(search)):
        for row in rows:
            words, interval = capacity_text(row.capacity)
            tried = ", ".join(f"{v.rate:,.0f}/s:{'-' if v.point_s is None else f'{v.point_s * 1e3:.1f}ms'}"
                              for v in sorted(row.verdicts, key=lambda v: v.rate))
            print(f"   {row.config:15s} {words:>10s} {interval:>16s}   tried {tried}")

    spec = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", tuple(sorted(SqliteTpcb.normalize({"rate": rate}).items())))
    c = measure(spec, seconds=10.0)
    print(f"4. the client on tmpfs: at most {c.max_rate:,.0f} tx/s flat out ({c.cpu_share:.2f} CPU); scheduling "
          f"error at {c.probe_rate:,.0f}/s: p50 {c.lag_p50_s * 1e6:.0f} us, p99 {c.lag_p99_s * 1e6:.0f} us "
          f"(target: under 100 us)")
    for normal in (False, True):
        p50, p99, how = wake_error(rate, 10.0, normal)
        print(f"   waits at {how} priority, {rate}/s for 10 s: scheduling error p50 {p50:.0f} us, p99 {p99:.0f} us")
    print(f"   re-render: pickfs report --results {store.path} {fixed} / {search}")
    return 0


def print_rate_table(store: ResultStore, run_id: str) -> None:
    record = store.load(run_id)
    own: dict[str, list[float]] = {}
    names = {c.index: c.config.name for c in __import__("pickfs.model", fromlist=["plan_from_dict"])
             .plan_from_dict(record.plan).cells()}
    for t in record.trials:
        if t.phase == "measured" and t.ok and "write_p99" in t.metrics:
            own.setdefault(names[t.cell_index], []).append(t.metrics["write_p99"])
    for view in rate_views(record):
        for row in view.rows:
            s, r = row.summary, row.p99_ratio
            ratio = "baseline" if r is None else f"x{r.ratio:.2f}" + (
                f" [{r.low:.2f}-{r.high:.2f}]" if r.low is not None and r.high is not None else "")
            p = {q: f"{v * 1e3:.2f} ms" for q, v in s.percentiles_s.items()}
            issued = f"  fio's own p99 {statistics.median(own[row.config]) * 1e3:.2f} ms (median of slices)" \
                if own.get(row.config) else ""
            print(f"   {row.config:15s} p50 {p.get(50.0, '-'):>10s}  p99 {p.get(99.0, '-'):>10s}  "
                  f"p99.9 {p.get(99.9, '-'):>10s}  late {'-' if s.late_share is None else f'{s.late_share:.1%}':>6s}  "
                  f"skipped {s.missed_share:5.1%}  p99 vs {view.baseline} {ratio}{issued}")


def fio_part(args: argparse.Namespace) -> None:
    common = (*FIO, "--blocks", "1", "--slice", args.slice)
    closed, wall = pickfs_run(args.workdir, "--fs", "ext4", "--rounds", "3", *common)
    store = ResultStore(Path(args.workdir) / "results.db")  # once pickfs has made its work directory
    iops = statistics.median(t.metrics["iops"] for t in store.load(closed).trials if t.phase == "measured" and t.ok)
    rate = round(iops / 2)
    print(f"fio 1. closed loop, ext4: {iops:,.0f} IOPS (run {closed}, {wall:.0f} s)")
    fixed, wall = pickfs_run(args.workdir, "--fs", CONFIGS, "--rate", f"{rate}/s", "--rounds", str(args.rounds),
                             *common)
    print(f"fio 2. at {rate}/s (half of it), side by side (run {fixed}, {wall:.0f} s): latency from the scheduled start")
    print_rate_table(store, fixed)
    search, wall = pickfs_run(args.workdir, "--fs", CONFIGS, "--rate", f"{rate}/s", "--latency-target", "p99<=10ms",
                              "--max-time", args.search_time, *common)
    print(f"fio 3. capacity at p99 <= 10 ms from the scheduled start (run {search}, {wall:.0f} s)")
    for _, _, rows in capacity_rows(store.load(search)):
        for row in rows:
            words, interval = capacity_text(row.capacity)
            tried = ", ".join(f"{v.rate:,.0f}/s:{'-' if v.point_s is None else f'{v.point_s * 1e3:.1f}ms'}"
                              for v in sorted(row.verdicts, key=lambda v: v.rate))
            print(f"   {row.config:15s} {words:>10s} {interval:>16s}   tried {tried}")
    for note in store.load(search).notes:
        print(f"   note: {note}")


if __name__ == "__main__":
    sys.exit(main())
