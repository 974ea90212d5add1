"""The race's decision (pure): which configuration to recommend, or that the run cannot tell yet.

Comparisons come from the weather model (stats/weather.py): the difference of two configurations'
levels, its variance the sum of theirs, Satterthwaite's degrees of freedom. Each level's variance
carries what moves it from one run to the next (the plan's `rerun_sd`), so every interval and
every decision below holds across reruns, not only within the run; the part of a comparison's
variance that is that term (`Contrast.floor`) no more measuring shrinks.

The decision works with a practical margin m (default 5%): the smallest difference a user cares
about. Safe candidates are ranked by preference first (the caller's order: safety, the
distribution's default, a current format over a legacy one, fewest settings changed, plan order),
never by a noisy estimate. Then, with one-sided 95% bounds:
- a candidate is OUT when another is faster than it by more than the margin (its lower bound of
  the ratio over it exceeds 1 + m, Bonferroni over the candidates);
- the ANSWER is the most preferred candidate that is not out;
- another candidate is DECIDED when it cannot be faster than the answer by more than the margin
  (its upper bound of the ratio over the answer is at most 1 + m): within the margin, preference
  wins (an equivalence-style test of "not better by more than m"); a true 6% advantage at a 5%
  margin is never decided this way, it must win instead;
- candidates neither out nor decided are UNDECIDED; the decision is settled when none is left. An
  unsettled decision LEANS to the answer it would give on the estimates alone (`leaning`): that is
  the configuration an unsettled run prefers.
Configurations that are not candidates (a setting that can lose commits, or a reference such as
tmpfs and the raw device) are decided when their factor against the baseline is known within the
run's target as far as measuring can narrow it (their 95% interval's half-width without the
run-to-run part, which no run narrows: a kind that moves from run to run by more than the target
would otherwise never be known), or when they cannot be faster than the answer by more than the
margin (then their price buys nothing).

A COPY of a configuration (the same setup measured again under another name, an A/A check: `copies`) is never a
candidate: it checks the method, and two copies of one setup called differently would answer one question twice.
It is decided like the other non-candidates, and its factor against its original is the check.

Comparisons shown against the baseline are simultaneous 95% intervals (Bonferroni over every
comparison shown), and a comparison is called different exactly when its interval excludes 1:
the verdict and the interval beside it always agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from scipy import stats as sps

from pickfs.model import DEFAULT_MARGIN, FsConfig
from pickfs.stats.paired import PairedComparison
from pickfs.stats.weather import Fit

ALPHA = 0.05
# Decisions during the race are taken at 1% (one-sided): the race looks after every round, and a stricter
# level keeps low the chance of letting a configuration go on early noise; the report decides at ALPHA.
RACE_ALPHA = 0.01


class TypeFacts(Protocol):
    """What the preference asks of a configuration's filesystem type. The caller passes it (pickfs.fsfacts
    `facts_of(config.fstype)`), so that stats/ imports only the model and a new type's facts are honoured."""

    @property
    def distribution_default(self) -> bool: ...  # what the distribution installs (plain ext4)

    @property
    def legacy(self) -> bool: ...  # an older on-disk format kept for compatibility (ext2, ext3)


def is_distribution_default(config: FsConfig, facts: TypeFacts) -> bool:
    return (facts.distribution_default and not config.mkfs_options and not config.mount_options
            and config.scheduler in (None, "none", "mq-deadline"))


def settings_changed(config: FsConfig) -> int:
    return len(config.mkfs_options) + len(config.mount_options) + (config.scheduler not in (None, "none", "mq-deadline"))


def preference(config: FsConfig, facts: TypeFacts) -> tuple[bool, bool, int]:
    """Among configurations within the margin of each other: the distribution's default first, then a
    current format over a legacy one, then the fewest settings changed (a sort key: lower first). `facts`:
    those of the configuration's filesystem type."""
    return not is_distribution_default(config, facts), facts.legacy, settings_changed(config)


@dataclass(frozen=True)
class Contrast:
    """log(a / b): estimate, standard error, degrees of freedom; `floor`, the part of se^2 that moves from one run
    to the next (more measuring in this run does not shrink it)."""

    est: float
    se: float
    df: float
    floor: float = 0.0

    @property
    def within(self) -> float:
        """The part of se^2 that more measuring shrinks."""
        return max(self.se * self.se - self.floor, 0.0)

    @property
    def measured(self) -> Contrast:
        """The same comparison without its run-to-run part: as well as this run's slices know it."""
        return Contrast(self.est, math.sqrt(self.within), self.df)

    def bound(self, alpha: float, upper: bool) -> float:
        """A one-sided (1 - alpha) bound of log(a / b)."""
        if self.se <= 0:
            return self.est
        q = float(sps.t.ppf(1 - alpha, self.df)) * self.se
        return self.est + q if upper else self.est - q

    def interval(self, level: float) -> tuple[float, float]:
        a = (1 - level) / 2
        return self.bound(a, False), self.bound(a, True)

    @property
    def p(self) -> float:
        if self.se <= 0:
            return 1.0 if self.est == 0 else 0.0
        return float(2 * sps.t.sf(abs(self.est / self.se), self.df))


