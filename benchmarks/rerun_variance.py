"""What moves a comparison from one run to the next, and how much of it no run can see in itself.

Reads stored raced runs (the results database; read only) and, for every comparison against the
baseline measured in two runs or more, fits each run with the weather model ALONE (no run-to-run
term: `rerun_sd` 0) and compares the spread of the estimates across runs with what each run's own
variance allows:

- the run-to-run variance of a comparison, by the method of moments (DerSimonian and Laird):
  tau^2 = (Q - (k - 1)) / (S1 - S2 / S1), Q the weighted sum of squares about the weighted mean,
  pooled over every comparison (numerators and denominators summed); a configuration's own
  term, the plan's `rerun_sd`, is sqrt(tau^2 / 2) (a comparison has two levels);
- per kind (fsfacts `rerun_floor`: btrfs, a setup that stops the cache flushes, every other), the same
  pooled over the kind's comparisons: what a kind's own term is measured from;
- the check: every pair of runs, each comparison's two estimates against their combined 95%
  interval, without the term, with one term for all (`--rerun-sd`, default the estimate) and as pickfs
  carries it (the plan's rerun_sd, a kind's own where larger), and the A/A copies (a configuration of
  the baseline's type and settings under another name) called different.

And what the stored data can say about the suspects:
- company: a comparison's estimates grouped by how many configurations stood beside it;
- the moment an image was made: each image's level against its configuration's mean, by its place
  in the order its block was stood up (its warm-up's start), pooled over runs;
- time: each configuration's residuals in the second half of its slices less the first half
  (a drift of its own beyond the shared weather), against what its slices' noise allows;
- the spread from one mkfs to the next: each configuration's own spread of image levels against
  the pooled figure the model uses (an F ratio per configuration).

    .venv/bin/python benchmarks/rerun_variance.py [--db /var/tmp/pickfs/results.db] [--since 2026-11-27T12:00] [RUN_ID ...]
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from scipy import stats as sps

from pickfs.analysis.run import build_views
from pickfs.analysis.views import WorkloadView, race_rows_series
from pickfs.fsfacts import in_memory, is_reference, rerun_floor
from pickfs.model import Method, RunRecord, plan_from_dict
from pickfs.stats.decision import contrast
from pickfs.stats.weather import Fit, fit
from pickfs.store import ResultStore

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    run: str
    workload: str
    config: str
    baseline: str
    est: float  # log(config / baseline)
    var: float  # its variance within the run (the weather model alone)
    company: int  # configurations measured beside it
    aa: bool  # the same filesystem and settings as the baseline, under another name
    kind: str  # what its run-to-run term is by kind (fsfacts `rerun_floor`'s source, or "every other")
    carried: float  # the run-to-run variance of the comparison as pickfs carries it (both levels' terms)


def _same_settings(view: WorkloadView, a: str, b: str) -> bool:
    ca = next(r.cell.config for r in view.rows if r.cell.config.name == a)
    cb = next(r.cell.config for r in view.rows if r.cell.config.name == b)
    return bool(replace(ca, name=cb.name, description=cb.description) == cb)


def _fit(view: WorkloadView, rerun_sd: float = 0.0) -> Fit | None:
    series = race_rows_series(list(view.rows))
    rows = [r for r in view.rows if r.cell.config.name in series]
    refs = {r.cell.config.name for r in rows if is_reference(r.cell.config.fstype)}
    mem = {r.cell.config.name for r in rows if in_memory(r.cell.config.fstype)}
    return fit(series, refs, mem, rerun_sd)


def _term(view: WorkloadView, name: str) -> tuple[str, float]:
    """A configuration's kind and run-to-run standard deviation as pickfs carries it at the default rerun_sd."""
    c = next(r.cell.config for r in view.rows if r.cell.config.name == name)
    floor = rerun_floor(c.fstype, c.mount_options)
    common = Method().rerun_sd
    return (floor.source, max(floor.sd, common)) if floor is not None else ("every other", common)


def estimates(record: RunRecord) -> list[tuple[WorkloadView, Fit, list[Estimate]]]:
    out = []
    for view in build_views(record):
        if view.race is None or view.baseline is None:
            continue
        f = _fit(view)
        if f is None:
            continue
        company = len(f.spreads)
        found = []
        for name in f.spreads:
            c = contrast(f, name, view.baseline) if name != view.baseline else None
            if c is not None:
                kind, sd = _term(view, name)
                base_sd = _term(view, view.baseline)[1]
                found.append(Estimate(record.id, view.name, name, view.baseline, c.est, c.se**2, company,
                                      _same_settings(view, name, view.baseline), kind, sd * sd + base_sd**2))
        out.append((view, f, found))
    return out


