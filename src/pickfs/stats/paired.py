"""Paired estimates in time (pure): each configuration against the baseline's level at the moment it ran.

On a machine whose disk changes speed every 10-30 s, two configurations measured minutes apart
compare the weather, not the storage. The side-by-side method measures every configuration in
short slices that take turns; this module turns those slices into ratios. It is the estimator of
runs measured side by side without the race (`--no-race`) and of their stopping rule; the race
has its own model (stats/weather.py, stats/decision.py).

- The baseline's level: each block (a repetition on freshly made filesystems) has its own level,
  the mean of its log-throughputs less the weather at their moments, the weather read from the
  other blocks' slices (each centred on its block's plain mean); the baseline's level is the mean
  of its blocks' levels. One block: its plain mean (`baseline_levels`).
- The weather at moment t: every block's baseline slices, each centred on its own block's level,
  in time order, interpolated linearly at t (flat beyond the first and the last).
- Each positive slice of configuration X gives one paired observation of log(ratio):
  d = log x - level - weather(t). A slice that measured nothing (a stall) is left out and counted.
- The estimate is the mean of d. Its variance:
  - when every block has a slice in the same rounds (at least two such rounds, holding at least
    half of the slices), a two-way random-effects model of blocks x rounds on the cells' means:
    Var(mean) = s2_b/K + s2_r/R + s2_e/(KR), a component entering only when its mean square
    exceeds the error's (else taken as zero), Satterthwaite's degrees of freedom;
  - otherwise a one-way model by block: the within-block variance is the long-run variance
    gamma0 + 2 max(gamma1, 0) of the time-ordered residuals (neighbouring slices share baseline
    slices), and the between-block component (the spread of the blocks' means less the
    within-block part) enters when it is above zero, with Satterthwaite's degrees of freedom.
  To either, the variance of the baseline's level is added (the spread of its blocks' levels over
  their number, K - 1 degrees of freedom), Satterthwaite's degrees of freedom for the sum.
- The interval is Student-t with those degrees of freedom; the p-value is two-sided; Holm's
  method adjusts the p-values of the comparisons made together (`paired_compare_all`).

`benchmarks/aa_calibration.py` measures the false-alarm rate on real A/A runs (with --no-race, of this
estimator); `benchmarks/estimators_old_vs_new.py` sets it beside the race's on the stored runs.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from scipy import stats as sps

from pickfs.stats.compare import ALPHA, Comparison, holm


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
    """One slice: its block, the middle of its time window (s), its value (> 0) and its round."""

    block: int
    t: float
    value: float
    round: int | None = None


@dataclass(frozen=True)
class PairedDiffs:
    """log(x / baseline at the same moment) per slice of x: (block, round, d) in time order."""

    cells: tuple[tuple[int, int | None, float], ...]
    dropped: int = 0  # slices of x with no positive value (a stall): left out, and counted
    # the baseline's level is the mean of its blocks' levels: its variance (their spread / K) and df
    base_var: float = 0.0
    base_df: float = math.inf

    @property
    def by_block(self) -> dict[int, list[float]]:
        out: dict[int, list[float]] = defaultdict(list)
        for block, _, d in self.cells:
            out[block].append(d)
        return dict(out)

    @property
    def n(self) -> int:
        return len(self.cells)


def _interpolate(times: Sequence[float], logs: Sequence[float], t: float) -> float:
    i = bisect_left(times, t)
    if i == 0:
        return logs[0]
    if i >= len(times):
        return logs[-1]
    t0, t1 = times[i - 1], times[i]
    w = (t - t0) / (t1 - t0)
    return logs[i - 1] * (1 - w) + logs[i] * w


def baseline_levels(by_block: Mapping[int, Sequence[tuple[float, float]]]) -> dict[int, float]:
    """Each block's own level of the baseline (log scale), with the weather taken out.

    A block's plain mean carries the weather at the moments its slices happened to run; so each
    block's level is the mean of its slices less the weather at their moments, read from the
    other blocks' slices (centred on their plain means). One block: its plain mean."""
    plain = {k: statistics.fmean(v for _, v in pts) for k, pts in by_block.items() if pts}
    if len(plain) < 2:
        return plain
    out = {}
    for k, pts in by_block.items():
        others = sorted((t, v - plain[j]) for j, o in by_block.items() if j != k for t, v in o)
        times, logs = [p[0] for p in others], [p[1] for p in others]
        out[k] = statistics.fmean(v - _interpolate(times, logs, t) for t, v in pts)
    return out


