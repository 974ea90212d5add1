"""A/A calibration of the side-by-side method: how often does pickfs call a difference where there is none?

Runs, several times, a plan in which the same configuration is entered N times under different
names (real mkfs, mount and SQLite slices, side by side, the default method: the race), then compares
every copy with every other copy by the estimator the run was measured with (the race's model, or
the earlier paired one for runs made with --no-race): N(N-1)/2 A/A comparisons per run. The share
declared different at p < 0.05 (per comparison, no multiplicity correction: the strictest reading)
should stay at or under 5%. It also prints how many pairs the margin's equivalence test (two
one-sided tests at 5%) could not show equivalent, and how many copies each run's report declared
different from its baseline.

    sudo .venv/bin/python benchmarks/aa_calibration.py [--copies 12] [--repeats 4] [--max-time 4m] [--fs ext4]
    .venv/bin/python benchmarks/aa_calibration.py --results R.db RUN_ID ...   # re-analyse stored runs
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pickfs.analysis.run import build_views
from pickfs.stats.compare import ALPHA
from pickfs.stats.decision import contrast
from pickfs.stats.paired import paired_compare
from pickfs.store import ResultStore


def plan_text(fs: str, copies: int) -> str:
    out = []
    for i in range(copies):
        out += ["[[config]]", f'name = "{fs}-{chr(ord("a") + i)}"', f'preset = "{fs}"', ""]
    return "\n".join(out)


def analyse(store: ResultStore, run_id: str) -> tuple[int, int, int, list[float], int]:
    """(A/A pairs, declared different, significant against the baseline in the report, half-widths,
    pairs not shown equivalent at the margin). A run measured by the race is analysed by its model
    (stats/weather.py); an earlier one by the paired estimator."""
    [view] = [v for v in build_views(store.load(run_id)) if v.measured]
    rows = [r for r in view.rows if r.observations]
    pairs = different = not_equivalent = 0
    widths = []
    for a, b in itertools.combinations(rows, 2):
        if view.race is not None:
            con = contrast(view.race.fit, a.cell.config.name, b.cell.config.name)
            if con is None:
                continue
            lo, hi = con.interval(0.95)
            p, half = con.p, math.expm1((hi - lo) / 2)
            edge = math.log1p(view.race.decision.margin)
            not_equivalent += not (con.bound(ALPHA, upper=False) >= -edge and con.bound(ALPHA, upper=True) <= edge)
        else:
            c = paired_compare(a.observations, b.observations)
            if c is None:
                continue
            p, half = c.p, c.half_width
        pairs += 1
        different += p < ALPHA
        widths.append(half)
    significant = sum(1 for r in rows if r.comparison is not None and r.comparison.significant)
    return pairs, different, significant, widths, not_equivalent


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
    total = alarms = holm = unequal = 0
    widths: list[float] = []
    for run_id in run_ids:
        pairs, different, h, w, ne = analyse(store, run_id)
        total, alarms, holm, widths, unequal = total + pairs, alarms + different, holm + h, widths + w, unequal + ne
        print(f"{run_id}: {different} of {pairs} A/A pairs declared different at p < {ALPHA}; "
              f"{ne} not shown equivalent at the margin; "
              f"{h} of {args.copies - 1} copies significant against the baseline in the report")
    widths.sort()
    print(f"\nall: {alarms} of {total} A/A comparisons declared different ({alarms / max(total, 1):.1%}; "
          f"nominal {ALPHA:.0%}); not shown equivalent at the margin (two one-sided tests at {ALPHA:.0%}): "
          f"{unequal} of {total}; significant against the baseline in the report: {holm} of "
          f"{len(run_ids) * (args.copies - 1)}")
    if widths:
        print(f"interval half-widths: median ±{widths[len(widths) // 2]:.1%}, "
              f"range ±{widths[0]:.1%} to ±{widths[-1]:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
