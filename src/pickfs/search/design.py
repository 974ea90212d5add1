"""Which candidates each stage of a search races, and what the races say about the dimensions (pure).

- Screening: every filesystem's defaults, every value changed alone from them (one at a time), and a
  seeded random sample of the rest of the space.
- Effects: each value changed alone, against its filesystem's defaults in the same race (the race's
  paired model: the ratio of levels, Satterthwaite's degrees of freedom), with simultaneous 95%
  intervals (Bonferroni over every effect shown); each filesystem's defaults against the first one's.
  An effect is measurable exactly when its interval excludes 1.
- Refinement, around the leaders of the screening (the race's answer and whatever it could not tell
  from it, then the fastest): each leader with every measurable helper of its filesystem at once, the
  helpers alone on the defaults (every other value of the leader back to its default), that combination
  with each helper taken out again (an interaction shows there), and each leader with each value that
  only may have helped (its estimate above 1, its interval not excluding 1) added alone.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from pickfs.search.space import Candidate, Space
from pickfs.stats.decision import Contrast, Decision, contrast
from pickfs.stats.weather import Fit

LEVEL = 0.95


@dataclass(frozen=True)
class Effect:
    fstype: str
    dimension: str  # "filesystem" for a filesystem's defaults against the first filesystem's
    value: str  # the value's label (the filesystem's name for "filesystem")
    index: int  # the value's index in its dimension (-1 for "filesystem")
    ratio: float
    low: float
    high: float

    @property
    def measurable(self) -> bool:
        return self.low > 1 or self.high < 1

    def within(self, margin: float) -> bool:
        """No difference beyond the margin: the whole interval lies within ±margin (an equivalence test), which a
        wide interval that merely includes 1 does not show."""
        return self.low >= 1 / (1 + margin) and self.high <= 1 + margin


def screening(space: Space, sample: int, seed: int) -> list[Candidate]:
    out: list[Candidate] = []
    for fs in space.filesystems:
        base = space.default(fs.fstype)
        out.append(base)
        for k, dim in enumerate(fs.dimensions):
            for i in range(1, len(dim.values)):
                c = Candidate(fs.fstype, (*base.choice[:k], i, *base.choice[k + 1:]))
                if space.allowed(c):
                    out.append(c)
    chosen = set(out)
    pool = [c for c in space.candidates() if c not in chosen and space.allowed(c)]
    out += random.Random(seed).sample(pool, min(sample, len(pool)))
    return out


def _one_change(space: Space, c: Candidate) -> tuple[int, int] | None:
    """(dimension, value) when `c` differs from its filesystem's defaults in exactly one dimension."""
    changed = [(k, i) for k, i in enumerate(c.choice) if i != 0]
    return changed[0] if len(changed) == 1 else None


def effects(space: Space, fit: Fit, measured: Sequence[Candidate]) -> list[Effect]:
    """Every effect the race can tell, largest first (see the module's text)."""
    names = {space.name(c) for c in measured if space.name(c) in fit.spreads}
    first = next((space.default(f.fstype) for f in space.filesystems if space.name(space.default(f.fstype)) in names),
                 None)
    raw: list[tuple[tuple[str, str, str, int], Contrast]] = []
    for c in measured:
        name, base = space.name(c), space.name(space.default(c.fstype))
        if name not in names or base not in names:
            continue
        one = _one_change(space, c)
        if one is not None:
            dim = space.of(c.fstype).dimensions[one[0]]
            con = contrast(fit, name, base)
            if con is not None:
                raw.append(((c.fstype, dim.name, dim.values[one[1]].label, one[1]), con))
        elif first is not None and c == space.default(c.fstype) and c != first:
            con = contrast(fit, name, space.name(first))
            if con is not None:
                raw.append(((c.fstype, "filesystem", c.fstype, -1), con))
    m = max(1, len(raw))
    out = []
    for (fstype, dim_name, label, index), con in raw:
        lo, hi = con.interval(1 - (1 - LEVEL) / m)
        out.append(Effect(fstype, dim_name, label, index, math.exp(con.est), math.exp(lo), math.exp(hi)))
    return sorted(out, key=lambda e: -abs(math.log(e.ratio)))


def dimension_ranking(found: Sequence[Effect]) -> list[Effect]:
    """The largest effect of every (filesystem, dimension), largest first."""
    best: dict[tuple[str, str], Effect] = {}
    for e in found:
        key = (e.fstype, e.dimension) if e.dimension != "filesystem" else ("", "filesystem")
        if key not in best or abs(math.log(e.ratio)) > abs(math.log(best[key].ratio)):
            best[key] = e
    return sorted(best.values(), key=lambda e: -abs(math.log(e.ratio)))


def no_difference(found: Sequence[Effect]) -> list[Effect]:
    """Values whose interval includes 1: no measurable difference."""
    return [e for e in found if not e.measurable]


def leaders(space: Space, fit: Fit, decision: Decision | None, measured: Sequence[Candidate], k: int = 3) -> list[Candidate]:
    """The race's answer, the fastest of what it could not tell from the answer, then the fastest of the rest,
    at most k."""
    by_name = {space.name(c): c for c in measured if space.name(c) in fit.spreads}
    answer = decision.answer if decision else None
    tied = {n for n in (decision.tied if decision else ()) if n in by_name}
    order = sorted(by_name, key=lambda n: (n != answer, n not in tied, -fit.spreads[n].level))
    return [by_name[n] for n in order[:k]]


def _with(c: Candidate, k: int, i: int) -> Candidate:
    return Candidate(c.fstype, (*c.choice[:k], i, *c.choice[k + 1:]))


def refinement(space: Space, found: Sequence[Effect], around: Sequence[Candidate], most: int = 8) -> list[Candidate]:
    """Candidates combining the values that helped, around each leader (see the module's text)."""
    out: list[Candidate] = []

    def add(c: Candidate) -> None:
        if c not in out and space.allowed(c):
            out.append(c)

    for leader in around:
        add(leader)
    for leader in around:
        mine = [e for e in found if e.fstype == leader.fstype and e.index >= 0 and e.ratio > 1]
        dims = {d.name: k for k, d in enumerate(space.of(leader.fstype).dimensions)}
        best: dict[int, Effect] = {}
        for e in mine:
            k = dims[e.dimension]
            if k not in best or e.ratio > best[k].ratio:
                best[k] = e
        sure = {k: e.index for k, e in best.items() if e.measurable}
        maybe = {k: e.index for k, e in best.items() if not e.measurable}
        combined = leader
        for k, i in sure.items():
            combined = _with(combined, k, i)
        add(combined)
        lean = Candidate(leader.fstype, tuple(sure.get(k, 0) for k in range(len(leader.choice))))
        add(lean)  # the helpers alone, every other value back to its default
        for k in sure:
            add(_with(combined, k, leader.choice[k] if leader.choice[k] != sure[k] else 0))
        for k, i in maybe.items():
            add(_with(leader, k, i))
            add(_with(combined, k, i))
    return out[:most]
