"""Does a configuration measured next to idle others give the figure it would give alone?

Side by side, every configuration stands while only one is measured; the others must be idle:
their filesystems made durable (syncfs) at the end of their own slices, their servers held still.
This runs pgbench (PostgreSQL servers do background work: checkpointer, background writer, WAL
writer, autovacuum) on ext4 entered twice plus neighbours, once with the servers held still and
once without, and prints for each:
  - the bytes the idle neighbours' devices wrote during each measured slice (median and worst);
  - ext4-again against ext4 (an A/A pair: 1.00 if the neighbours disturb neither);
  - ext4 measured alone (one configuration, nothing else standing) against ext4 next to idle
    neighbours, as the ratio of medians of runs taken alternately, alone and with neighbours.

    sudo .venv/bin/python benchmarks/idle_neighbours.py [--neighbours ext4-nobarrier,xfs,btrfs] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PGBENCH = ("--workload", "pgbench", "--set", "scale=4", "--set", "clients=2", "--set", "threads=1")


def run(workdir: str, fs: str, *extra: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = fh.name
    r = subprocess.run([sys.executable, "-m", "pickfs", "run", "--workdir", workdir, "--fs", fs, *PGBENCH,
                        "--blocks", "1", "--rounds", "6", "--json", out, *extra], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    return json.loads(Path(out).read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default="/var/tmp/pickfs-neighbours")
    ap.add_argument("--neighbours", default="ext4-nobarrier,xfs,btrfs")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (loop devices, mkfs, mount)", file=sys.stderr)
        return 2
    plan = Path(tempfile.mkdtemp()) / "aa.toml"
    names = ["ext4", "ext4-again", *args.neighbours.split(",")]
    plan_lines = []
    for n in names:
        preset = "ext4" if n == "ext4-again" else n
        plan_lines += ["[[config]]", f'name = "{n}"', f'preset = "{preset}"', ""]
    plan_lines += ["[[workload]]", 'name = "pgbench"', "scale = 4", "clients = 2", "threads = 1", "",
                   "[method]", "blocks = 1", "rounds = 6"]
    alone: list[float] = []
    together: list[float] = []
    for i in range(args.repeats):
        for held in (True, False):
            extra = ["--plan", str(plan)]
            plan.write_text("\n".join(plan_lines + ([] if held else ["freeze_idle = false"])) + "\n")
            r = subprocess.run([sys.executable, "-m", "pickfs", "run", "--workdir", args.workdir, *extra,
                                "--json", str(plan.with_suffix(".json"))], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(r.stderr)
            doc = json.loads(plan.with_suffix(".json").read_text())
            cells = {c["config"]: c for c in doc["cells"]}
            wrote = []
            conn_note = "held still" if held else "left running"
            again = cells["ext4-again"]["comparison"]
            for c in cells.values():
                wrote += c["idle_neighbours_wrote_bytes"]
            wrote.sort()
            print(f"repeat {i + 1}, servers {conn_note}: idle neighbours wrote {statistics.median(wrote) / 1024:,.0f} KiB "
                  f"(median), {wrote[-1] / 1024:,.0f} KiB (most) during a slice; "
                  f"ext4-again/ext4 {again['ratio']:.2f} "
                  f"[{again['ci_low']:.2f}-{again['ci_high']:.2f}]; ext4 median {cells['ext4']['summary']['median']:,.0f} "
                  f"tx/s", flush=True)
            if held:
                together.append(cells["ext4"]["summary"]["median"])
        single = run(args.workdir, "ext4")
        alone.append(single["cells"][0]["summary"]["median"])
        print(f"repeat {i + 1}, ext4 alone: median {alone[-1]:,.0f} tx/s", flush=True)
    print(f"\next4 alone / ext4 next to idle neighbours (held still), medians of alternate runs: "
          f"{statistics.median(alone) / statistics.median(together):.2f} "
          f"({', '.join(f'{a / t:.2f}' for a, t in zip(alone, together))} per repeat)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
