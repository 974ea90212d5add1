"""The default job's presets under the older one-at-a-time method and under side by side, on the
same machine, one after the other: per comparison with the baseline, the ratio, its 95% interval
and whether it is significant, and the wall time of each method.

    sudo .venv/bin/python benchmarks/method_old_vs_new.py [--workdir /var/tmp/pickfs-methods]
    .venv/bin/python benchmarks/method_old_vs_new.py --results R.db OLD_RUN NEW_RUN   # re-analyse
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from pickfs.analysis.run import build_views
from pickfs.store import ResultStore


def comparisons(store: ResultStore, run_id: str) -> tuple[dict[str, tuple[float, float, float, bool]], float, str]:
    record = store.load(run_id)
    [view] = [v for v in build_views(record) if v.measured]
    out = {r.cell.config.name: (r.comparison.ratio, r.comparison.ci_low, r.comparison.ci_high, r.comparison.significant)
           for r in view.rows if r.comparison is not None}
    return out, record.updated - record.created, view.baseline or "?"


def run(workdir: str, *extra: str) -> tuple[str, float]:
    store_path = Path(workdir) / "results.db"
    before = {r.id for r in ResultStore(store_path).list_runs()} if store_path.exists() else set()
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "pickfs", "run", "--workdir", workdir, *extra],
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    [new] = [x.id for x in ResultStore(store_path).list_runs() if x.id not in before]
    return new, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default="/var/tmp/pickfs-methods")
    ap.add_argument("--results")
    ap.add_argument("runs", nargs="*", help="OLD_RUN NEW_RUN to re-analyse instead of running")
    args = ap.parse_args()
    if args.runs:
        store = ResultStore(Path(args.results or Path(args.workdir) / "results.db"))
        old_id, new_id = args.runs
    else:
        if os.geteuid() != 0:
            print("needs root (loop devices, mkfs, mount)", file=sys.stderr)
            return 2
        old_id, old_wall = run(args.workdir, "--one-at-a-time")
        print(f"one at a time: run {old_id}, {old_wall / 60:.1f} min", flush=True)
        new_id, new_wall = run(args.workdir)
        print(f"side by side: run {new_id}, {new_wall / 60:.1f} min", flush=True)
        store = ResultStore(Path(args.workdir) / "results.db")
    old, old_s, base = comparisons(store, old_id)
    new, new_s, _ = comparisons(store, new_id)
    print(f"\nagainst {base}     one at a time ({old_s / 60:.1f} min)          side by side ({new_s / 60:.1f} min)")
    for name in sorted(set(old) | set(new), key=lambda n: list(new).index(n) if n in new else 99):
        cells = []
        for table in (old, new):
            if name in table:
                r, lo, hi, sig = table[name]
                cells.append(f"{r:5.2f} [{lo:4.2f}-{hi:5.2f}] ±{(hi / r - 1):6.1%} {'*' if sig else ' '}")
            else:
                cells.append(" " * 30)
        print(f"{name:16} {cells[0]}   {cells[1]}")
    print("(* significant, Holm-corrected; ± is the interval's half-width on the ratio's log scale)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
