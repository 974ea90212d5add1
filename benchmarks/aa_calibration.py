"""A/A calibration of the side-by-side method: how often does pickfs call a difference where there is none?

Runs, several times, a plan in which the same configuration is entered N times under different
names (real mkfs, mount and SQLite slices, side by side, the default method), then compares
every copy with every other copy by the paired estimator pickfs uses (each copy against the other
measured nearest in time, blocks on fresh filesystems): N(N-1)/2 A/A comparisons per run. The
share declared different at p < 0.05 (per comparison, no multiplicity correction: the strictest
reading) should stay at or under 5%. It also prints how many copies each run's report declared
different from its baseline (Holm-corrected, as the report does).

    sudo .venv/bin/python benchmarks/aa_calibration.py [--copies 12] [--repeats 4] [--max-time 4m] [--fs ext4]
    .venv/bin/python benchmarks/aa_calibration.py --results R.db RUN_ID ...   # re-analyse stored runs
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pickfs.report.views import build_views
from pickfs.stats.compare import ALPHA
from pickfs.stats.paired import paired_compare
from pickfs.store import ResultStore


def plan_text(fs: str, copies: int) -> str:
    out = []
    for i in range(copies):
        out += ["[[config]]", f'name = "{fs}-{chr(ord("a") + i)}"', f'preset = "{fs}"', ""]
    return "\n".join(out)


def analyse(store: ResultStore, run_id: str) -> tuple[int, int, int, list[float]]:
    """(A/A pairs, declared different, Holm-significant against the baseline, half-widths)."""
    [view] = [v for v in build_views(store.load(run_id)) if v.measured]
    rows = [r for r in view.rows if r.observations]
    pairs = different = 0
    widths = []
    for a, b in itertools.combinations(rows, 2):
        c = paired_compare(a.observations, b.observations)
        if c is None:
            continue
        pairs += 1
        different += c.p < ALPHA
        widths.append(c.half_width)
    holm = sum(1 for r in rows if r.comparison is not None and r.comparison.significant)
    return pairs, different, holm, widths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fs", default="ext4")
    ap.add_argument("--copies", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--max-time", default="4m", help="each run's time budget")
    ap.add_argument("--workdir", default="/var/tmp/pickfs-aa")
    ap.add_argument("--results", help="a results database holding runs to re-analyse")
    ap.add_argument("runs", nargs="*", help="run ids to re-analyse instead of running")
    args = ap.parse_args()
    if args.runs:
        store = ResultStore(Path(args.results or Path(args.workdir) / "results.db"))
        run_ids = args.runs
    else:
        if os.geteuid() != 0:
            print("needs root (loop devices, mkfs, mount)", file=sys.stderr)
            return 2
        store_path = Path(args.workdir) / "results.db"
        run_ids = []
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as fh:
            fh.write(plan_text(args.fs, args.copies))
        out = Path(tempfile.mkdtemp()) / "run.json"
        for i in range(args.repeats):
            r = subprocess.run([sys.executable, "-m", "pickfs", "run", "--plan", fh.name, "--max-time", args.max_time,
                                "--workdir", args.workdir, "--json", str(out)], capture_output=True, text=True)
            if r.returncode != 0:
                print(r.stderr, file=sys.stderr)
                return 1
            run_ids.append(json.loads(out.read_text())["run_id"])
            print(f"run {i + 1}/{args.repeats}: {run_ids[-1]}", flush=True)
        store = ResultStore(store_path)
    total = alarms = holm = 0
    widths: list[float] = []
    for run_id in run_ids:
        pairs, different, h, w = analyse(store, run_id)
        total, alarms, holm, widths = total + pairs, alarms + different, holm + h, widths + w
        print(f"{run_id}: {different} of {pairs} A/A pairs declared different at p < {ALPHA}; "
              f"{h} of {args.copies - 1} copies significant against the baseline (Holm)")
    widths.sort()
    print(f"\nall: {alarms} of {total} A/A comparisons declared different ({alarms / max(total, 1):.1%}; "
          f"nominal {ALPHA:.0%}); Holm against the baseline: {holm} of {len(run_ids) * (args.copies - 1)}")
    if widths:
        print(f"interval half-widths: median ±{widths[len(widths) // 2]:.1%}, "
              f"range ±{widths[0]:.1%} to ±{widths[-1]:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
