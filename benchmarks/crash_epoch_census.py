"""How many flush epochs does a crash test's recording have, and what does a budget's worth of states cover of them?

Records a workload once on the real recorder (real filesystem, real server), checks no state, and prints:

- the recording: acknowledgements, writes and flushes in its window;
- its flush epochs with unflushed writes (`crash.states.epochs`), how many of them overwrite units last written
  before the previous flush (a write-back: what torn-page protections guard) and how many units the largest do, and
  its multi-unit writes that overwrite earlier data; covering each epoch once takes one state per epoch;
- for a budget of `--states` states, made in batches as a crash test makes them (the first `--first`, then batches
  sized `--batch`, each knowing what the earlier ones covered), with the share drawn at random of the first states
  and of the later ones (this design: a third, then `LATER_DRAWN`; `--later 0.3333` gives the earlier design, a
  third throughout): the states drawn at random (the bound's sample; duplicates are not told apart here, so the
  distinct ones are somewhat fewer), what 1 in K they rule out when none fails, and the epochs, write-back epochs
  and overwriting writes the states covered.

Root; an integration run (mounts, a server): wrap it in the itest lock:

    flock /tmp/pickfs-itest.lock .venv/bin/python benchmarks/crash_epoch_census.py --workload pgbench
    flock /tmp/pickfs-itest.lock .venv/bin/python benchmarks/crash_epoch_census.py --workload sqlite-tpcb \\
        --states 2400
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from pickfs.crash.runner import driver_for, recorded
from pickfs.crash.states import (
    DEFAULT_UNIT,
    FIRST_DRAWN,
    LATER_DRAWN,
    CrashState,
    coverage,
    covered,
    epochs,
    generate,
)
from pickfs.model import WorkloadSpec
from pickfs.plan import resolve_fs_name
from pickfs.safepaths import MARKER
from pickfs.stack.ledger import Ledger
from pickfs.stats.crashbound import bound
from pickfs.workloads import workload_class


def budget(rec, n: int, first: int, size: int, later: float) -> tuple[list[CrashState], int]:  # type: ignore[no-untyped-def]
    """n states in batches as a crash test on a budget makes them; with how many were drawn at random."""
    tried: list[CrashState] = []
    sizes = [min(first, n)]
    while sum(sizes) < n:
        sizes.append(min(size, n - sum(sizes)))
    for k, m in enumerate(sizes):
        done = covered(rec.records, rec.first, rec.last, tried, DEFAULT_UNIT)
        tried += generate(rec.records, rec.t_start, rec.t_end, m, 1 + k, DEFAULT_UNIT, rec.events, 0.25, (), done,
                          FIRST_DRAWN if k == 0 else later)
    return tried, sum(1 for s in tried if s.drawn)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fs", default="ext4")
    p.add_argument("--workload", default="pgbench")
    p.add_argument("--set", action="append", default=[], dest="sets")
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--size", type=int, default=512, help="image MiB")
    p.add_argument("--states", type=int, action="append", default=[], help="a budget's states (repeatable) [600]")
    p.add_argument("--first", type=int, default=12)
    p.add_argument("--batch", type=int, default=150, help="the later batches' size")
    p.add_argument("--later", type=float, action="append", default=[],
                   help=f"the later batches' share drawn at random (repeatable) [{LATER_DRAWN:g} and {FIRST_DRAWN:g}]")
    a = p.parse_args(argv)
    settings = dict(s.split("=", 1) for s in a.sets)
    cls = workload_class(a.workload)
    spec = WorkloadSpec(a.workload, "x", tuple(sorted(cls.normalize(settings).items())))
    config = resolve_fs_name(a.fs)
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="pickfs-census-") as tmp:
        workdir = Path(tmp)
        workdir.chmod(0o755)  # a server's own user walks through it to its data directory
        (workdir / MARKER).touch(mode=0o600)
        ledger = Ledger(workdir / "ledger")
        with recorded(config, spec, workdir, ledger, a.size * 1024**2, a.duration, 1, driver_for(spec, workdir)) as rec:
            window = rec.records[rec.first:rec.last]
            every = epochs(rec.records, rec.first, rec.last, DEFAULT_UNIT)
            back = [e for e in every if e.exposed]
            exposed = sorted((e.exposed for e in back), reverse=True)
            print(f"{a.fs} {a.workload} {' '.join(a.sets)}: {a.duration:g} s recorded, {len(rec.acks):,} "
                  f"acknowledgements, {sum(1 for r in window if r.changes):,} writes and "
                  f"{sum(1 for r in window if not r.changes):,} flushes in its window, {len(rec.events):,} events")
            print(f"  {len(every):,} flush epochs with unflushed writes (covering each once: {len(every):,} states); "
                  f"{len(back):,} overwrite units last written before the previous flush (write-backs), "
                  f"{sum(exposed):,} units in all, the largest {exposed[:8]}, median "
                  f"{statistics.median(exposed) if exposed else 0:g}; {sum(1 for e in every if e.exposed >= 8):,} "
                  f"overwrite 8 units or more; {sum(len(e.overwrites) for e in every):,} multi-unit writes "
                  f"overwrite earlier data, in {sum(1 for e in every if e.overwrites):,} epochs")
            for n in a.states or [600]:
                for later in a.later or [LATER_DRAWN, FIRST_DRAWN]:
                    states, drawn = budget(rec, n, a.first, a.batch, later)
                    c = coverage(rec.records, rec.first, rec.last, states, DEFAULT_UNIT)
                    done = covered(rec.records, rec.first, rec.last, states, DEFAULT_UNIT)
                    print(f"  {n:,} states, later batches {later:.0%} at random: {drawn:,} drawn at random (none "
                          f"failing rules out 1 in {bound(0, drawn).rules_out_one_in:,}); epochs covered "
                          f"{c.epochs_covered:,} of {c.epochs:,}, write-backs "
                          f"{sum(1 for e in back if e.start in done.epochs):,} of {len(back):,} (those of 8 units or "
                          f"more: {sum(1 for e in back if e.exposed >= 8 and e.start in done.epochs):,}), overwriting "
                          f"writes torn {c.overwrites_torn:,} of {c.overwrites:,}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
