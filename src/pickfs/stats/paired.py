"""Paired estimates in time (pure): each configuration against the baseline measured nearest to it.

On a machine whose disk changes speed every 10-30 s, two configurations measured minutes apart
compare the weather, not the storage. The side-by-side method measures every configuration in
short slices that take turns; this module turns those slices into ratios:

- Each slice of configuration X is paired with the baseline's level at the same moment: the
  baseline's log-throughput interpolated linearly in time between its slices just before and just
  after (within the same block; flat beyond its first and last slice). The difference of logs,
  d = log x - log b(t), is one paired observation of log(ratio).
- Blocks are repetitions of the whole side-by-side measurement on freshly made filesystems.
  The estimate is the mean of d over all slices; its variance has two components, estimated as
  in a one-way random-effects model: between blocks (one mkfs against the next) and within blocks
  (slice to slice). The between-block term enters only when an F test finds the blocks different
  at the 25% level (the customary "sometimes pool" rule); otherwise the blocks are pooled. Neighbouring slices can share a baseline slice, so the within-block variance
  is the long-run variance gamma0 + 2 max(gamma1, 0) of the time-ordered residuals, not gamma0.
- The interval is Student-t with Satterthwaite's degrees of freedom for the sum of the two
  components; Holm's method corrects p-values for the comparisons made together.

`benchmarks/aa_calibration.py` measures the false-alarm rate of this on real A/A runs.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy import stats as sps

from pickfs.stats.compare import ALPHA, Comparison, holm

POOL_ALPHA = 0.25  # blocks are pooled unless an F test finds them different at this level


def slice_rate(value: float, slice_s: float, sync_s: float) -> float:
    """A rate measured over `slice_s` seconds, spread over the slice and the syncfs that ended it."""
    return value * slice_s / (slice_s + sync_s) if slice_s > 0 else value


def primary_value(metrics: Mapping[str, float], primary: str) -> float | None:
    """A trial's primary figure; for a slice (it has slice_s and syncfs_s), the rate including its syncfs."""
    value = metrics.get(primary)
    if value is None:
        return None
    if "slice_s" in metrics and "syncfs_s" in metrics:
        return slice_rate(value, metrics["slice_s"], metrics["syncfs_s"])
    return value


@dataclass(frozen=True)
class Obs:
    """One slice: its block, the middle of its time window (s) and its value (> 0)."""

    block: int
    t: float
    value: float


@dataclass(frozen=True)
class PairedDiffs:
    """log(x / baseline at the same moment) per slice of x, grouped by block in time order."""

    by_block: dict[int, list[float]]

    @property
    def n(self) -> int:
        return sum(len(v) for v in self.by_block.values())


def _interpolate(times: Sequence[float], logs: Sequence[float], t: float) -> float:
    i = bisect_left(times, t)
    if i == 0:
        return logs[0]
    if i >= len(times):
        return logs[-1]
    t0, t1 = times[i - 1], times[i]
    if t1 == t0:
        return (logs[i - 1] + logs[i]) / 2
    w = (t - t0) / (t1 - t0)
    return logs[i - 1] * (1 - w) + logs[i] * w


def paired_diffs(x: Sequence[Obs], baseline: Sequence[Obs]) -> PairedDiffs:
    """Each positive slice of x against the baseline's level at its moment, in its own block.

    The baseline's level at time t in block k is its block-k mean plus the machine's weather at t;
    the weather is read from every block's baseline slices (each centred on its own block's mean)
    interpolated at t. Blocks that stand side by side thus give the baseline a slice every few
    seconds instead of one per round, and each block keeps its own mkfs."""
    by_block: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for o in baseline:
        if o.value > 0:
            by_block[o.block].append((o.t, math.log(o.value)))
    level = {k: statistics.fmean(v for _, v in pts) for k, pts in by_block.items()}
    weather = sorted((t, v - level[k]) for k, pts in by_block.items() for t, v in pts)
    times, logs = [p[0] for p in weather], [p[1] for p in weather]
    out: dict[int, list[float]] = defaultdict(list)
    for o in sorted(x, key=lambda o: (o.block, o.t)):
        if o.value <= 0 or o.block not in level:
            continue
        out[o.block].append(math.log(o.value) - level[o.block] - _interpolate(times, logs, o.t))
    return PairedDiffs(dict(out))


@dataclass(frozen=True)
class VarianceSplit:
    """The estimate of mean log-ratio, its standard error and degrees of freedom, and where the
    variance comes from: between blocks (fresh filesystems) and within blocks (slice to slice)."""

    mean: float
    se: float
    df: float
    n: int
    blocks: int
    var_between: float  # variance component of one block's mean effect
    var_within: float  # long-run variance of one slice

    @property
    def block_share(self) -> float:
        total = self.var_between + self.var_within
        return self.var_between / total if total > 0 else 0.0


