"""When would a stored race have ended, had it been run another way? Its stored slices replayed round by round.

Reads stored raced runs (the results database, read only) and takes the race's decision after every round with the
current judge (analysis/race.py, at the race's level), as the engine's race takes it: where it would be settled,
where its early stop (analysis/margin.py `cannot_settle`) would fire, and where its time budget would end it; each
at the seconds from the run's first stand-up to the end of that round. Ways to weigh:
- `--copy-contends`: an A/A copy read as a second contender, as the race read it before copies became checks;
- `--min-rounds 4,6`: the rounds before the early stop projects (`margin.MIN_ROUNDS`);
- `--blocks N`: only the first N blocks of each configuration kept (the baseline's copies with their block), its
  stand-up and every round's time shrunk in the share of slices kept: what a race of fewer blocks would have read
  (its slices are the stored ones, so the machine's moments are the same);
- `--budget S`: another time budget (stand-up included; default: the run's own).
A configuration that the replay lets go (its place known) loses its later slices and their time, as the race would
have spent them on the others; one the stored race let go earlier than the replay would is missing from the rounds
after (its place no longer in doubt there). Pure reading: seconds.

    .venv/bin/python benchmarks/race_replay.py [--db /var/tmp/pickfs/results.db] [--copy-contends] [--min-rounds 4,6]
        [--blocks 3] [--budget 330] RUN_ID ...
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path
from unittest import mock

from pickfs.analysis import margin
from pickfs.analysis.race import Roles, judge, measured_s, race_roles, race_target
from pickfs.analysis.run import analyse
from pickfs.analysis.views import WorkloadView, entrant, race_rows_series
from pickfs.engine.race import baseline_copies, rotation
from pickfs.engine.schedule import SIDE_BY_SIDE_BUDGET
from pickfs.model import Method
from pickfs.stats.decision import RACE_ALPHA
from pickfs.stats.paired import Obs
from pickfs.store.results import ResultStore


@dataclass(frozen=True)
class Ending:
    run: str
    rounds: int  # rounds measured when it ends
    seconds: float  # from the first stand-up to the end of that round
    why: str  # settled, cannot settle, budget, end of the stored slices
    answer: str | None
    standup_s: float


def copy_contends(roles: Roles) -> Roles:
    """The roles as the race read them before a copy became a check: each copy a candidate right after its
    original (the same preference, later in the plan)."""
    cands = list(roles.candidates)
    for copy, original in roles.copies:
        if original in cands:
            cands.insert(cands.index(original) + 1, copy)
    return replace(roles, candidates=tuple(cands), others=tuple(n for n in roles.others if n not in cands), copies=())


def kept_blocks(series: dict[str, list[Obs]], copies: dict[str, int], blocks: int | None) -> dict[str, list[Obs]]:
    """Each configuration's slices of its first `blocks` blocks (an image's block: its number over its copies)."""
    if blocks is None:
        return series
    return {n: [o for o in obs if o.block // copies.get(n, 1) < blocks] for n, obs in series.items()}


def replay(view: WorkloadView, method: Method, roles: Roles, blocks: int | None, budget: float | None,
           t0: float) -> Ending:
    rows = [r for r in view.rows if r.observations]
    full = race_rows_series(rows)
    images = {n: len({o.block for o in obs}) for n, obs in full.items()}
    lead = baseline_copies(len(full) - 1, method.slices.baseline_copies)
    copies = {n: lead if n == view.baseline else 1 for n in full}
    made = min(k // copies[n] for n, k in images.items())  # blocks stood up before any the race added
    kept = kept_blocks(full, copies, blocks)
    share = (blocks / made) if blocks is not None and blocks < made else 1.0
    first = min(o.t for obs in full.values() for o in obs) - 0.5
    standup = (first - t0) * share
    rounds = sorted({o.round or 0 for obs in full.values() for o in obs})
    ends = {r: max(o.t for obs in full.values() for o in obs if o.round == r) + 0.5 for r in rounds}
    counts = {r: sum(1 for obs in full.values() for o in obs if o.round == r) for r in rounds}
    kept_counts = {r: sum(1 for obs in kept.values() for o in obs if o.round == r) for r in rounds}
    budget_s = budget if budget is not None else (method.max_seconds or SIDE_BY_SIDE_BUDGET)
    clock, prev_end, answer = standup, first, None
    gone: dict[str, int] = {}  # configurations the replay let go, from the round after
    for i, r in enumerate(rounds, 1):
        kept = {n: [o for o in obs if n not in gone or (o.round or 0) <= gone[n]] for n, obs in kept.items()}
        kept_counts[r] = sum(1 for obs in kept.values() for o in obs if o.round == r)
        round_s = (ends[r] - prev_end) * kept_counts[r] / max(counts[r], 1)
        clock += round_s
        prev_end = ends[r]
        upto = {n: [o for o in obs if (o.round or 0) <= r] for n, obs in kept.items()}
        judged = judge({n: v for n, v in upto.items() if v}, roles, method, RACE_ALPHA)
        if judged is None:
            continue
        f, d = judged
        answer = d.answer
        if i >= 3:
            gone.update({n: r for n in kept if n not in rotation(d, roles) and n not in gone})
        if i >= 3 and d.done:
            return Ending(view.label, i, clock, "settled", answer, standup)
        left = budget_s - clock
        if i >= 3 and margin.cannot_settle(f, d, roles.baseline, method.margin, race_target(method), measured_s(upto),
                                           left, i, RACE_ALPHA) is not None:
            return Ending(view.label, i, clock, "cannot settle", answer, standup)
        if clock + round_s > budget_s:
            return Ending(view.label, i, clock, "budget", answer, standup)
    return Ending(view.label, len(rounds), clock, "end of the stored slices", answer, standup)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--db", type=Path, default=Path("/var/tmp/pickfs/results.db"))
    ap.add_argument("--copy-contends", action="store_true")
    ap.add_argument("--min-rounds", default=str(margin.MIN_ROUNDS))
    ap.add_argument("--blocks", type=int)
    ap.add_argument("--budget", type=float)
    args = ap.parse_args()
    store = ResultStore.read_only(args.db)
    for mr in (int(x) for x in args.min_rounds.split(",")):
        print(f"early stop from round {mr}{', copies contend' if args.copy_contends else ''}"
              f"{f', {args.blocks} blocks' if args.blocks else ''}{f', budget {args.budget:.0f} s' if args.budget else ''}:")
        with mock.patch.object(margin, "MIN_ROUNDS", mr):
            for run in args.runs:
                record = store.load(run)
                a = analyse(record)
                t0 = min(t.started for t in record.trials)
                for view in a.views:
                    if view.race is None or view.baseline is None:
                        continue
                    roles = race_roles([entrant(r, final=False) for r in view.rows if r.observations], view.baseline)
                    if args.copy_contends:
                        roles = copy_contends(roles)
                    e = replay(view, a.plan.method, roles, args.blocks, args.budget, t0)
                    print(f"  {run} {e.run}: {e.why} after round {e.rounds} at {e.seconds:.0f} s "
                          f"(stand-up {e.standup_s:.0f} s), preferring {e.answer}")


if __name__ == "__main__":
    main()
