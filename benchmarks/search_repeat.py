"""Two searches back to back over the same space: per search its wall time, the configurations and images
built, the leader (or the set it could not tell apart), its advantage over the distribution's default with
its interval, and against the fastest safe preset; then whether the two agree.

    sudo flock /tmp/pickfs-bench.lock .venv/bin/python benchmarks/search_repeat.py [--times 2] [--workdir DIR] [ARGS...]
    .venv/bin/python benchmarks/search_repeat.py --json A.json B.json          # re-read two searches' JSON

Extra ARGS go to every `pickfs search` (e.g. --max-time 10m for a short try; the default is 30m).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _setup(a: dict[str, Any]) -> tuple[str, ...]:
    """A settled answer by what it sets up, not its name (a preset and the space's configuration of the same
    setup are one answer); an unset scheduler is the loop device's own, none."""
    s = a["setup"]
    udev = s["udev"] or 'ATTR{queue/scheduler}="none"'
    return (s["mkfs"], s["fstab"], udev[udev.index("ATTR"):], json.dumps(s["database_settings"], sort_keys=True))


Found = tuple[bool, tuple[str, ...]]  # settled, and the setup (settled) or the names it could not tell apart


def describe(d: dict[str, Any], wall: float | None) -> tuple[str, Found]:
    a = d["answer"]
    took = f"{wall / 60:.1f} min wall" if wall is not None else f"{sum(s['elapsed_s'] for s in d['stages']) / 60:.1f} min"
    lines = [f"search {d['search']}: {took}; {d['configurations_built']} configurations built ({d['images_built']} "
             f"images) of {d['space']['allowed']} allowed; stages: "
             + ", ".join(f"{s['name']} {len(s['configurations'])}" for s in d["stages"])]
    if a is None:
        return "\n".join([*lines, "  no answer"]), (False, ())
    tied = (True, _setup(a)) if a["settled"] else (False, tuple(sorted(a["tied"])))
    state = "settled" if a["settled"] else f"not settled, could not tell apart {', '.join(a['tied'])}"
    lines.append(f"  leader: {a['name']} ({state})")
    adv = a["advantage"]
    if adv:
        lines.append(f"  over {adv['over']}: {adv['ratio']:.2f}x [{adv['low']:.2f}x to {adv['high']:.2f}x]")
    best = a["best_preset"]
    if best and best.get("same"):
        lines.append(f"  the fastest preset {best['over']} is this same setup")
    elif best:
        lines.append(f"  against the fastest preset {best['over']}: {best['ratio']:.2f}x [{best['low']:.2f}x to "
                     f"{best['high']:.2f}x]")
    ranked = [e for e in d["effects"] if e["measurable"]]
    lines.append("  measurable effects: " + (", ".join(f"{e['filesystem']} {e['dimension']} {e['value']} "
                                                         f"{e['ratio']:.2f}x" for e in ranked) or "none"))
    return "\n".join(lines), tied


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--times", type=int, default=2)
    ap.add_argument("--workdir", default="/var/tmp/pickfs-search-bench")
    ap.add_argument("--json", nargs="+", help="re-read these searches' JSON instead of running")
    args, extra = ap.parse_known_args()
    found: list[Found] = []
    if args.json:
        for path in args.json:
            text, tied = describe(json.loads(Path(path).read_text()), None)
            print(text)
            found.append(tied)
    else:
        for i in range(args.times):
            out = Path(args.workdir) / f"search-{i + 1}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            cmd = [sys.executable, "-m", "pickfs", "search", "--workdir", args.workdir, "--json", str(out), *extra]
            print("$", " ".join(cmd), flush=True)
            t0 = time.monotonic()
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
            wall = time.monotonic() - t0
            if r.returncode != 0:
                print(f"search {i + 1} failed with exit code {r.returncode}")
                return 1
            text, tied = describe(json.loads(out.read_text()), wall)
            print(text, flush=True)
            found.append(tied)
    if len(found) > 1:
        same = len(set(found)) == 1
        overlap = set.intersection(*(set(t) for _, t in found))
        print(("the same setup settled every time" if found[0][0] else "the same undecided set every time") if same
              else f"different leaders or sets: {found}; in common: {sorted(overlap) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