def paired_diffs(x: Sequence[Obs], baseline: Sequence[Obs]) -> PairedDiffs:
    """Each positive slice of x against the baseline's level at its moment.

    The baseline's level at time t is its level over all its blocks (each block's own mkfs
    averaged out; the spread of the blocks' levels is kept as the variance of that level) plus
    the machine's weather at t, read from every block's baseline slices (each centred on its own
    block's level) and interpolated at t. Blocks that stand side by side thus give the baseline a
    slice every few seconds instead of one per round."""
    by_block: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for o in baseline:
        if o.value > 0:
            by_block[o.block].append((o.t, math.log(o.value)))
    level = baseline_levels(by_block)
    if not level:
        return PairedDiffs(())
    weather = sorted((t, v - level[k]) for k, pts in by_block.items() for t, v in pts)
    times, logs = [p[0] for p in weather], [p[1] for p in weather]
    overall = statistics.fmean(level.values())
    k = len(level)
    base_var = statistics.variance(level.values()) / k if k >= 2 else 0.0
    cells, dropped = [], 0
    for o in sorted(x, key=lambda o: o.t):
        if o.value <= 0:
            dropped += 1
            continue
        cells.append((o.block, o.round, math.log(o.value) - overall - _interpolate(times, logs, o.t)))
    return PairedDiffs(tuple(cells), dropped, base_var, k - 1.0 if k >= 2 else math.inf)


@dataclass(frozen=True)
class VarianceSplit:
    """The estimate of mean log-ratio, its standard error and degrees of freedom, and where the
    variance comes from: between blocks (one mkfs against the next), between rounds (the moment:
    what the baseline's weather did not take out) and slice to slice."""

    mean: float
    se: float
    df: float
    n: int
    blocks: int
    var_between: float  # component of one block's effect
    var_within: float  # one slice, beyond its block's and its round's effects
    var_round: float = 0.0  # component of one round's effect

    def share(self, part: float) -> float:
        total = self.var_between + self.var_round + self.var_within
        return part / total if total > 0 else 0.0

    @property
    def block_share(self) -> float:
        return self.share(self.var_between)

    @property
    def round_share(self) -> float:
        return self.share(self.var_round)


