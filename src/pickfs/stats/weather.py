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
- e_i: what is left. A slice whose residual is more than OUTLIER_SLICE robust deviations from 0
  (a stall) is flagged and counted as if it were that far (winsorized), in its image's level and
  in the variance, so that one stall cannot widen every interval; an image whose level lies more
  than OUTLIER_IMAGE robust deviations from the median of its configuration's other images is
  flagged. Both are kept: the report names them, nothing is dropped silently.

The variance of a configuration's level has two parts:
- what one image's level varies by, moderated: the model's variance of an image level (the
  spread from one mkfs to the next, pooled over every disk-backed candidate beyond what their
  slices' noise puts in it, plus the configuration's own slices' noise over its slices) with
  PRIOR_DF degrees of freedom, against its images' own spread with k - 1 (an empirical-Bayes
  moderated variance, as in a moderated t: with two or three images a configuration's own
  spread says little, and one odd image widens its interval without making it useless), over
  its k images;
- what moved all its images at once in a round beyond the shared weather (a slow-down that hits
  this configuration more than the others), from the spread of its rounds' means;
- what moves a configuration's level from one run to the next that no run can see in itself (the
  company it keeps, the host's state at stand-up, where its images land on the host): a
  configuration x run term, the same for every configuration, whose variance the caller passes
  (the plan's `rerun_sd`, estimated across stored reruns by benchmarks/rerun_variance.py). More
  slices and more images do not shrink it: it is the floor of every interval, and kept apart
  (`Spread.rerun_var`) so that a projection of the time a comparison needs knows it.
With one image per configuration (one block) the mkfs part cannot be seen: the report says so.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from pickfs.stats.paired import Obs

NEIGHBOURS = 8  # slices read for the weather at each moment
ITERATIONS = 6  # of backfitting levels and weather
OUTLIER_SLICE = 5.0  # robust deviations
OUTLIER_IMAGE = 4.0  # robust deviations of image levels
PRIOR_DF = 4.0  # weight of the model's variance against an image spread's own (see _spread)


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
    var: float  # of the level
    df: float
    images: int
    slices: int
    own_sd: float | None  # the spread of its images' levels (log scale), when it has two or more
    rerun_var: float = 0.0  # the part of `var` that moves from one run to the next (no more measuring shrinks it)


@dataclass(frozen=True)
class Fit:
    levels: Mapping[tuple[str, int], float]  # (config, image) -> level
    counts: Mapping[tuple[str, int], int]  # slices per image
    spreads: Mapping[str, Spread]
    weather: tuple[tuple[float, float], ...]  # (t, w) at every slice that feels the weather
    slice_sd: float  # robust scale of the residuals
    image_sd: float  # sigma_img: the pooled spread from one mkfs to the next, beyond the slices' noise
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


def _levels(pts: list[Point], w: list[float], cap: float = math.inf) -> dict[tuple[str, int], float]:
    """Each image's level: the mean of its slices less the weather, each slice counted at most `cap`
    from the image's median (a stall of a tenth of a second cannot drag a level)."""
    acc: dict[tuple[str, int], list[float]] = defaultdict(list)
    for p, x in zip(pts, w):
        acc[(p.config, p.block)].append(p.y - x)
    out = {}
    for k, v in acc.items():
        mid = statistics.median(v)
        out[k] = statistics.fmean(min(max(z, mid - cap), mid + cap) for z in v)
    return out


def _scale(pts: list[Point], w: list[float], level: Mapping[tuple[str, int], float], informs: Collection[str]) -> float:
    """The robust scale of the informers' residuals (1.4826 x their median absolute value)."""
    resid = [abs(p.y - x - level[(p.config, p.block)]) for p, x in zip(pts, w) if p.config in informs]
    return 1.4826 * statistics.median(resid) if resid else 0.0


@dataclass(frozen=True)
class _Parts:
    """A configuration's raw material for its variance (see `_spread`)."""

    levels: tuple[float, ...]  # its images' levels
    inv_n: tuple[float, ...]  # 1 / slices of each image
    shared: float  # sigma_u^2: what moved all its images at once in a round, beyond the shared weather
    shared_weight: float  # sum over rounds of that round's weight in the level, squared
    shared_df: float
    noise: float  # sigma_e^2: slice to slice within a round
    noise_df: float

    @property
    def images(self) -> int:
        return len(self.levels)

    def image_excess(self) -> float:
        """The images' spread beyond what their slices' noise puts in it (an estimate of sigma_img^2)."""
        if self.images < 2:
            return 0.0
        return statistics.variance(self.levels) - self.noise * statistics.fmean(self.inv_n)


def _parts(resid: Sequence[tuple[int, int | None, float]], levels: Mapping[int, float],
           counts: Mapping[int, int]) -> _Parts:
    """Split a configuration's residuals (image, round, residual about its image's level) by round:
    the rounds' means move together (sigma_u^2), the images within a round apart (sigma_e^2). With
    one image the two cannot be told apart, and all of it is slice noise."""
    by_round: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for image, rnd, e in resid:
        by_round[rnd if rnd is not None else -1].append((image, e))
    images = sorted(counts)
    inv_n = tuple(1 / counts[i] for i in images)
    lv = tuple(levels[i] for i in images)
    rows = list(by_round.values())
    if len(images) == 1 or len(rows) < 2:
        es = [e for _, _, e in resid]
        noise = statistics.variance(es) if len(es) >= 2 else 0.0
        return _Parts(lv, inv_n, 0.0, 0.0, math.inf, noise, max(len(es) - len(images), 1))
    means = [statistics.fmean(e for _, e in row) for row in rows]
    ss_w = sum((e - m) ** 2 for row, m in zip(rows, means) for _, e in row)
    df_w = sum(len(row) - 1 for row in rows)
    noise = ss_w / df_w if df_w > 0 else 0.0
    shared = max(0.0, statistics.variance(means) - statistics.fmean(noise / len(row) for row in rows))
    weight = sum((sum(1 / counts[i] for i, _ in row) / len(images)) ** 2 for row in rows)
    return _Parts(lv, inv_n, shared, weight, len(rows) - 1.0, noise, float(max(df_w, 1)))


def _pooled(parts: Mapping[str, _Parts], informs: Collection[str]) -> tuple[float, float]:
    """(sigma_img^2, df): the spread from one mkfs to the next beyond the slices' noise, pooled over
    the informers (the mkfs effect is taken as common; each configuration's noise is its own)."""
    pooled = [p for p in (parts.get(name) for name in sorted(informs)) if p is not None and p.images >= 2]
    ss = math.fsum(p.image_excess() * (p.images - 1) for p in pooled)  # the same sum in any order of `informs`
    df = float(sum(p.images - 1 for p in pooled))
    return (max(ss / df, 0.0) if df else 0.0), df


def _spread(p: _Parts, slices: int, pool: tuple[float, float]) -> Spread:
    """A configuration's level and its variance within the run. What one image's level varies by, as the model
    says (the pooled mkfs spread plus its own slices' noise over its slices), is moderated with its images'
    own spread: PRIOR_DF degrees of freedom of the first, k - 1 of the second (an empirical-Bayes
    moderated variance), over its number of images; plus what its rounds moved all its images by."""
    s_img, d_pool = pool
    k = p.images
    level = statistics.fmean(p.levels)
    sd = statistics.stdev(p.levels) if k >= 2 else None
    model = s_img + p.noise * statistics.fmean(p.inv_n)
    model_df = _satterthwaite([(s_img, d_pool), (p.noise * statistics.fmean(p.inv_n), p.noise_df)])[1]
    d0 = min(PRIOR_DF, model_df)
    if sd is not None:
        per_image, df_image = (d0 * model + (k - 1) * sd * sd) / (d0 + k - 1), d0 + k - 1
    else:
        per_image, df_image = model, model_df
    var, df = _satterthwaite([(per_image / k, df_image), (p.shared * p.shared_weight, p.shared_df)])
    return Spread(level, var, df, k, slices, sd)


def with_rerun(s: Spread, rerun_sd: float, rerun_df: float = math.inf) -> Spread:
    """A level's spread with what moves it from one run to the next (a standard deviation on the log scale, known
    with `rerun_df` degrees of freedom) added to its variance, and kept apart as `rerun_var`."""
    if rerun_sd <= 0:
        return s
    var, df = _satterthwaite([(s.var - s.rerun_var, s.df), (rerun_sd * rerun_sd, rerun_df)])
    return replace(s, var=var, df=df, rerun_var=rerun_sd * rerun_sd)


def _satterthwaite(terms: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """(sum, degrees of freedom) of variance terms, each (value, df); zero terms left out."""
    terms = [(v, df) for v, df in terms if v > 0]
    var = sum(v for v, _ in terms)
    denom = sum(v * v / df for v, df in terms if df > 0 and math.isfinite(df))
    return var, (var * var / denom if denom > 0 else math.inf)


def fit(series: Mapping[str, Sequence[Obs]], references: Collection[str] = (),
        in_memory: Collection[str] = (), rerun_sd: float = 0.0, rerun_df: float = math.inf,
        rerun_own: Mapping[str, tuple[float, float]] | None = None) -> Fit | None:
    """Levels, weather and spreads of every configuration's slices; None without a positive slice.
    `references` do not inform the weather; `in_memory` ones do not feel it either. `rerun_sd` (log scale,
    estimated with `rerun_df` degrees of freedom): what moves every configuration's level from one run to
    the next, added to each level's variance (0: the run's own variance alone); `rerun_own`: a configuration's
    own (sd, df) in its place, for a kind that moves more."""
    pts, stalled = _points(series)
    if not pts:
        return None
    names = {p.config for p in pts}
    informs = {n for n in names if n not in references and n not in in_memory} or names - set(in_memory)
    feels = {n for n in names if n not in in_memory}
    level = _levels(pts, [0.0] * len(pts))
    w = [0.0] * len(pts)
    cap = math.inf
    for _ in range(ITERATIONS):
        w = _weather(pts, level, informs, feels)
        level = _levels(pts, w, cap)
        cap = OUTLIER_SLICE * _scale(pts, w, level, informs) or math.inf
    level = _levels(pts, w, cap)
    counts: dict[tuple[str, int], int] = defaultdict(int)
    for p in pts:
        counts[(p.config, p.block)] += 1
    raw = [p.y - x - level[(p.config, p.block)] for p, x in zip(pts, w)]
    resid = [min(max(e, -cap), cap) for e in raw]  # an outlying slice counts as far as the cap (winsorized)
    parts = {}
    for name in sorted(names):
        own_counts = {b: n for (c, b), n in counts.items() if c == name}
        parts[name] = _parts([(p.block, p.round, e) for p, e in zip(pts, resid) if p.config == name],
                             {b: v for (c, b), v in level.items() if c == name}, own_counts)
    pool = _pooled(parts, informs)
    own = rerun_own or {}
    spreads = {name: with_rerun(_spread(p, int(sum(1 / x for x in p.inv_n)), pool),
                                *own.get(name, (rerun_sd, rerun_df)))
               for name, p in parts.items()}
    mad = _scale(pts, w, level, informs)
    odd_slices = tuple((p.config, p.block, p.round, e) for p, e in zip(pts, raw)
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