def moments(groups: list[list[Estimate]]) -> tuple[float, float, float]:
    """(tau^2 per comparison, its degrees of freedom, Q's p-value) pooled over groups of one comparison's runs."""
    num = den = 0.0
    q_all = df_all = 0.0
    for g in groups:
        w = [1 / e.var for e in g]
        s1, s2 = sum(w), sum(x * x for x in w)
        mu = sum(x * e.est for x, e in zip(w, g)) / s1
        q = sum(x * (e.est - mu) ** 2 for x, e in zip(w, g))
        num += q - (len(g) - 1)
        den += s1 - s2 / s1
        q_all += q
        df_all += len(g) - 1
    tau2 = max(num / den, 0.0) if den > 0 else 0.0
    return tau2, df_all, float(sps.chi2.sf(q_all, df_all)) if df_all else 1.0


def pairs_outside(groups: list[list[Estimate]], tau2: float | None) -> tuple[int, int]:
    """Pairs of runs whose two estimates differ by more than their combined 95% interval, each with `tau2` added
    (None: each with the term pickfs carries for it)."""
    outside = total = 0
    for g in groups:
        for a, b in itertools.combinations(g, 2):
            total += 1
            extra = a.carried + b.carried if tau2 is None else 2 * tau2
            outside += abs(a.est - b.est) > Z95 * math.sqrt(a.var + b.var + extra)
    return outside, total


def by_kind(groups: list[list[Estimate]]) -> list[str]:
    """The run-to-run term pooled over each kind's comparisons, beside what pickfs carries for it."""
    kinds: dict[str, list[list[Estimate]]] = defaultdict(list)
    for g in groups:
        kinds[g[0].kind].append(g)
    out = []
    for kind, gs in sorted(kinds.items()):
        tau2, df, p = moments(gs)
        out.append(f"    by kind, {kind}: {len(gs)} comparisons, tau {math.sqrt(tau2):.2%} ({int(df)} degrees of "
                   f"freedom, Q p={p:.2g}); pickfs carries {math.sqrt(gs[0][0].carried):.2%}")
    return out


def order_effect(runs: list[tuple[RunRecord, WorkloadView, Fit]]) -> list[str]:
    """Each image's level against its configuration's mean, by its place in the order of its block's warm-ups."""
    xs, ys = [], []
    for record, view, f in runs:
        index = {r.cell.index: r.cell.config.name for r in view.rows}
        warm = sorted((t.started, index[t.cell_index], t.block) for t in record.trials
                      if t.phase == "warmup" and t.cell_index in index)
        first_seen: dict[tuple[str, int], float] = {}
        for started, name, block in warm:
            first_seen.setdefault((name, block), started)
        # each image placed by its first warm-up's start among the run's stand-ups
        ordered = sorted(first_seen.items(), key=lambda kv: kv[1])
        for rank, ((name, image), _) in enumerate(ordered):
            levels = f.images_of(name)
            if len(levels) < 2 or (name, image) not in f.levels:
                continue
            xs.append(rank / max(len(ordered) - 1, 1))
            ys.append(f.levels[(name, image)] - statistics.fmean(levels))
    if len(xs) < 3:
        return ["build order: too few images"]
    res = sps.linregress(xs, ys)
    first = [y for x, y in zip(xs, ys) if x < 1 / 3]
    last = [y for x, y in zip(xs, ys) if x > 2 / 3]
    return [f"build order: {len(xs)} images; level against its configuration's mean by its place in the stand-up "
            f"order (0 first, 1 last): slope {res.slope:+.2%} (se {res.stderr:.2%}, p={res.pvalue:.2g}); first third "
            f"{statistics.fmean(first):+.2%}, last third {statistics.fmean(last):+.2%}"]


def drift(runs: list[tuple[RunRecord, WorkloadView, Fit]]) -> list[str]:
    """Each configuration's residuals (slice less its image's level less the weather), second half less first."""
    zs = []
    lines = []
    for _, view, f in runs:
        weather = dict(f.weather)
        series = race_rows_series(list(view.rows))
        for name, obs in series.items():
            pts = sorted((o.t, math.log(o.value) - f.levels[(name, o.block)] - weather.get(o.t, 0.0))
                         for o in obs if o.value > 0 and (name, o.block) in f.levels)
            if len(pts) < 8:
                continue
            half = len(pts) // 2
            a, b = [y for _, y in pts[:half]], [y for _, y in pts[half:]]
            d = statistics.fmean(b) - statistics.fmean(a)
            se = math.sqrt(statistics.variance(a) / len(a) + statistics.variance(b) / len(b))
            if se > 0:
                zs.append(d / se)
    if zs:
        chi = sum(z * z for z in zs)
        lines.append(f"drift of its own: {len(zs)} configuration-runs; second half less first in standard errors: "
                     f"sd {statistics.pstdev(zs):.2f} (1 if none), sum of squares {chi:.0f} on {len(zs)} "
                     f"(p={sps.chi2.sf(chi, len(zs)):.2g})")
    return lines


