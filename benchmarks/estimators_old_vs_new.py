"""Stored real runs re-estimated two ways: the earlier paired estimator (each slice against the
baseline's slices around it) and the race's (levels per image, the weather from every
configuration). Prints, per comparison with the baseline, each estimator's ratio and 95% half-width
(per comparison, so that the two are alike), and the race's decision.

    .venv/bin/python benchmarks/estimators_old_vs_new.py                     # the runs in tests/data
    .venv/bin/python benchmarks/estimators_old_vs_new.py --results R.db [RUN_ID ...]
"""

from __future__ import annotations

import argparse
import gzip
import math
import shutil
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from pickfs.model import plan_from_dict
from pickfs.analysis.run import build_views
from pickfs.analysis.views import comparisons_for, race_of
from pickfs.stats.decision import contrast
from pickfs.store import ResultStore

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "real-runs.db.gz"


def widths(store: ResultStore, run_id: str) -> list[str]:
    record = store.load(run_id)
    plan = dict(record.plan)
    plan["method"] = {**plan["method"], "race": False}
    out = []
    for view in build_views(replace(record, plan=plan)):
        rows = [r for r in view.rows if r.observations]
        if not view.baseline or len(rows) < 2:
            continue
        method = plan_from_dict(record.plan).method
        old = comparisons_for(list(view.rows), view.baseline)
        raced = race_of(list(view.rows), view.baseline, method)
        if raced is None:
            continue
        fit = raced[1].fit
        speed = rows[0].primary.metric.higher_is_better
        out.append(f"{run_id} {view.label} (baseline {view.baseline}, {raced[1].rounds} rounds; ratios of speed)")
        out.append(f"  {'configuration':<18} {'old ratio':>9} {'old ±':>7} {'new ratio':>9} {'new ±':>7}")
        olds, news = [], []
        for r in rows:
            name = r.cell.config.name
            if name == view.baseline:
                continue
            o = old.get(name)
            c = contrast(fit, name, view.baseline)
            o_hw = (o.ci_high / o.ratio - 1) if o else float("nan")
            n_hw = float("nan")
            if c is not None:
                lo, hi = c.interval(0.95)
                n_hw = math.expm1((hi - lo) / 2)
            olds.append(o_hw)
            news.append(n_hw)
            old_ratio = (o.ratio if speed else 1 / o.ratio) if o else float("nan")
            out.append(f"  {name:<18} {old_ratio:>9.3f} {o_hw:>7.1%} "
                       f"{math.exp(c.est) if c else float('nan'):>9.3f} {n_hw:>7.1%}")
        out.append(f"  median half-width: old {statistics.median(olds):.1%}, new {statistics.median(news):.1%}")
        d = raced[1].decision
        out.append(f"  race decision: {'settled' if d.settled else 'undecided'}, answer {d.answer}, "
                   f"undecided {', '.join(d.undecided) or '-'}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path)
    ap.add_argument("runs", nargs="*")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = a.results
        if path is None:
            path = Path(tmp) / "real.db"
            with gzip.open(DATA) as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
        store = ResultStore(path)
        runs = a.runs or [r.id for r in store.list_runs()]
        for run_id in runs:
            print("\n".join(widths(store, run_id)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
