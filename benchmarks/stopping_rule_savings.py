"""What does the stopping rule save against a fixed number of runs?

Takes a finished run (its JSON, e.g. from `pickfs report RUN --json out.json`) and, for each
cell, resamples its real measured values to simulate two methods:
  - the stopping rule: at least --min-runs, then repeat until the 95% interval is within
    +/- target, at most --max-runs;
  - a fixed count, the smallest that gives every cell an interval at least as narrow as the
    target in 90% of cases (what a user must pick without the rule, for the noisiest cell).
Prints runs and minutes for each (minutes from the run's own wall time per trial).

    .venv/bin/python benchmarks/stopping_rule_savings.py RUN.json [--targets 5,10,20]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from pickfs.stats.stopping import relative_half_width, settled


def adaptive_runs(pool: np.ndarray, target: float, min_runs: int, max_runs: int, rng) -> tuple[int, float]:
    values: list[float] = []
    while len(values) < max_runs:
        values.append(float(rng.choice(pool)))
        if settled(values, target, min_runs):
            break
    return len(values), relative_half_width(values)


def fixed_runs_needed(pools: list[np.ndarray], target: float, max_runs: int, rng, sims: int) -> int | None:
    for n in range(2, max_runs * 4):
        if all(np.quantile([relative_half_width(list(rng.choice(p, n))) for _ in range(sims)], 0.9) <= target
               for p in pools):
            return n
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_json")
    ap.add_argument("--targets", default="5,10,20", help="interval targets in percent")
    ap.add_argument("--min-runs", type=int, default=3)
    ap.add_argument("--max-runs", type=int, default=30)
    ap.add_argument("--sims", type=int, default=400)
    args = ap.parse_args()
    doc = json.loads(Path(args.run_json).read_text())
    cells = [c for c in doc["cells"] if len(c["values"]) >= 3]
    pools = [np.array(c["values"]) for c in cells]
    measured = sum(len(c["values"]) for c in cells)
    per_trial_s = (doc["updated"] - doc["created"]) / measured if doc.get("updated") else None
    rng = np.random.default_rng(7)
    print(f"run {doc['run_id']}: {len(cells)} cells, CV from {min(p.std(ddof=1) / p.mean() for p in pools):.0%} "
          f"to {max(p.std(ddof=1) / p.mean() for p in pools):.0%}"
          + (f", {per_trial_s:.1f} s of wall time per measured run" if per_trial_s else ""))
    for target in (float(t) / 100 for t in args.targets.split(",")):
        results = [[adaptive_runs(p, target, args.min_runs, args.max_runs, rng) for _ in range(args.sims)]
                   for p in pools]
        adaptive_total = sum(np.mean([n for n, _ in r]) for r in results)
        unsettled = sum(np.mean([hw > target for _, hw in r]) for r in results)
        fixed = fixed_runs_needed(pools, target, args.max_runs, rng, args.sims // 4)
        line = f"target ±{target:.0%}: stopping rule {adaptive_total:.0f} runs"
        if unsettled:
            line += f" ({unsettled:.1f} cells hit --max-runs {args.max_runs} unsettled)"
        if fixed is None:
            line += f"; no fixed count up to {args.max_runs * 4} narrows every cell that far"
        else:
            fixed_total = fixed * len(cells)
            line += f"; fixed count {fixed} per cell = {fixed_total} runs; saves {fixed_total - adaptive_total:.0f} runs"
            if per_trial_s:
                line += f" = {(fixed_total - adaptive_total) * per_trial_s / 60:.0f} min"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
