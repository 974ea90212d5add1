"""Is configuration A different from the baseline B? (pure)

Throughput-like figures are positive and multiplicative, so the comparison works on their
logarithms: the ratio of geometric means, with a Student-t interval whose degrees of freedom
are the conservative min(n_a, n_b) - 1 rather than Welch-Satterthwaite's. On this kind of data
(few runs, a disk that jumps between two speeds) that keeps false alarms under the nominal
rate, where a percentile bootstrap of the ratio of means raised them to 10-12% with 5 runs
(benchmarks/aa_calibration.py measures it on real runs). Holm's method then corrects for
comparing many configurations with one baseline.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats as sps

ALPHA = 0.05


@dataclass(frozen=True)
class Comparison:
    ratio: float  # geometric mean of a / geometric mean of b
    ci_low: float
    ci_high: float
    p: float  # unadjusted, two-sided
    p_adjusted: float = math.nan  # after Holm's correction across the comparisons made together
    significant: bool = False


def compare(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> Comparison | None:
    """A against baseline b; None when either has fewer than two positive values."""
    la = [math.log(v) for v in a if v > 0]
    lb = [math.log(v) for v in b if v > 0]
    if len(la) < 2 or len(lb) < 2:
        return None
    diff = statistics.fmean(la) - statistics.fmean(lb)
    se = math.sqrt(statistics.variance(la) / len(la) + statistics.variance(lb) / len(lb))
    df = min(len(la), len(lb)) - 1
    if se == 0:
        p = 1.0 if diff == 0 else 0.0
        return Comparison(math.exp(diff), math.exp(diff), math.exp(diff), p)
    t = diff / se
    p = float(2 * sps.t.sf(abs(t), df))
    half = float(sps.t.ppf(0.5 + level / 2, df)) * se
    return Comparison(math.exp(diff), math.exp(diff - half), math.exp(diff + half), p)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def compare_all(groups: dict[str, Sequence[float]], baseline: str, alpha: float = ALPHA) -> dict[str, Comparison]:
    """Every group against the baseline, Holm-corrected together."""
    raw = {name: compare(vals, groups[baseline]) for name, vals in groups.items() if name != baseline}
    tested = {k: c for k, c in raw.items() if c is not None}
    adjusted = holm([c.p for c in tested.values()])
    out = {}
    for (name, c), p_adj in zip(tested.items(), adjusted):
        out[name] = Comparison(c.ratio, c.ci_low, c.ci_high, c.p, p_adj, p_adj < alpha)
    return out