def contrast(fit: Fit, a: str, b: str) -> Contrast | None:
    sa, sb = fit.spreads.get(a), fit.spreads.get(b)
    if sa is None or sb is None:
        return None
    var = sa.var + sb.var
    if var <= 0 or not (math.isfinite(sa.df) and math.isfinite(sb.df)) or sa.df <= 0 or sb.df <= 0:
        return None
    df = var * var / (sa.var**2 / sa.df + sb.var**2 / sb.df)
    return Contrast(sa.level - sb.level, math.sqrt(var), df, sa.rerun_var + sb.rerun_var)


def against_baseline(fit: Fit, baseline: str, level: float = 0.95) -> dict[str, PairedComparison]:
    """Every configuration against the baseline: simultaneous intervals (Bonferroni over all of
    them), the same adjustment on the p-values, significant exactly when the interval excludes 1."""
    pairs = {n: c for n in fit.spreads if n != baseline and (c := contrast(fit, n, baseline)) is not None}
    m = max(1, len(pairs))
    out = {}
    for name, c in pairs.items():
        lo, hi = c.interval(1 - (1 - level) / m)
        p = c.p
        sa, sb = fit.spreads[name], fit.spreads[baseline]
        mkfs = fit.image_sd**2 * (1 / sa.images + 1 / sb.images)  # the part one mkfs against the next puts in
        out[name] = PairedComparison(math.exp(c.est), math.exp(lo), math.exp(hi), p, min(1.0, p * m),
                                     lo > 0 or hi < 0, n=sa.slices, blocks=sa.images, df=c.df,
                                     block_share=min(1.0, mkfs / c.se**2) if c.se > 0 else 0.0,
                                     stalled=fit.stalled.get(name, 0))
    return out


@dataclass(frozen=True)
class Decision:
    """Where the race stands: the answer (when settled, the recommendation), who is out, decided or
    undecided, and why, in one line each."""

    settled: bool
    answer: str | None
    undecided: tuple[str, ...]  # candidates that could still be the answer (the answer excluded)
    out: tuple[tuple[str, str], ...]  # (name, why) slower than another by more than the margin
    decided: tuple[tuple[str, str], ...]  # (name, why) settled against the answer or the baseline
    pending: tuple[str, ...]  # non-candidates whose factor is not yet known within the target
    margin: float

    @property
    def finished(self) -> tuple[str, ...]:
        """Configurations whose place is known: they can leave the rotation."""
        return tuple(n for n, _ in (*self.out, *self.decided))

    @property
    def done(self) -> bool:
        """Settled, and every non-candidate's factor known: the race can stop."""
        return self.settled and not self.pending

    @property
    def tied(self) -> tuple[str, ...]:
        """The answer and whatever could still beat it by more than the margin."""
        return ((self.answer,) if self.answer else ()) + self.undecided


def _pct(x: float) -> str:
    return f"{math.exp(x) - 1:+.0%}"


def decision_alpha(alpha: float, alive: int) -> float:
    """The level of the lower bounds that rule a candidate out among `alive` candidates (Bonferroni)."""
    return alpha / max(alive - 1, 1)


def decide(fit: Fit, candidates: Sequence[str], others: Sequence[str], baseline: str | None,
           margin: float = DEFAULT_MARGIN, target: float = 0.10, alpha: float = ALPHA) -> Decision:
    """The decision on what has been measured so far (see the module's text). `candidates` are in
    order of preference; `others` are the configurations that are not (unsafe ones, references)."""
    edge = math.log1p(margin)
    alive = [c for c in candidates if c in fit.spreads]
    out: list[tuple[str, str]] = []
    while len(alive) > 1:
        level = decision_alpha(alpha, len(alive))
        beaten = []
        for c in alive:
            for d in alive:
                con = contrast(fit, d, c) if d != c else None
                if con is not None and con.bound(level, upper=False) > edge:
                    beaten.append((c, f"{d} is faster by more than {margin:.0%}: {_pct(con.est)}, at least "
                                      f"{_pct(con.bound(level, upper=False))}"))
                    break
        if not beaten:
            break
        out += beaten
        alive = [c for c in alive if c not in {b for b, _ in beaten}]
    answer = alive[0] if alive else None
    decided: list[tuple[str, str]] = []
    undecided: list[str] = []
    for s in alive[1:]:
        con = contrast(fit, s, answer) if answer else None
        if con is not None and con.bound(alpha, upper=True) <= edge:
            decided.append((s, f"not faster than {answer} by more than {margin:.0%}"
                               f": {_pct(con.est)}, at most {_pct(con.bound(alpha, upper=True))}"))
        else:
            undecided.append(s)
    pending = []
    for o in others:
        if o not in fit.spreads:
            continue
        why = _other_decided(fit, o, answer, baseline, edge, target, alpha)
        if why:
            decided.append((o, why))
        else:
            pending.append(o)
    nothing_to_decide = not candidates
    return Decision((answer is not None and not undecided) or nothing_to_decide, answer, tuple(undecided), tuple(out), tuple(decided),
                    tuple(pending), margin)


