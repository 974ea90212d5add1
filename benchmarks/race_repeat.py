"""The default job, run back to back under the race and (for comparison) the earlier side-by-side
design on the same machine: per run its wall time, whether it decided, its answer (or the set it could
not decide between), the half-widths of the comparisons still in the race at the end, and the
factor of ext4-nobarrier against ext4.

    sudo .venv/bin/python benchmarks/race_repeat.py [--designs race,race,race,paired] [--workdir DIR] [ARGS...]
    .venv/bin/python benchmarks/race_repeat.py --results R.db RUN_ID ...     # re-analyse stored runs

Extra ARGS go to every `pickfs run` (e.g. --fs ext4,xfs,btrfs --max-time 2m for a short try).
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from pathlib import Path

from pickfs.report.recommend import recommend
from pickfs.analysis.run import build_views
from pickfs.stats.decision import contrast
from pickfs.store import ResultStore


def describe(store: ResultStore, run_id: str, wall: float | None = None) -> str:
    record = store.load(run_id)
    lines = []
    for view in build_views(record):
        if not view.measured:
            continue
        took = f"{wall / 60:.1f} min wall" if wall is not None else f"{(record.updated - record.created) / 60:.1f} min"
        lines.append(f"{run_id} {view.label}: {took}")
        race = view.race
        if race is not None:
            d = race.decision
            state = f"answer {d.answer}" if d.settled else f"could not decide between {', '.join(d.tied)}"
            lines.append(f"  race: {state}; left: " + ", ".join(f"{n} after round {r + 1}" for n, r, _ in race.left))
            ref = d.answer or view.baseline
            widths = []
            for name in d.tied:
                c = contrast(race.fit, name, view.baseline) if name != view.baseline else None
                if c is not None:
                    lo, hi = c.interval(0.95)
                    widths.append(f"{name} ±{math.expm1((hi - lo) / 2):.1%}")
            lines.append(f"  still in the race at the end, 95% half-width against {view.baseline}: "
                         f"{', '.join(widths) or '-'} (answer or preferred: {ref})")
            nb = contrast(race.fit, "ext4-nobarrier", "ext4") if "ext4-nobarrier" in race.fit.spreads else None
            if nb is not None:
                lo, hi = nb.interval(0.95)
                lines.append(f"  ext4-nobarrier against ext4: {math.exp(nb.est):.2f}x [{math.exp(lo):.2f}x to "
                             f"{math.exp(hi):.2f}x], ±{math.expm1((hi - lo) / 2):.1%}")
        else:
            widths = sorted((r.comparison.ci_high / r.comparison.ratio - 1, r.cell.config.name) for r in view.rows
                            if r.comparison is not None and r.cell.config.fstype not in ("tmpfs", "raw"))
            lines.append("  paired design, 95% half-widths: " + ", ".join(f"{n} ±{w:.1%}" for w, n in widths))
        lines.append("  recommendation: " + " ".join(recommend(view)))
    return "\n".join(lines)


def run(workdir: str, design: str, extra: list[str]) -> tuple[str, float]:
    path = Path(workdir) / "results.db"
    before = {r.id for r in ResultStore(path).list_runs()} if path.exists() else set()
    t0 = time.monotonic()
    args = [sys.executable, "-m", "pickfs", "run", "--workdir", workdir, *extra]
    if design == "paired":
        args.append("--no-race")
    r = subprocess.run(args, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(r.stderr[-2000:])
    [new] = [x.id for x in ResultStore(path).list_runs() if x.id not in before]
    return new, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", default="race,race,race,paired")
    ap.add_argument("--workdir", default="/var/tmp/pickfs-race-repeat")
    ap.add_argument("--results", type=Path)
    a, rest = ap.parse_known_args()
    if a.results is not None:
        store = ResultStore(a.results)
        for run_id in rest:
            print(describe(store, run_id), flush=True)
        return 0
    Path(a.workdir).mkdir(parents=True, exist_ok=True)
    for design in a.designs.split(","):
        run_id, wall = run(a.workdir, design, rest)
        print(f"[{design}] " + describe(ResultStore(Path(a.workdir) / "results.db"), run_id, wall), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
