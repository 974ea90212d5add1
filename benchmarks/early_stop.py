"""How early may a race stop when it cannot settle? The early stop's hopeful reading weighed on simulated races.

A race stops early (analysis/margin.py `cannot_settle`) when every comparison still open would need, at its most
hopeful reading, more than twice the budget left; the hopeful reading takes the true difference some standard
errors further from the margin's edge than the estimate (`HOPEFUL_SE`). This simulates races (the unit tests'
simulated machine: images, slices, a wandering and drifting speed) of a few truths at a 5% margin, each measured
for a whole budget of rounds, and replays each round by round as the race reads it: where the stop would fire
for each hopeful reading, how many races it stops that cannot settle within the budget, how many it stops that
would have settled in it (the cost), and the rounds it saves. Pure computation: no root, no disk.

    .venv/bin/python benchmarks/early_stop.py [--seeds 30] [--rounds 24] [--readings 1,0.5,0]
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pickfs.analysis import margin  # noqa: E402
from pickfs.stats.decision import RACE_ALPHA, decide  # noqa: E402
from pickfs.stats.weather import fit  # noqa: E402
from tests.unit.test_race import simulate  # noqa: E402

MARGIN = 0.05
COPY = "copy"  # the A/A copy of the baseline
TRUTHS = {  # each a race: its configurations' true effects (log scale) against the baseline, "base"
    "A/A plan, xfs +10%": {"base": 0.0, "copy": 0.0, "xfs": math.log(1.10)},
    "A/A plan, xfs +7%": {"base": 0.0, "copy": 0.0, "xfs": math.log(1.07)},
    "two, xfs +12%": {"base": 0.0, "xfs": math.log(1.12)},
}


@dataclass
class Tally:
    settled: int = 0
    stopped: int = 0
    stopped_would_settle: int = 0
    rounds_saved: int = 0


def replay(series: dict, names: list[str], rounds: int) -> tuple[int | None, int | None]:
    """(the round the race settles at, the round the early stop fires at) on these slices; None: never. The A/A
    copy is a check, decided as the race decides a non-candidate, never a contender."""
    stop_at = None
    candidates = [n for n in names if n != COPY]
    checks = [n for n in names if n == COPY]
    for r in range(3, rounds):
        upto = {k: [o for o in v if (o.round or 0) < r] for k, v in series.items()}
        f = fit(upto, rerun_sd=0.01, rerun_df=25)
        if f is None:
            continue
        d = decide(f, candidates, checks, "base", MARGIN, 0.1, RACE_ALPHA)
        if d.done:
            return r, stop_at
        left = (rounds - r) / r  # the budget left, in units of the time measured so far
        if stop_at is None and margin.cannot_settle(f, d, "base", MARGIN, 0.1, 1.0, left, r, RACE_ALPHA):
            stop_at = r
    return None, stop_at


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=24, help="the budget, in rounds")
    ap.add_argument("--readings", default="1,0.5,0", help="HOPEFUL_SE values to weigh")
    ap.add_argument("--min-rounds", default=str(margin.MIN_ROUNDS), help="MIN_ROUNDS values to weigh")
    args = ap.parse_args()
    weighed = [(float(x), int(m)) for m in args.min_rounds.split(",") for x in args.readings.split(",")]
    for label, truth in TRUTHS.items():
        print(f"{label} ({args.seeds} races of {args.rounds} rounds, a {MARGIN:.0%} margin):")
        for reading, first in weighed:
            t = Tally()
            with mock.patch.object(margin, "HOPEFUL_SE", reading), mock.patch.object(margin, "MIN_ROUNDS", first):
                for seed in range(args.seeds):
                    s = simulate(seed, truth, blocks=3, base_copies=2, rounds=args.rounds, image_sd=0.02,
                                 slice_sd=0.05, drift=0.05)
                    settle_at, stop_at = replay(s, list(truth), args.rounds)
                    t.settled += settle_at is not None
                    if stop_at is not None:
                        t.stopped += 1
                        t.stopped_would_settle += settle_at is not None
                        t.rounds_saved += args.rounds - stop_at if settle_at is None else 0
            print(f"  hopeful reading {reading:g} standard errors, projecting from round {first}: {t.settled} settle within the budget; the stop "
                  f"fires in {t.stopped}, {t.stopped_would_settle} of them a race that would have settled; "
                  f"{t.rounds_saved} rounds saved")


if __name__ == "__main__":
    main()