def _satterthwaite(terms: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """(variance, degrees of freedom) of a sum of mean-square terms (coefficient x mean square, df)."""
    var = sum(t for t, _ in terms)
    denom = sum(t * t / df for t, df in terms if df > 0)
    return var, (var * var / denom if denom > 0 else math.inf)


def _complete_table(d: PairedDiffs) -> dict[int, dict[int, float]] | None:
    """round -> block -> d over the rounds in which every block has a slice; None when fewer than
    two such rounds hold at least half of the slices (a resumed run's blocks stood at other times)."""
    table: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for block, rnd, value in d.cells:
        if rnd is None:
            return None
        table[rnd][block].append(value)
    blocks = {b for _, b_map in table.items() for b in b_map}
    complete = {r: {b: statistics.fmean(v) for b, v in row.items()} for r, row in table.items() if set(row) == blocks}
    if len(complete) < 2 or sum(len(row) for row in complete.values()) * 2 < d.n:
        return None
    return complete


def _two_way(table: dict[int, dict[int, float]]) -> VarianceSplit:
    """Blocks x rounds, one slice per cell: Var(mean) = s2_b/K + s2_r/R + s2_e/(KR), each component
    from its mean square (truncated at zero), Satterthwaite's degrees of freedom."""
    rounds = sorted(table)
    blocks = sorted(next(iter(table.values())))
    k, r = len(blocks), len(rounds)
    grid = [[table[rr][b] for b in blocks] for rr in rounds]
    mean = statistics.fmean(v for row in grid for v in row)
    if k == 1:  # rounds are the replicates
        values = [row[0] for row in grid]
        ms_r = statistics.variance(values)
        return VarianceSplit(mean, math.sqrt(ms_r / r), r - 1.0, r, 1, 0.0, 0.0, ms_r)
    block_means = [statistics.fmean(grid[i][j] for i in range(r)) for j in range(k)]
    round_means = [statistics.fmean(row) for row in grid]
    ms_b = r * sum((m - mean) ** 2 for m in block_means) / (k - 1)
    ms_r = k * sum((m - mean) ** 2 for m in round_means) / (r - 1)
    df_e = (k - 1) * (r - 1)
    ss_e = sum((grid[i][j] - block_means[j] - round_means[i] + mean) ** 2 for i in range(r) for j in range(k))
    ms_e = ss_e / df_e
    kr = k * r
    # Var = (max(MS_B, MS_E) + max(MS_R, MS_E) - MS_E) / KR: a component whose mean square does not
    # exceed the error's is taken as zero
    terms, e_coef = [], 1.0
    if ms_b > ms_e:
        terms.append((ms_b / kr, k - 1.0))
        e_coef -= 1
    if ms_r > ms_e:
        terms.append((ms_r / kr, r - 1.0))
        e_coef -= 1
    terms.append((e_coef * ms_e / kr, float(df_e)))
    var, df = _satterthwaite(terms)
    var_b, var_r = max(0.0, (ms_b - ms_e) / r), max(0.0, (ms_r - ms_e) / k)
    return VarianceSplit(mean, math.sqrt(max(var, 0.0)), df, kr, k, var_b, ms_e, var_r)


def _one_way(d: PairedDiffs) -> VarianceSplit | None:
    """Slices grouped by block only (rounds unknown or not shared): a one-way random-effects model,
    the within-block variance with its lag-1 autocovariance (neighbours share baseline slices)."""
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
    if k < 2:
        return VarianceSplit(mean, math.sqrt(var_w / n), float(dfw), n, 1, 0.0, var_w)
    # Var(mean) = c s2_b + s2_w / n with c = sum(n_k^2) / n^2; s2_b estimated by s2 - s2_w h
    s2 = statistics.variance(means)
    c = sum(len(g) ** 2 for g in groups) / n**2
    h = statistics.fmean(1 / len(g) for g in groups)
    var_b = max(0.0, s2 - var_w * h)
    if var_b > 0:
        var, df = _satterthwaite([(c * s2, k - 1.0), ((1 / n - c * h) * var_w, float(dfw))])
    else:
        var, df = var_w / n, float(dfw)
    return VarianceSplit(mean, math.sqrt(max(var, 0.0)), df, n, k, var_b, var_w)


def _with_baseline(split: VarianceSplit | None, d: PairedDiffs) -> VarianceSplit | None:
    """Add the variance of the baseline's level (its blocks' spread / K) to x's, Satterthwaite's df."""
    if split is None or d.base_var <= 0:
        return split
    var, df = _satterthwaite([(split.se**2, split.df), (d.base_var, d.base_df)])
    return replace(split, se=math.sqrt(var), df=df)


def split_variance(d: PairedDiffs) -> VarianceSplit | None:
    """Mean and standard error of the paired log-ratios; None with too few slices to tell.

    Side by side, every block stands in every round, so the slices of a configuration form a
    blocks x rounds table: the two-way random-effects model counts both what one mkfs does
    against the next and what a moment does to all blocks at once (slices of one round share
    the baseline's weather around them). Without such a table, blocks only (one-way)."""
    table = _complete_table(d)
    return _with_baseline(_two_way(table) if table is not None else _one_way(d), d)


@dataclass(frozen=True)
class PairedComparison(Comparison):
    """A Comparison from paired slices, with how many and where the variance came from."""

    n: int = 0
    blocks: int = 0
    df: float = 0.0
    block_share: float = 0.0  # of the variance: one mkfs against the next
    round_share: float = 0.0  # of the variance: one moment against the next
    stalled: int = 0  # slices that measured nothing at all, left out

    @property
    def half_width(self) -> float:
        """The interval's half-width as a share of the ratio (on the log scale: symmetric)."""
        return self.ci_high / self.ratio - 1 if self.ratio > 0 else math.inf


def paired_compare(x: Sequence[Obs], baseline: Sequence[Obs], level: float = 0.95) -> PairedComparison | None:
    d = paired_diffs(x, baseline)
    split = split_variance(d)
    if split is None or split.se <= 0 or not math.isfinite(split.df):
        return None  # no spread to judge by: too few slices, or identical ones
    r = math.exp(split.mean)
    t = split.mean / split.se
    p = float(2 * sps.t.sf(abs(t), split.df))
    half = float(sps.t.ppf(0.5 + level / 2, split.df)) * split.se
    return PairedComparison(r, math.exp(split.mean - half), math.exp(split.mean + half), p, n=split.n,
                            blocks=split.blocks, df=split.df, block_share=split.block_share,
                            round_share=split.round_share, stalled=d.dropped)


def paired_compare_all(series: Mapping[str, Sequence[Obs]], baseline: str,
                       alpha: float = ALPHA) -> dict[str, PairedComparison]:
    """Every configuration against the baseline, Holm-corrected together."""
    raw = {name: paired_compare(obs, series[baseline]) for name, obs in series.items() if name != baseline}
    tested = {k: c for k, c in raw.items() if c is not None}
    adjusted = holm([c.p for c in tested.values()])
    return {name: replace(c, p_adjusted=p_adj, significant=p_adj < alpha)
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