def leaning(fit: Fit, candidates: Sequence[str], margin: float = DEFAULT_MARGIN) -> str | None:
    """The answer the decision would give if every estimate were the truth: candidates slower than another by more
    than the margin (on the estimates alone) are out, round by round, and the most preferred left is the answer.
    An unsettled race prefers it: a run that settles and one that does not, of the same truth, then prefer the
    same configuration (the decision itself keeps the more preferred until another is faster beyond doubt). The
    fastest candidate is never out, so there is one whenever a candidate was measured."""
    edge = math.log1p(margin)
    alive = [c for c in candidates if c in fit.spreads]
    while len(alive) > 1:
        beaten = {c for c in alive
                  if any((con := contrast(fit, d, c)) is not None and con.est > edge for d in alive if d != c)}
        if not beaten:
            break
        alive = [c for c in alive if c not in beaten]
    return alive[0] if alive else None


def _other_decided(fit: Fit, name: str, answer: str | None, baseline: str | None, edge: float, target: float,
                   alpha: float) -> str:
    """Why a non-candidate's place is known ('' while it is not)."""
    if answer is not None and answer != name:
        con = contrast(fit, name, answer)
        if con is not None and con.bound(alpha, upper=True) <= edge:
            return f"not faster than {answer} by more than {math.expm1(edge):.0%}"
    ref = baseline if baseline is not None and baseline != name else answer
    con = contrast(fit, name, ref) if ref is not None and ref != name else None
    if con is not None:
        lo, hi = con.measured.interval(1 - alpha)
        if (hi - lo) / 2 <= math.log1p(target):
            lo, hi = con.interval(1 - alpha)
            return (f"its factor against {ref} is known within {target:.0%}{beyond_run(con, target, alpha)} "
                    f"({math.exp(lo):.2f}x to {math.exp(hi):.2f}x)")
    return ""


def beyond_run(con: Contrast, target: float, alpha: float) -> str:
    """', as far as measuring narrows it' when what moves the comparison from run to run keeps its whole interval
    wider than the target (then no run could know it within the target); '' otherwise."""
    lo, hi = con.interval(1 - alpha)
    return ", as far as measuring narrows it" if (hi - lo) / 2 > math.log1p(target) else ""


def same_setup(a: FsConfig, b: FsConfig) -> bool:
    """Whether two configurations build the same filesystem the same way (pure): on a loop image an unset
    scheduler is the loop device's own, none; an aged one is aged alike."""
    return (a.fstype == b.fstype and a.mkfs_options == b.mkfs_options and set(a.mount_options) == set(b.mount_options)
            and (a.scheduler or "none") == (b.scheduler or "none") and dict(a.database) == dict(b.database)
            and a.path == b.path and (a.age, a.age_rounds, a.age_seed) == (b.age, b.age_rounds, b.age_seed))


def copies(configs: Sequence[FsConfig], first: str | None = None) -> dict[str, str]:
    """Each configuration that is a copy of another (the same setup under another name) -> its original: `first`
    (the baseline) when it is of that setup, else the first of the setup in the order given (pure)."""
    out: dict[str, str] = {}
    ordered = sorted(configs, key=lambda c: c.name != first)  # stable: the rest in the order given
    for i, c in enumerate(ordered):
        if c.name in out:
            continue
        for d in ordered[i + 1:]:
            if d.name not in out and d.name != c.name and same_setup(c, d):
                out[d.name] = c.name
    return out


def standing_order(names: Sequence[str], rank: Mapping[str, tuple[object, ...]]) -> list[str]:
    """Candidates in order of preference (the caller's rank key, then their order as given)."""
    pos = {n: i for i, n in enumerate(names)}
    return sorted(names, key=lambda n: (rank.get(n, ()), pos[n]))
