"""The race's model of a side-by-side run (pure): each slice is its image's level plus the weather.

Every configuration stands as one or more images (an image is one mkfs: its own file, loop
device and filesystem), and every image runs short slices that take turns with all the others.
On the log scale of the primary figure (throughput, or 1/time),

    y_i = a_img(i) + w(t_i) + e_i

- a_img: the image's level. A configuration's images differ from one mkfs to the next (where
  files land, the journal's place, allocation groups): a configuration's level is the mean of
  its images' levels, and the spread of those levels is what its interval is made of.
- w(t): the machine's weather, shared by everything on the disk at moment t. It is read from
  every disk-backed candidate's slices, not from the baseline alone: at each slice, the median
  of the residuals y_j - a_img(j) of the NEIGHBOURS nearest slices in time (the slice itself left
  out). References (tmpfs, the raw device) do not inform it; tmpfs does not feel it either.
- The levels and the weather are fitted in turn (backfitting), a fixed number of times.
- e_i: what is left. Slices whose residual is more than OUTLIER_SLICE robust deviations from 0,
  and images whose level lies more than OUTLIER_IMAGE robust deviations from the median of their
  configuration's other images, are flagged (and kept: a report names them, nothing is dropped silently).

The variance of a configuration's level comes from its images' spread. With three or four images
a configuration's own spread has two or three degrees of freedom, so it is moderated towards the
spread pooled over every disk-backed candidate (PRIOR_DF degrees of freedom of it), as in an
empirical-Bayes moderated t. When a configuration's own spread is significantly larger than
the pooled one (F test at 5%), its own is used alone. With one image per configuration (one
block), the images' spread cannot be seen: the slices' spread within images is used, and the
report says that the variation from one mkfs to the next is not in the interval.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from scipy import stats as sps

from pickfs.stats.paired import Obs

NEIGHBOURS = 8  # slices read for the weather at each moment
ITERATIONS = 6  # of backfitting levels and weather
PRIOR_DF = 8.0  # degrees of freedom of the pooled spread in a configuration's moderated spread
OUTLIER_SLICE = 5.0  # robust deviations
OUTLIER_IMAGE = 4.0  # robust deviations of image levels
HETERO_P = 0.05


@dataclass(frozen=True)
class Point:
    config: str
    block: int
    t: float
    y: float
    round: int | None


@dataclass(frozen=True)
class Spread:
    """A configuration's level: the mean of its images' levels, its variance and degrees of freedom."""

    level: float
    var: float  # of the level (the images' spread / their number)
    df: float
    images: int
    slices: int
    own_sd: float | None  # the spread of its images' levels (log scale), when it has two or more
    pooled: bool  # moderated towards the pooled spread


@dataclass(frozen=True)
class Fit:
    levels: Mapping[tuple[str, int], float]  # (config, image) -> level
    counts: Mapping[tuple[str, int], int]  # slices per image
    spreads: Mapping[str, Spread]
    weather: tuple[tuple[float, float], ...]  # (t, w) at every slice that feels the weather
    slice_sd: float  # robust scale of the residuals
    image_sd: float  # pooled spread of image levels over the disk-backed candidates
    outlying_slices: tuple[tuple[str, int, int | None, float], ...]  # config, image, round, residual
    outlying_images: tuple[tuple[str, int, float], ...]  # config, image, level against its others
    stalled: Mapping[str, int]  # slices with no positive figure, left out (a stall)
    images_seen: bool  # image-to-image spread is in the variance (two or more images somewhere)

    def images_of(self, config: str) -> list[float]:
        return [v for (c, _), v in sorted(self.levels.items()) if c == config]


def _points(series: Mapping[str, Sequence[Obs]]) -> tuple[list[Point], dict[str, int]]:
    pts, stalled = [], {}
    for name, obs in series.items():
        stalled[name] = sum(1 for o in obs if o.value <= 0)
        pts += [Point(name, o.block, o.t, math.log(o.value), o.round) for o in obs if o.value > 0]
    return sorted(pts, key=lambda p: p.t), stalled


def _nearest_median(times: Sequence[float], values: Sequence[float], t: float, own: int | None, k: int) -> float:
    """The median of the k values nearest to t in time, leaving out index `own`."""
    if not times:
        return 0.0
    i = bisect_left(times, t)
    lo, hi = i - 1, i
    picked: list[float] = []
    while len(picked) < k and (lo >= 0 or hi < len(times)):
        take_hi = hi < len(times) and (lo < 0 or times[hi] - t <= t - times[lo])
        j = hi if take_hi else lo
        if take_hi:
            hi += 1
        else:
            lo -= 1
        if j != own:
            picked.append(values[j])
    return statistics.median(picked) if picked else 0.0


def _weather(pts: list[Point], level: dict[tuple[str, int], float], informs: Collection[str],
             feels: Collection[str]) -> list[float]:
    """w at every point (0 where the configuration does not feel the disk), centred on the informers."""
    idx = [i for i, p in enumerate(pts) if p.config in informs]
    times = [pts[i].t for i in idx]
    resid = [pts[i].y - level[(pts[i].config, pts[i].block)] for i in idx]
    where = {i: n for n, i in enumerate(idx)}
    w = [_nearest_median(times, resid, p.t, where.get(i), NEIGHBOURS) if p.config in feels else 0.0
         for i, p in enumerate(pts)]
    centre = statistics.fmean(w[i] for i in idx) if idx else 0.0
    return [x - centre if p.config in feels else 0.0 for x, p in zip(w, pts)]


def _levels(pts: list[Point], w: list[float]) -> dict[tuple[str, int], float]:
    acc: dict[tuple[str, int], list[float]] = defaultdict(list)
    for p, x in zip(pts, w):
        acc[(p.config, p.block)].append(p.y - x)
    return {k: statistics.fmean(v) for k, v in acc.items()}


def _pooled(levels: Mapping[tuple[str, int], float], informs: Collection[str]) -> tuple[float, float]:
    """(variance, df) of image levels within configurations, pooled over the informers."""
    ss = df = 0.0
    for name in informs:
        own = [v for (c, _), v in levels.items() if c == name]
        if len(own) >= 2:
            ss += statistics.variance(own) * (len(own) - 1)
            df += len(own) - 1
    return (ss / df if df else 0.0), df


def _round_part(resid: Sequence[tuple[int, int | None, float]], counts: Mapping[int, int]) -> tuple[float, float]:
    """(variance, df) that the rounds put into a configuration's level: what moved all its images at
    once in a round, beyond the shared weather (a slow-down that hits this configuration more than
    the others), from its residuals grouped by round. `resid`: (image, round, residual about the
    image's level); `counts`: slices per image. With one image, this is all of its spread."""
    by_round: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for image, rnd, e in resid:
        by_round[rnd if rnd is not None else -1].append((image, e))
    images = len(counts)
    if len(by_round) < 2 or not images:
        return 0.0, math.inf
    rows = list(by_round.values())
    means = [statistics.fmean(e for _, e in row) for row in rows]
    between = statistics.variance(means)
    if images > 1:  # less what the slices within a round put into its mean
        ss_w = sum((e - m) ** 2 for row, m in zip(rows, means) for _, e in row)
        df_w = sum(len(row) - 1 for row in rows)
        s2_w = ss_w / df_w if df_w > 0 else 0.0
        between -= statistics.fmean(s2_w / len(row) for row in rows)
    # the weight of one round's shared shift in the level: each image's level is its rounds' mean
    weights = sum((sum(1 / counts[i] for i, _ in row) / images) ** 2 for row in rows)
    return max(between, 0.0) * weights, len(rows) - 1.0


def _spread(own: list[float], slices: int, pool: tuple[float, float], rounds: tuple[float, float],
            moderate: bool) -> Spread:
    """A configuration's level and its variance: its images' spread (moderated towards the pooled
    one, see the module's text) over their number, plus what its rounds moved it by together."""
    s0, d_pool = pool
    k = len(own)
    level = statistics.fmean(own)
    sd = statistics.stdev(own) if k >= 2 else None
    s2 = sd * sd if sd is not None else 0.0
    terms = [rounds] if rounds[0] > 0 else []
    pooled = False
    if k >= 2 and (not moderate or s0 <= 0 or s2 / s0 > float(sps.f.ppf(1 - HETERO_P, k - 1, d_pool))):
        terms.append((s2 / k, k - 1.0))
    elif d_pool > 0:
        d0 = min(PRIOR_DF, d_pool)
        terms.append(((d0 * s0 + (k - 1) * s2) / (d0 + k - 1) / k, d0 + k - 1))
        pooled = True
    var = sum(v for v, _ in terms)
    denom = sum(v * v / df for v, df in terms if df > 0 and math.isfinite(df))
    df = var * var / denom if denom > 0 else math.inf
    return Spread(level, var, df, k, slices, sd, pooled)


def fit(series: Mapping[str, Sequence[Obs]], references: Collection[str] = (),
        in_memory: Collection[str] = ()) -> Fit | None:
    """Levels, weather and spreads of every configuration's slices; None without a positive slice.
    `references` do not inform the weather; `in_memory` ones do not feel it either."""
    pts, stalled = _points(series)
    if not pts:
        return None
    names = {p.config for p in pts}
    informs = {n for n in names if n not in references and n not in in_memory} or names - set(in_memory)
    feels = {n for n in names if n not in in_memory}
    level = _levels(pts, [0.0] * len(pts))
    w = [0.0] * len(pts)
    for _ in range(ITERATIONS):
        w = _weather(pts, level, informs, feels)
        level = _levels(pts, w)
    counts: dict[tuple[str, int], int] = defaultdict(int)
    for p in pts:
        counts[(p.config, p.block)] += 1
    pool = _pooled(level, informs)
    resid = [p.y - x - level[(p.config, p.block)] for p, x in zip(pts, w)]
    spreads = {}
    for name in sorted(names):
        own = [v for (c, _), v in sorted(level.items()) if c == name]
        own_counts = {b: n for (c, b), n in counts.items() if c == name}
        rounds = _round_part([(p.block, p.round, e) for p, e in zip(pts, resid) if p.config == name], own_counts)
        spreads[name] = _spread(own, sum(own_counts.values()), pool, rounds, moderate=name in informs)
    inf_resid = [e for e, p in zip(resid, pts) if p.config in informs]
    mad = statistics.median(abs(e) for e in inf_resid) * 1.4826 if inf_resid else 0.0
    odd_slices = tuple((p.config, p.block, p.round, e) for p, e in zip(pts, resid)
                       if mad > 0 and abs(e) > OUTLIER_SLICE * mad)
    return Fit(level, dict(counts), spreads, tuple((p.t, x) for p, x in zip(pts, w) if p.config in feels),
               mad, math.sqrt(pool[0]), odd_slices, _odd_images(level), stalled, pool[1] > 0)


def _odd_images(level: Mapping[tuple[str, int], float]) -> tuple[tuple[str, int, float], ...]:
    """Images whose level lies far from the median of their configuration's other images, in robust
    deviations pooled over every configuration with three images or more (the odd one cannot hide
    by widening its own yardstick)."""
    by: dict[str, dict[int, float]] = defaultdict(dict)
    for (name, block), v in level.items():
        by[name][block] = v
    devs = [v - statistics.median(imgs.values()) for imgs in by.values() if len(imgs) >= 3 for v in imgs.values()]
    scale = 1.4826 * statistics.median(abs(d) for d in devs) if devs else 0.0
    if scale <= 0:
        return ()
    out = []
    for name, imgs in sorted(by.items()):
        for block, v in sorted(imgs.items()):
            others = [x for b, x in imgs.items() if b != block]
            if len(others) >= 2 and abs(v - statistics.median(others)) > OUTLIER_IMAGE * scale:
                out.append((name, block, v - statistics.median(others)))
    return tuple(out)