def split_variance(d: PairedDiffs) -> VarianceSplit | None:
    """Mean and standard error of the paired log-ratios; None with too few slices to tell."""
    groups = [v for v in d.by_block.values() if v]
    n, k = sum(len(g) for g in groups), len(groups)
    if n - k < 1:
        return None
    mean = statistics.fmean(x for g in groups for x in g)
    means = [statistics.fmean(g) for g in groups]
    resid = [[x - m for x in g] for g, m in zip(groups, means)]
    dfw = n - k
    g0 = sum(e * e for r in resid for e in r) / dfw
    g1 = sum(r[i] * r[i + 1] for r in resid for i in range(len(r) - 1)) / dfw
    var_w = g0 + 2 * max(g1, 0.0)
    var_b = 0.0
    if k >= 2 and var_w > 0:
        s2 = statistics.variance(means)
        expected = var_w * statistics.fmean(1 / len(g) for g in groups)
        # Pool unless the blocks differ by more than their slices explain (F test at POOL_ALPHA):
        # with two or three blocks, a between-block term estimated from 1-2 degrees of freedom
        # would otherwise widen most intervals by chance alone.
        if sps.f.sf(s2 / expected, k - 1, dfw) < POOL_ALPHA:
            var_b = max(0.0, s2 - expected)
    a = var_w / n
    b = var_b * sum(len(g) ** 2 for g in groups) / n**2
    var = a + b
    if var <= 0:
        return VarianceSplit(mean, 0.0, float(dfw), n, k, var_b, var_w)
    df = var**2 / (a**2 / dfw + (b**2 / (k - 1) if k >= 2 and b > 0 else 0.0))
    return VarianceSplit(mean, math.sqrt(var), df, n, k, var_b, var_w)


@dataclass(frozen=True)
class PairedComparison(Comparison):
    """A Comparison from paired slices, with how many and where the variance came from."""

    n: int = 0
    blocks: int = 0
    df: float = 0.0
    block_share: float = 0.0

    @property
    def half_width(self) -> float:
        """The interval's half-width as a share of the ratio (on the log scale: symmetric)."""
        return self.ci_high / self.ratio - 1 if self.ratio > 0 else math.inf


def paired_compare(x: Sequence[Obs], baseline: Sequence[Obs], level: float = 0.95) -> PairedComparison | None:
    split = split_variance(paired_diffs(x, baseline))
    if split is None:
        return None
    r = math.exp(split.mean)
    if split.se == 0:
        p = 1.0 if split.mean == 0 else 0.0
        return PairedComparison(r, r, r, p, n=split.n, blocks=split.blocks, df=split.df)
    t = split.mean / split.se
    p = float(2 * sps.t.sf(abs(t), split.df))
    half = float(sps.t.ppf(0.5 + level / 2, split.df)) * split.se
    return PairedComparison(r, math.exp(split.mean - half), math.exp(split.mean + half), p, n=split.n,
                            blocks=split.blocks, df=split.df, block_share=split.block_share)


def paired_compare_all(series: Mapping[str, Sequence[Obs]], baseline: str,
                       alpha: float = ALPHA) -> dict[str, PairedComparison]:
    """Every configuration against the baseline, Holm-corrected together."""
    raw = {name: paired_compare(obs, series[baseline]) for name, obs in series.items() if name != baseline}
    tested = {k: c for k, c in raw.items() if c is not None}
    adjusted = holm([c.p for c in tested.values()])
    return {name: PairedComparison(c.ratio, c.ci_low, c.ci_high, c.p, p_adj, p_adj < alpha, c.n, c.blocks, c.df,
                                   c.block_share)
            for (name, c), p_adj in zip(tested.items(), adjusted)}


def settled(comparisons: Mapping[str, Comparison], expected: int, target: float) -> bool:
    """Stopping rule: every expected comparison exists and its interval is within +/- target."""
    if len(comparisons) < expected:
        return False
    return all(isinstance(c, PairedComparison) and c.half_width <= target for c in comparisons.values())


def resolution(comparisons: Mapping[str, Comparison]) -> tuple[float, float, float] | None:
    """The smallest ratio this run could tell from 1: median, lowest and highest half-width."""
    widths = sorted(c.half_width for c in comparisons.values() if isinstance(c, PairedComparison))
    if not widths:
        return None
    return statistics.median(widths), widths[0], widths[-1]
