"""The search's stages, on a budget: screening, refinement around the leaders, then the leaders against the
distribution's default and the safe presets (the final race gives the answer).

Each stage is a race (engine/race.py) run through a `Racer`: the real one builds every configuration
(search/stages.py), a test's one draws from a response surface. The driver is deterministic given what the
races return, so a resumed search takes the same path: its budget is what the stages have spent (their own
record), not the clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from pickfs.engine.race import baseline_copies
from pickfs.engine.schedule import AUTO_BLOCKS
from pickfs.model import FsConfig
from pickfs.search.design import Effect, effects, leaders, refinement, screening
from pickfs.search.space import Candidate, Space
from pickfs.stats.decision import Decision, contrast, same_setup
from pickfs.stats.weather import Fit

# The final race gives the answer, so it has the largest share: the screening only needs to find the large
# losses and the leaders (with one image per configuration it cannot tell small effects anyway). At 30 min:
# screening 9 min, refinement 7.4, the final race 13.7 (less what the stages before it left unspent).
SCREENING_SHARE = 0.3  # of the budget
REFINEMENT_SHARE = 0.35  # of what is left after the screening; the final race has the rest
MIN_STAGE_S = 60.0  # a stage with less than this left is not started
STANDUP_SHARE = 0.5  # of a stage's share, what standing up its images may take; the rounds get the rest
PRIOR_IMAGE_S = 6.0  # standing up one image (mkfs, mount, the data, a warm-up slice) before a stage measured it:
# sqlite-tpcb's stages took 2.4-5.6 s an image on a 2-core machine under load
AUTO_LEAST = AUTO_BLOCKS[0]  # a race whose blocks are automatic stands at least this many


@dataclass(frozen=True)
class StageSpec:
    name: str  # "screening", "refinement", "final"
    configs: tuple[FsConfig, ...]
    baseline: str
    budget_s: float
    blocks: int | None  # None: the race decides (screening: 1, to stand every candidate at once)
    cut: str = ""  # what was left out to stand up within the stage's share, said in the report
    same_as: tuple[tuple[str, str], ...] = ()  # (preset, the configuration raced for it): the same setup, raced once


@dataclass(frozen=True)
class StageOutcome:
    spec: StageSpec
    run_id: str
    fit: Fit | None
    decision: Decision | None
    left: tuple[tuple[str, int, str], ...]  # (name, round it last ran, why it left)
    elapsed_s: float
    images: int  # filesystems built (each a fresh mkfs)
    image_s: float | None = None  # what standing up one image took in this stage (search/stages.py)
    preferred: str | None = None  # what the stage's answer prefers, settled or not (its run's report says the same)


class Racer(Protocol):
    def __call__(self, spec: StageSpec) -> StageOutcome: ...


@dataclass(frozen=True)
class Advantage:
    leader: str
    over: str
    ratio: float
    low: float
    high: float
    same: bool = False  # `over` is the same setup as `leader` (a preset the search also found), raced once


@dataclass(frozen=True)
class SearchResult:
    space: Space
    stages: tuple[StageOutcome, ...]
    effects: tuple[Effect, ...]
    answer: str | None
    settled: bool
    tied: tuple[str, ...]
    advantage: Advantage | None
    best_preset: Advantage | None  # the fastest safe preset of the final race, against the answer
    skipped: tuple[str, ...] = field(default=())  # stages not started, and why

    @property
    def built(self) -> int:
        return sum(s.images for s in self.stages)

    @property
    def configurations(self) -> int:
        return len({c.name for s in self.stages for c in s.spec.configs})


def _advantage(fit: Fit | None, a: str | None, b: str | None) -> Advantage | None:
    con = contrast(fit, a, b) if fit is not None and a and b and a != b else None
    if con is None or a is None or b is None:
        return None
    lo, hi = con.interval(0.95)
    return Advantage(a, b, math.exp(con.est), math.exp(lo), math.exp(hi))


def _configs(space: Space, cands: Sequence[Candidate], extra: Sequence[FsConfig] = ()
             ) -> tuple[tuple[FsConfig, ...], tuple[tuple[str, str], ...]]:
    """The candidates' configurations, then the `extra` ones (presets), each under the space's name when it is a
    setup of the space (raced once, never twice against itself); and which configuration stands for each preset
    raced under another name."""
    out = [space.config(c) for c in cands]
    same_as = []
    for e in extra:
        twin = next((c for c in out if c.name == e.name or same_setup(c, e)), None) or _in_space(space, e)
        if twin is None:
            out.append(e)
        else:
            if twin not in out:
                out.append(twin)
            if twin.name != e.name:
                same_as.append((e.name, twin.name))
    return tuple(out), tuple(same_as)


def _in_space(space: Space, preset: FsConfig) -> FsConfig | None:
    """The space's own configuration of the preset's setup, if the space holds it: the search names what it
    races by its own dimensions (the xfs preset is xfs+defaults), so two searches name one setup alike."""
    return next((cfg for c in space.candidates() if c.fstype == preset.fstype and space.allowed(c)
                 and same_setup(cfg := space.config(c), preset)), None)


def images_of(configs: int, blocks: int) -> int:
    """The images `blocks` blocks of `configs` configurations stand, the baseline in the race's copies."""
    return blocks * (configs - 1 + baseline_copies(configs - 1))


