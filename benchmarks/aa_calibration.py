"""A/A calibration: how often does pickfs call a difference where there is none?

Runs one plan in which the same configuration is entered N times under different names
(real mkfs, mount and SQLite runs), then:
  1. counts the configurations pickfs declared significantly different from the first
     (Holm-corrected; the family-wise rate should stay at or under 5%);
  2. pools every measured value (all from the same configuration) and draws many random
     A/A pairs of `runs` values each, counting how often pickfs's test says p < 0.05
     (the per-comparison false-positive rate; nominal 5%). For contrast it does the same
     with a percentile bootstrap interval of the ratio of means, the test pickfs did not pick.

    sudo .venv/bin/python benchmarks/aa_calibration.py [--copies 12] [--runs 5] [--duration 1s] [--fs ext4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from pickfs.stats.compare import ALPHA, compare


def bootstrap_says_different(a: np.ndarray, b: np.ndarray, rng: np.random.Generator, draws: int = 400) -> bool:
    ia = rng.integers(0, len(a), (draws, len(a)))
    ib = rng.integers(0, len(b), (draws, len(b)))
    ratios = a[ia].mean(axis=1) / b[ib].mean(axis=1)
    lo, hi = np.quantile(ratios, [ALPHA / 2, 1 - ALPHA / 2])
    return lo > 1 or hi < 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fs", default="ext4")
    ap.add_argument("--copies", type=int, default=12)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--duration", default="1s")
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--json", help="reuse a finished run's JSON instead of running")
    args = ap.parse_args()
    if args.json:
        doc = json.loads(Path(args.json).read_text())
    else:
        if os.geteuid() != 0:
            print("error: needs root (or --json of a finished A/A run)", file=sys.stderr)
            return 1
        with tempfile.TemporaryDirectory(prefix="pickfs-aa-") as tmp:
            plan = Path(tmp) / "aa.toml"
            plan.write_text("".join(f'[[config]]\nname = "{args.fs}-{i}"\nfs = "{args.fs}"\n\n'
                                    for i in range(args.copies))
                            + f'[[workload]]\nname = "sqlite-tpcb"\nduration = "{args.duration}"\n')
            out = Path(tmp) / "aa.json"
            subprocess.run([sys.executable, "-m", "pickfs", "run", "--plan", str(plan), "--runs", str(args.runs),
                            "--warmup", "0", "--size", "1G", "--no-monitors", "--json", str(out)], check=True,
                           stdout=subprocess.DEVNULL)
            doc = json.loads(out.read_text())
    cells = [c for c in doc["cells"] if c["values"]]
    flagged = [c["config"] for c in cells if c.get("comparison") and c["comparison"]["significant"]]
    print(f"{len(cells)} identical configurations ({cells[0]['config_settings']['fstype']}), "
          f"{len(cells[0]['values'])} runs each, run {doc['run_id']}")
    print(f"  declared different from the first (Holm): {len(flagged)} of {len(cells) - 1}"
          + (f" ({', '.join(flagged)})" if flagged else ""))
    pool = np.array([v for c in cells for v in c["values"]])
    n = len(cells[0]["values"])
    rng = np.random.default_rng(1)
    ours = boot = 0
    for _ in range(args.pairs):
        pick = rng.choice(len(pool), size=2 * n, replace=False)
        a, b = pool[pick[:n]], pool[pick[n:]]
        c = compare(a, b)
        ours += c is not None and c.p < ALPHA
        boot += bootstrap_says_different(a, b, rng)
    cv = pool.std(ddof=1) / pool.mean()
    print(f"  pooled {len(pool)} values, CV {cv:.0%}; {args.pairs} random A/A pairs of {n} vs {n}:")
    print(f"  pickfs (log-t, conservative df): false positives {ours / args.pairs:.1%} (nominal 5.0%)")
    print(f"  percentile bootstrap of the ratio: false positives {boot / args.pairs:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
