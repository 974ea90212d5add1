"""Do reruns of one question give one answer? The default job and a plan with an A/A copy of the
baseline, run back to back, quietly and with a standard CPU load started halfway through each run.

Per run it prints the answer (or the configurations the run could not decide between), every
comparison against the baseline with its interval, and the A/A copy's verdict; overall:
- the share of runs that prefer the same configuration (the answer, or, unsettled, the first of the
  configurations it could not decide between: the race's order of preference; an A/A copy counts as its
  original);
- how many pairs of runs that prefer different configurations still read as one finding (each calls the
  other's preferred configuration close to the margin);
- how many A/A copies were called different (an interval that excludes 1);
- for each comparison measured in two runs, whether the two estimates differ by more than their
  combined 95% interval allows (on the log scale, each run's standard error read back from its
  interval), the count and an exact binomial test of that count against 5%.
The table's intervals are simultaneous (wider than one comparison's own), so the pairwise count is
conservative: it understates disagreement beyond the intervals, never overstates it.

    sudo .venv/bin/python benchmarks/rerun_agreement.py [--jobs default,aa] [--times 3] [--load halfway] [--aa-budget 340] [ARGS...]
    .venv/bin/python benchmarks/rerun_agreement.py --json A.json B.json ...   # re-read runs' JSON exports

--aa-budget S: the A/A plan's time budget in seconds, stand-up included (default 340, so that its runs end within
6 minutes; 0: pickfs's default, 9 minutes).
--load quiet|halfway|both: halfway starts one busy loop per CPU at half of --max-time (default 9 min)
after each run starts, and stops it when the run ends. Extra ARGS go to every `pickfs run`.
Run it with the machine to itself; `flock /tmp/pickfs-bench.lock` keeps two benchmarks apart.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from scipy.stats import binomtest

Z95 = 1.959963984540054
AA_NAME = "ext4-aa"
# an A/A copy is its original's setup: a run that prefers the copy (an export written before copies became checks,
# when a copy could be preferred) prefers that setup
SETUP_OF = {AA_NAME: "ext4"}
# The A/A plan's time budget (stand-up included): its runs are to end within 6 minutes, the process's start and the
# teardown after the last round included
AA_BUDGET_S = 340
AA_PLAN = """# ext4, an A/A copy of it, and the company the reruns measured xfs against ext4 in
baseline = "ext4"
{method}[[config]]
preset = "ext4"
[[config]]
preset = "ext4"
name = "{AA_NAME}"
description = "ext4 again: an A/A copy of the baseline, never truly different"
[[config]]
preset = "xfs"
[[config]]
preset = "ext4-nobarrier"
[[config]]
preset = "ext4-journal"
[[config]]
preset = "btrfs"
[[workload]]
name = "sqlite-tpcb"
"""


def aa_plan(budget_s: float) -> str:
    """The A/A plan's file, with its time budget (0: pickfs's default)."""
    method = f"[method]\nmax_seconds = {budget_s:g}\n" if budget_s > 0 else ""
    return AA_PLAN.format(method=method, AA_NAME=AA_NAME)


@dataclass(frozen=True)
class Factor:
    config: str
    baseline: str
    ratio: float
    low: float
    high: float

    @property
    def log_se(self) -> float:
        return (math.log(self.high) - math.log(self.low)) / (2 * Z95)

    def excludes_one(self) -> bool:
        return self.low > 1 or self.high < 1

    def words(self) -> str:
        return f"{self.config} {self.ratio:.3f}x [{self.low:.3f}x-{self.high:.3f}x]"


@dataclass(frozen=True)
class Reading:
    run: str
    job: str
    load: str
    wall_s: float | None
    preferred: str | None
    settled: bool
    undecided: tuple[str, ...]
    factors: tuple[Factor, ...]
    close: frozenset[str] = frozenset()  # contenders the answer calls close to the margin (against `preferred`)

    def one_finding_with(self, other: Reading) -> bool:
        """Two runs read as one finding: they prefer the same configuration, or each names the other's preferred
        configuration as close to the margin (a rerun as precise may decide that pair the other way)."""
        return self.preferred == other.preferred or (other.preferred in self.close and self.preferred in other.close)


def read_export(path: Path, job: str = "-", load: str = "-", wall_s: float | None = None) -> Reading:
    """One run's JSON export -> its answer and comparisons against the baseline (the first workload)."""
    data = json.loads(path.read_text())
    answer = data["answers"][0] if data.get("answers") else {}
    undecided = tuple(answer.get("undecided_between") or ())
    named = answer.get("preferred") or answer.get("answer") or (undecided[0] if undecided else None)
    preferred = SETUP_OF.get(named, named) if named else None
    label = answer.get("workload")
    factors = []
    for cell in data["cells"]:
        comp = cell.get("comparison")
        if (label is not None and cell["workload"] != label) or not comp or cell["config"] == cell["baseline"]:
            continue
        factors.append(Factor(cell["config"], cell["baseline"], comp["ratio"], comp["ci_low"], comp["ci_high"]))
    # a setup is close when every copy of it the answer weighs is (an A/A copy called close beside its original
    # called out is not one finding)
    calls: dict[str, list[bool]] = {}
    for c in answer.get("contenders") or ():
        calls.setdefault(SETUP_OF.get(c["config"], c["config"]), []).append(bool(c.get("close_to_margin")))
    close = frozenset(setup for setup, said in calls.items() if all(said)) - {preferred}
    return Reading(data["run_id"], job, load, wall_s, preferred, bool(answer.get("decided")), undecided,
                   tuple(factors), close)