def within_share(spec: StageSpec, image_s: float, rank: Sequence[int] = ()) -> StageSpec:
    """The stage cut to stand up its images within STANDUP_SHARE of its share (pure): first one block instead
    of the race's automatic ones, then configurations left out, the highest `rank` first (by default the
    last: the baseline and the leaders come first), never fewer than two; `cut` says what and why."""
    share = max(spec.budget_s, MIN_STAGE_S)  # what the stage's race is given (search/stages.py)
    allowed = int(share * STANDUP_SHARE // max(image_s, 1e-3))
    n = len(spec.configs)
    blocks = spec.blocks if spec.blocks is not None else AUTO_LEAST
    if images_of(n, blocks) <= allowed:
        return spec
    why = (f"standing up is capped at {STANDUP_SHARE:.0%} of the stage's {share / 60:.1f} min, "
           f"about {allowed} image(s) at {image_s:.0f} s each")
    if images_of(n, 1) <= allowed:
        return replace(spec, blocks=1, cut=f"one block of images, not {blocks}: {why}")
    k = n
    while k > 2 and images_of(k, 1) > allowed:
        k -= 1
    order = sorted(range(n), key=lambda i: (rank[i] if i < len(rank) else 0, i))
    kept = sorted(order[:k])
    left_out = ", ".join(spec.configs[i].name for i in order[k:])
    return replace(spec, configs=tuple(spec.configs[i] for i in kept), blocks=1,
                   cut=f"one block of {k} of its {n} configurations ({left_out} left out): {why}")


def screening_rank(space: Space, design: Sequence[Candidate]) -> list[int]:
    """What a screening keeps first when it must cut (pure): every filesystem's defaults, then the values
    changed alone, then the random sample."""
    return [0 if all(i == 0 for i in c.choice) else 1 if sum(1 for i in c.choice if i) == 1 else 2 for c in design]


def _image_s(stages: Sequence[StageOutcome]) -> float:
    """What standing up one image took in the latest stage that measured it, else the prior."""
    seen = [s.image_s for s in stages if s.image_s]
    return seen[-1] if seen else PRIOR_IMAGE_S


def _best_preset(final: StageOutcome, answer: str | None, presets: Sequence[FsConfig]) -> Advantage | None:
    """The answer against the fastest safe preset of the final race (each preset by what raced for it)."""
    fit = final.fit
    if fit is None or not answer:
        return None
    raced = {p.name: p.name for p in presets} | dict(final.spec.same_as)
    ranked = sorted((n for n in raced if raced[n] in fit.spreads), key=lambda n: -fit.spreads[raced[n]].level)
    if not ranked:
        return None
    if raced[ranked[0]] == answer:
        return Advantage(answer, ranked[0], 1.0, 1.0, 1.0, same=True)
    adv = _advantage(fit, answer, raced[ranked[0]])
    return replace(adv, over=ranked[0]) if adv is not None else None


def run_search(space: Space, racer: Racer, budget_s: float, seed: int, sample: int = 6,
               presets: Sequence[FsConfig] = ()) -> SearchResult:
    """Screening, refinement and the final race within `budget_s` (see the module's text)."""
    base = space.default(space.filesystems[0].fstype)
    base_name = space.name(base)
    stages: list[StageOutcome] = []
    skipped: list[str] = []
    spent = 0.0

    screen = screening(space, sample, seed)
    first = racer(within_share(StageSpec("screening", _configs(space, screen)[0], base_name,
                                         budget_s * SCREENING_SHARE, 1), PRIOR_IMAGE_S, screening_rank(space, screen)))
    stages.append(first)
    spent += first.elapsed_s
    found = effects(space, first.fit, screen) if first.fit is not None else []
    top = leaders(space, first.fit, first.decision, screen) if first.fit is not None else [base]

    last = first
    left = budget_s - spent
    refine = [c for c in refinement(space, found, top) if c not in (base,)]
    if left * REFINEMENT_SHARE < MIN_STAGE_S:
        skipped.append(f"refinement: {left:.0f} s of the budget left")
    elif refine:
        second = racer(within_share(StageSpec("refinement", _configs(space, [base, *refine])[0], base_name,
                                              left * REFINEMENT_SHARE, None), _image_s(stages)))
        stages.append(second)
        spent += second.elapsed_s
        last = second
        if second.fit is not None:
            by_name = {space.name(c): c for c in [base, *refine]}
            top = leaders(space, second.fit, second.decision, list(by_name.values()))
    left = budget_s - spent
    if left < MIN_STAGE_S:
        skipped.append(f"final: {left:.0f} s of the budget left")
    else:
        finalists = [base, *(c for c in top if c != base)]
        configs, same_as = _configs(space, finalists, presets)
        last = racer(within_share(StageSpec("final", configs, base_name, left, None, same_as=same_as),
                                  _image_s(stages)))
        stages.append(last)
    d = last.decision
    answer = (last.preferred or d.answer) if d else None  # unsettled: what the race leans to, as its report says
    tied = ((answer, *(t for t in d.tied if t != answer)) if answer and not d.settled else d.tied) if d else ()
    best_preset = _best_preset(last, answer, presets)
    return SearchResult(space, tuple(stages), tuple(found), answer, bool(d and d.settled), tied,
                        _advantage(last.fit, answer, base_name), best_preset, tuple(skipped))
