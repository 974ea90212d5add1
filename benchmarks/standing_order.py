"""Does the moment an image is made at move its level? One configuration stood up many times in one block (the
baseline's copies of a two-configuration race), each image's level over the rounds it shares with the others
(image and round effects fitted together on log tps), against the order the images were made in.

    sudo flock /tmp/pickfs-bench.lock .venv/bin/python benchmarks/standing_order.py [--copies 12] [--max-time 5m]
    .venv/bin/python benchmarks/standing_order.py --results R.db RUN_ID        # analyse a stored run again

Prints each image's creation rank and level, the rank correlation, and the first third's mean level against the
last third's: with no effect of the order, the correlation is near 0 and the thirds agree within their noise.
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path


def levels(db: str, run_id: str) -> tuple[list[tuple[int, float, int]], float]:
    """(creation rank, level, slices) of the baseline's images, and the slices' residual deviation."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    plan = json.loads(conn.execute("SELECT plan_json FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
    base = next(i for i, c in enumerate(plan["configs"]) if c["name"] == plan["baseline"])
    rows = conn.execute("SELECT cell_index, block, round, phase, metrics_json, started FROM trials "
                        "WHERE run_id = ? AND ok = 1", (run_id,)).fetchall()
    made = sorted((started, cell, block) for cell, block, _, phase, _, started in rows if phase == "prepare")
    rank = {(cell, block): i for i, (_, cell, block) in enumerate(made)}
    data = [((cell, block), rnd, math.log(json.loads(m)["tps"])) for cell, block, rnd, phase, m, _ in rows
            if phase == "measured" and json.loads(m).get("tps")]
    image: dict[tuple[int, int], float] = defaultdict(float)
    weather: dict[int, float] = defaultdict(float)
    for _ in range(100):  # alternating means: image + round, the additive model on the log scale
        by: dict[tuple[int, int], list[float]] = defaultdict(list)
        for k, r, y in data:
            by[k].append(y - weather[r])
        image = defaultdict(float, {k: statistics.fmean(v) for k, v in by.items()})
        per: dict[int, list[float]] = defaultdict(list)
        for k, r, y in data:
            per[r].append(y - image[k])
        weather = defaultdict(float, {r: statistics.fmean(v) for r, v in per.items()})
    residual = [y - image[k] - weather[r] for k, r, y in data]
    sd = math.sqrt(sum(e * e for e in residual) / max(1, len(residual) - len(image) - len(weather)))
    count: dict[tuple[int, int], int] = defaultdict(int)
    for k, _, _ in data:
        count[k] += 1
    out = sorted((rank[k], image[k], count[k]) for k in image if k[0] == base and k in rank)
    return out, sd


def spearman(xs: list[float], ys: list[float]) -> float:
    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        for pos, i in enumerate(order):
            r[i] = float(pos)
        return r
    return statistics.correlation(ranks(xs), ranks(ys)) if len(xs) > 2 else float("nan")


def report(found: list[tuple[int, float, int]], sd: float) -> None:
    mean = statistics.fmean(level for _, level, _ in found)
    print("made  level (vs the copies' mean)  slices")
    for made, level, n in found:
        print(f"{made:4d}  {math.expm1(level - mean):+8.1%}  {n:6d}")
    k = len(found) // 3
    first = [level for _, level, _ in found[:k]]
    last = [level for _, level, _ in found[-k:]]
    n = statistics.fmean(c for *_, c in found)
    se = sd / math.sqrt(n) * math.sqrt(2 / max(k, 1))
    print(f"{len(found)} images of the baseline; slices vary by {sd:.1%} about their image and round")
    print(f"rank correlation of level with the order made: {spearman([r for r, _, _ in found], [lv for _, lv, _ in found]):+.2f}")
    print(f"first third against the last: {math.expm1(statistics.fmean(first) - statistics.fmean(last)):+.1%} "
          f"(slice noise alone: ±{1.96 * se:.1%})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=12)  # the most a race takes
    ap.add_argument("--max-time", default="5m")
    ap.add_argument("--workdir")
    ap.add_argument("--results", nargs=2, metavar=("DB", "RUN_ID"), help="analyse a stored run instead")
    args = ap.parse_args()
    if args.results:
        report(*levels(*args.results))
        return 0
    workdir = args.workdir or tempfile.mkdtemp(prefix="pickfs-standing-", dir="/var/tmp")
    cmd = [sys.executable, "-m", "pickfs", "run", "--fs", "ext4,xfs", "--baseline", "ext4", "--blocks", "1",
           "--baseline-copies", str(args.copies), "--max-time", args.max_time, "--workdir", workdir]
    print("$", " ".join(cmd), flush=True)
    if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
        print("the run failed")
        return 1
    db = str(Path(workdir) / "results.db")
    run_id = sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute("SELECT MAX(id) FROM runs").fetchone()[0]
    report(*levels(db, run_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
