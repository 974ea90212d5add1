"""The capacity search's statistics: is a latency target met at a rate, which rate to try next, and the
highest rate met with its interval (pure functions: no I/O, no printing).

A target reads like `p99<=5ms`: at a fixed rate, the 99th percentile of latency from each transaction's
scheduled start must stay within 5 ms. At one rate a configuration PASSES when the percentile of its
slices' merged histogram is within the target and no more than (100 - q)% of the transactions due were
skipped or left unfinished (those would lie beyond it); the decision is SURE when the bootstrap interval
over its slices lies wholly on that side.

The search, per configuration, on a geometric scale: double the rate while it passes (up to the
client's ceiling), halve it while it fails, then bisect between the highest rate passed and the lowest
failed (their geometric mean) until they are within RESOLUTION of each other. The capacity is the
highest rate passed below the lowest failed; its interval runs from the highest rate SURELY passed to the
lowest SURELY failed (open above when none surely failed): it carries both the grid's resolution and the
uncertainty of each decision.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pickfs.stats.latency import Slice, percentile_interval

RESOLUTION = 1.2  # stop bisecting when the highest rate passed and the lowest failed are within 20%
FLOOR_RATE = 1.0  # transactions per second: below this, the target is not met at any rate worth running

_TARGET = re.compile(r"^\s*p(\d+(?:\.\d+)?)\s*<=?\s*(\d+(?:\.\d+)?)\s*(us|µs|ms|s)\s*$", re.IGNORECASE)
_UNIT = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


@dataclass(frozen=True)
class LatencyTarget:
    q: float  # the percentile, e.g. 99.0
    limit_s: float

    def words(self) -> str:
        limit = f"{self.limit_s:g} s" if self.limit_s >= 1 else \
            f"{self.limit_s * 1e3:g} ms" if self.limit_s >= 1e-3 else f"{self.limit_s * 1e6:g} us"
        return f"p{self.q:g} <= {limit}"


def parse_target(text: str) -> LatencyTarget:
    """'p99<=5ms' -> LatencyTarget(99.0, 0.005); ValueError naming the form otherwise (pure)."""
    m = _TARGET.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a latency target (a percentile and a time, e.g. p99<=5ms)")
    q, limit = float(m.group(1)), float(m.group(2)) * _UNIT[m.group(3).lower()]
    if not 0 < q < 100 or limit <= 0:
        raise ValueError(f"{text!r}: the percentile must be between 0 and 100 and the time above 0")
    return LatencyTarget(q, limit)


@dataclass(frozen=True)
class Verdict:
    """The target judged at one rate for one configuration."""

    rate: float
    point_s: float | None  # the percentile from the scheduled start (None: nothing committed)
    low_s: float | None  # its 95% bootstrap interval over slices (None: too few slices)
    high_s: float | None
    missed_share: float
    passed: bool
    sure: bool


def judge(slices: Sequence[Slice], target: LatencyTarget, rate: float) -> Verdict:
    due = sum(s.due for s in slices)
    missed = sum(s.missed for s in slices) / due if due else 1.0
    interval = percentile_interval(slices, target.q)
    if interval is None:
        return Verdict(rate, None, None, None, missed, False, True)
    point, low, high = (v / 1e6 for v in interval)
    too_many_missed = missed > (100 - target.q) / 100
    passed = point <= target.limit_s and not too_many_missed
    known = not (math.isnan(low) or math.isnan(high))
    if passed:
        sure = known and high <= target.limit_s
    else:
        sure = too_many_missed or (known and low > target.limit_s)
    return Verdict(rate, point, low if known else None, high if known else None, missed, passed, sure)


def bracket(verdicts: Sequence[Verdict]) -> tuple[float | None, float | None]:
    """(highest rate passed below the lowest failed, lowest rate failed)."""
    fails = [v.rate for v in verdicts if not v.passed]
    hi = min(fails) if fails else None
    passes = [v.rate for v in verdicts if v.passed and (hi is None or v.rate < hi)]
    return (max(passes) if passes else None), hi


def next_rate(verdicts: Sequence[Verdict], ceiling: float | None, resolution: float = RESOLUTION,
              floor: float = FLOOR_RATE) -> float | None:
    """The next rate to try for this configuration, or None when its search is over."""
    lo, hi = bracket(verdicts)
    if hi is None:
        if lo is None:
            return None
        if ceiling is not None and lo >= ceiling:
            return None  # held at the client's own ceiling: its capacity is at least that
        nxt = lo * 2
        return min(nxt, ceiling) if ceiling is not None else nxt
    if lo is None:
        nxt = hi / 2
        if nxt >= floor:
            return nxt
        return floor if hi / floor > resolution else None  # the lowest rate worth judging, once
    if hi / lo <= resolution:
        return None
    return math.sqrt(lo * hi)


@dataclass(frozen=True)
class Capacity:
    rate: float  # the highest rate passed below the lowest failed; 0 when none passed
    low: float  # the highest rate surely passed (0: none)
    high: float | None  # the lowest rate surely failed; None: no rate tried surely failed
    lowest_failed: float | None
    steps: int


def capacity(verdicts: Sequence[Verdict]) -> Capacity:
    lo, hi = bracket(verdicts)
    rate = lo or 0.0
    sure_pass = [v.rate for v in verdicts if v.passed and v.sure and v.rate <= rate]
    sure_fail = [v.rate for v in verdicts if not v.passed and v.sure and hi is not None and v.rate >= hi]
    return Capacity(rate, max(sure_pass) if sure_pass else 0.0, min(sure_fail) if sure_fail else None, hi,
                    len(verdicts))