def busy() -> None:
    while True:
        pass


def run_once(pickfs: str, job: str, load: str, extra: list[str], out: Path, plan: Path) -> Reading:
    argv = [pickfs, "run", "--json", str(out), *extra]
    if job == "aa":
        argv += ["--plan", str(plan)]
    budget = 9 * 60.0
    if "--max-time" in extra:
        text = extra[extra.index("--max-time") + 1]
        budget = float(text[:-1]) * {"s": 1, "m": 60, "h": 3600}[text[-1]]
    loops: list[multiprocessing.Process] = []
    done = threading.Event()

    def start_load() -> None:
        if not done.wait(budget / 2):
            for _ in range(os.cpu_count() or 1):
                p = multiprocessing.Process(target=busy, daemon=True)
                p.start()
                loops.append(p)

    timer = threading.Thread(target=start_load, daemon=True)
    if load == "halfway":
        timer.start()
    t0 = time.monotonic()
    try:
        proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    finally:
        done.set()
        for p in loops:
            p.kill()
    wall = time.monotonic() - t0
    if proc.returncode != 0 or not out.exists():
        sys.exit(f"pickfs run failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return read_export(out, job, load, wall)


def summarise(readings: list[Reading]) -> list[str]:
    lines = []
    for r in readings:
        state = f"use {r.preferred}" if r.settled else f"could not decide between {', '.join(r.undecided)}"
        wall = f"{r.wall_s:.0f} s" if r.wall_s is not None else "-"
        lines.append(f"{r.run} [{r.job}, {r.load}] {wall}: {state} (preferred: {r.preferred})")
        for f in r.factors:
            mark = "  <- A/A called different" if f.config == AA_NAME and f.excludes_one() else ""
            lines.append(f"    {f.words()} against {f.baseline}{mark}")
    lines.append("")
    for job in sorted({r.job for r in readings}):
        group = [r for r in readings if r.job == job]
        prefs = [r.preferred for r in group]
        top = max(set(prefs), key=prefs.count) if prefs else None
        lines.append(f"{job}: {prefs.count(top)} of {len(group)} runs prefer {top}; "
                     f"{sum(r.settled for r in group)} settled")
        split = [(a, b) for a, b in itertools.combinations(group, 2) if a.preferred != b.preferred]
        if split:
            apart = [(a, b) for a, b in split if not a.one_finding_with(b)]
            lines.append(f"  pairs of runs preferring different configurations: {len(split)}; both calling the pair "
                         f"close to the margin: {len(split) - len(apart)}"
                         + "".join(f"\n    not one finding: {a.run} ({a.preferred}) and {b.run} ({b.preferred})"
                                   for a, b in apart))
        quiet = [r for r in group if r.load != "halfway"]
        loaded = [r for r in group if r.load == "halfway"]
        if loaded and quiet:
            qtop = max({r.preferred for r in quiet}, key=[r.preferred for r in quiet].count)
            lines.append(f"  loaded halfway: {sum(r.preferred == qtop for r in loaded)} of {len(loaded)} prefer what "
                         f"the quiet runs prefer ({qtop})")
    aa = [f for r in readings for f in r.factors if f.config == AA_NAME]
    if aa:
        lines.append(f"A/A copies called different: {sum(f.excludes_one() for f in aa)} of {len(aa)}")
    pairs = outside = 0
    for a, b in itertools.combinations(readings, 2):
        fb = {(f.config, f.baseline): f for f in b.factors}
        for f in a.factors:
            g = fb.get((f.config, f.baseline))
            if g is None or min(f.low, g.low) <= 0:
                continue
            pairs += 1
            spread = Z95 * math.hypot(f.log_se, g.log_se)
            outside += abs(math.log(f.ratio) - math.log(g.ratio)) > spread
    if pairs:
        test = binomtest(outside, pairs, 0.05, alternative="greater")
        lines.append(f"pairwise differences outside their combined 95% interval: {outside} of {pairs} "
                     f"({outside / pairs:.1%}; binomial test against 5%: p={test.pvalue:.3g})")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", default="default,aa", help="default (the default job) and/or aa (the A/A plan)")
    ap.add_argument("--times", type=int, default=3, help="runs of each job under each load")
    ap.add_argument("--load", choices=("quiet", "halfway", "both"), default="both")
    ap.add_argument("--aa-budget", type=float, default=AA_BUDGET_S,
                    help=f"the A/A plan's time budget in seconds, stand-up included (default {AA_BUDGET_S}; 0: "
                         "pickfs's default)")
    ap.add_argument("--json", nargs="+", type=Path, help="re-read these JSON exports instead of running")
    ap.add_argument("--pickfs", default=str(Path(sys.executable).with_name("pickfs")))
    args, extra = ap.parse_known_args()
    if args.json:
        print("\n".join(summarise([read_export(p) for p in args.json])))
        return
    loads = ("quiet", "halfway") if args.load == "both" else (args.load,)
    keep = Path(tempfile.mkdtemp(prefix="rerun-agreement-"))
    plan = keep / "aa.toml"
    plan.write_text(aa_plan(args.aa_budget))
    readings = []
    for load in loads:
        for i in range(args.times):
            for job in args.jobs.split(","):
                out = keep / f"{job}-{load}-{i + 1}.json"
                readings.append(run_once(args.pickfs, job, load, extra, out, plan))
                print(f"{out.name}: {readings[-1].preferred} ({readings[-1].wall_s:.0f} s)", flush=True)
    print(f"exports kept in {keep}")
    print("\n".join(summarise(readings)))


if __name__ == "__main__":
    main()