def mkfs_spread(runs: list[tuple[RunRecord, WorkloadView, Fit]]) -> list[str]:
    ratios = []
    for _, _, f in runs:
        for name, s in f.spreads.items():
            if s.own_sd is not None and f.image_sd > 0 and s.images >= 3:
                ratios.append((name, s.images, s.own_sd**2 / (f.image_sd**2 + 1e-12)))
    if not ratios:
        return ["mkfs spread: too few images"]
    by: dict[str, list[float]] = defaultdict(list)
    for name, _, r in ratios:
        by[name].append(r)
    return ["mkfs spread: own image variance over the pooled mkfs variance (1: as the model pools it), median per "
            "configuration: " + ", ".join(f"{n} {statistics.median(v):.1f} ({len(v)})" for n, v in sorted(by.items()))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", help="run ids (default: every raced run since --since)")
    ap.add_argument("--db", type=Path, default=Path(os.environ.get("PICKFS_RESULTS", "/var/tmp/pickfs/results.db")))
    ap.add_argument("--since", help="ISO time: only runs created after it")
    ap.add_argument("--workload", default="sqlite-tpcb")
    ap.add_argument("--rerun-sd", type=float, help="the check with this term (default: the estimate)")
    args = ap.parse_args()
    store = ResultStore(args.db)
    since = datetime.fromisoformat(args.since).timestamp() if args.since else 0.0
    ids = args.runs or [r.id for r in store.list_runs() if r.created >= since and r.status in ("finished", "done",
                                                                                                   "complete")]
    kept: list[tuple[RunRecord, WorkloadView, Fit]] = []
    by_key: dict[tuple[str, str, str], list[Estimate]] = defaultdict(list)
    for run_id in ids:
        record = store.load(run_id)
        plan = plan_from_dict(record.plan)
        if not plan.method.race:
            continue
        for view, f, found in estimates(record):
            if view.name != args.workload:
                continue
            kept.append((record, view, f))
            names = ", ".join(sorted(f.spreads))
            print(f"{record.id} ({datetime.fromtimestamp(record.created):%H:%M}, {len(f.spreads)} configurations: "
                  f"{names}); mkfs sd {f.image_sd:.2%}, slice sd {f.slice_sd:.2%}")
            for e in found:
                by_key[(e.workload, e.config, e.baseline)].append(e)
                print(f"    {e.config:>22} {math.exp(e.est):.3f}x  se {math.sqrt(e.var):.2%}{'  (A/A)' if e.aa else ''}")
    store.close()
    groups = [g for g in by_key.values() if len(g) >= 2]
    if not groups:
        sys.exit("no comparison was measured in two runs")
    tau2, df, p = moments(groups)
    sd = args.rerun_sd if args.rerun_sd is not None else math.sqrt(tau2 / 2)
    print()
    print(f"{len(kept)} runs, {len(groups)} comparisons measured in two runs or more ({int(df)} degrees of freedom)")
    print(f"spread across runs beyond each run's own variance: Q p={p:.2g}; run-to-run variance of a comparison "
          f"tau = {math.sqrt(tau2):.2%} (log scale); per configuration (rerun_sd) {math.sqrt(tau2 / 2):.2%}")
    for name, g in sorted(((k[1], g) for k, g in by_key.items() if len(g) >= 2), key=lambda x: x[0]):
        one_tau2, _, one_p = moments([g])
        ests = ", ".join(f"{math.exp(e.est):.3f}" for e in g)
        print(f"    {name:>22}: {len(g)} runs: {ests}; tau {math.sqrt(one_tau2):.2%} (Q p={one_p:.2g})")
    for line in by_kind(groups):
        print(line)
    before = pairs_outside(groups, 0.0)
    after = pairs_outside(groups, 2 * sd * sd)  # the term per comparison is 2 rerun_sd^2
    carried = pairs_outside(groups, None)
    for label, (out, total) in (("without the term", before), (f"with rerun_sd {sd:.2%}", after),
                                ("as pickfs carries it (a kind's own term where larger)", carried)):
        test = sps.binomtest(out, total, 0.05, alternative="greater") if total else None
        print(f"pairs of runs outside their combined 95% interval {label}: {out} of {total}"
              + (f" (binomial test against 5%: p={test.pvalue:.2g})" if test else ""))
    aa = [e for g in by_key.values() for e in g if e.aa]
    for label, extra in (("without the term", 0.0), (f"with rerun_sd {sd:.2%}", 2 * sd * sd),
                         ("as pickfs carries it", None)):
        called = sum(abs(e.est) > Z95 * math.sqrt(e.var + (e.carried if extra is None else extra)) for e in aa)
        print(f"A/A copies called different (95%, one comparison) {label}: {called} of {len(aa)}")
    company: dict[int, list[Estimate]] = defaultdict(list)
    for g in groups:
        for e in g:
            company[e.company].append(e)
    print()
    print("company: the same comparisons, each against its mean over every run, by the configurations beside it:")
    means = {k: statistics.fmean(e.est for e in g) for k, g in by_key.items() if len(g) >= 2}
    for n, es in sorted(company.items()):
        dev = [e.est - means[(e.workload, e.config, e.baseline)] for e in es]
        se = math.sqrt(sum(e.var for e in es)) / len(es)
        print(f"    {n:>2} configurations: {len(es)} estimates, mean deviation {statistics.fmean(dev):+.2%} (se {se:.2%})")
    for line in [*order_effect(kept), *drift(kept), *mkfs_spread(kept)]:
        print(line)


if __name__ == "__main__":
    main()
