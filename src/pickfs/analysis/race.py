"""The race's judge (pure): who is a candidate and in which order, the slices as the race reads them, and the
decision (stats/decision.py) at the plan's margin. The engine's race calls it after every round on what it has
measured (engine/race.py); the analysis calls it on the stored slices, and so reproduces what the race acted on.

The facts differ only in what is known when: while the race runs, a configuration is unsafe when a setting of
its own can lose data (the risks recorded with the run) and no crash test has run yet; the final answer also
counts a crash test that lost data, and ranks one that lost nothing first among the safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pickfs.fsfacts import facts_of, rerun_floor
from pickfs.model import FsConfig, Method, Trial
from pickfs.stats.decision import ALPHA, Decision, copies, decide, preference, standing_order
from pickfs.stats.paired import Obs, primary_value
from pickfs.stats.weather import Fit, fit

TARGET = 0.05  # the default of the plan's target_ci: a 95% interval within +/- 5%
# The degrees of freedom the plan's rerun_sd is known with: those of the estimate behind its default (reruns on the
# reference machine, benchmarks/rerun_variance.py; docs/method.md "What moves a comparison between runs").
RERUN_DF = 25.0


@dataclass(frozen=True)
class Entrant:
    """A configuration in a race, with what the judge needs to know of it."""

    config: FsConfig
    index: int  # its place in the plan
    unsafe: bool  # a setting that can lose data (or, in the final answer, a crash test that lost some)
    reference: bool  # in memory or the raw device: an upper bound or a yardstick, never a candidate
    in_memory: bool
    crash_clean: bool = False  # a crash test that lost nothing and exercised every setting's risk


@dataclass(frozen=True)
class Roles:
    candidates: tuple[str, ...]  # safe disk configurations, most preferred first
    others: tuple[str, ...]  # a setting that can lose data, or a reference
    baseline: str | None
    references: frozenset[str]
    in_memory: frozenset[str]
    # (name, sd, df) of each configuration whose kind moves more from one run to the next than the plan's rerun_sd
    # says (fsfacts `rerun_floor`: btrfs, a setup that stops the cache flushes)
    rerun_kinds: tuple[tuple[str, float, float], ...] = ()
    # (copy, original): a configuration measured again under another name (an A/A check), never a candidate
    copies: tuple[tuple[str, str], ...] = ()

    def copy_of(self, name: str) -> str | None:
        """The configuration `name` is a copy of (None: it is no copy)."""
        return dict(self.copies).get(name)

    def rerun_own(self, method: Method) -> dict[str, tuple[float, float]]:
        """Each such configuration's run-to-run term (sd, df) where it is larger than the plan's; none when the plan
        carries no run-to-run term (rerun_sd 0: the run's own variance alone)."""
        if method.rerun_sd <= 0:
            return {}
        return {name: (sd, df) for name, sd, df in self.rerun_kinds if sd > method.rerun_sd}


def race_roles(entrants: Sequence[Entrant], baseline: str | None) -> Roles:
    """Who is a candidate for the answer, in order of preference: a clean crash test first, then the
    distribution's default, a current format, the fewest settings changed, the plan's order. The baseline is the
    plan's when it is among them, else the first. A copy of another configuration (the same setup under another
    name: an A/A check) is no candidate: one setup gets one call."""
    refs = frozenset(e.config.name for e in entrants if e.reference)
    names = [e.config.name for e in entrants]
    base = baseline if baseline in names else (names[0] if names else None)
    copied = copies([e.config for e in sorted(entrants, key=lambda e: e.index)], base)
    safe = sorted((e for e in entrants if not e.unsafe and not e.reference and e.config.name not in copied),
                  key=lambda e: e.index)
    order = tuple(standing_order([e.config.name for e in safe],
                                 {e.config.name: (not e.crash_clean, *preference(e.config, facts_of(e.config.fstype)))
                                  for e in safe}))
    floors = ((e.config.name, rerun_floor(e.config.fstype, e.config.mount_options)) for e in entrants)
    return Roles(order, tuple(n for n in names if n not in order), base, refs,
                 frozenset(e.config.name for e in entrants if e.in_memory),
                 tuple((n, f.sd, f.df) for n, f in floors if f is not None), tuple(copied.items()))


def race_observation(trial: Trial, primary: str, higher_is_better: bool, whole_run: bool = False) -> Obs | None:
    """A measured trial of a round as the race reads it: its primary figure on the speed scale (a time becomes
    its rate), at the middle of the trial; a whole run (each on its own fresh filesystem) is an image of its
    own. None: not a measured trial of a round, or no figure."""
    if trial.phase != "measured" or not trial.ok or trial.round is None:
        return None
    value = primary_value(trial.metrics, primary)
    if value is None:
        return None
    if not higher_is_better:
        value = 1 / value if value > 0 else 0.0
    o = Obs(trial.block, trial.started + trial.elapsed_s / 2, value, trial.round)
    return replace(o, block=o.round or 0) if whole_run else o


def race_series(trials: Iterable[Trial], names: Mapping[int, str], primary: str, higher_is_better: bool,
                whole_runs: frozenset[str] = frozenset()) -> dict[str, list[Obs]]:
    """Every configuration's observations in the order measured (`names`: cell index -> configuration)."""
    out: dict[str, list[Obs]] = {n: [] for n in names.values()}
    for t in trials:
        name = names.get(t.cell_index)
        o = race_observation(t, primary, higher_is_better, name in whole_runs) if name is not None else None
        if o is not None and name is not None:
            out[name].append(o)
    return out


def race_target(method: Method) -> float:
    """The width a non-candidate's factor must be known within: twice the plan's target (a half-width)."""
    return 2 * (method.target_ci if method.target_ci is not None else TARGET)


def decision_at(f: Fit, roles: Roles, method: Method, alpha: float = ALPHA) -> Decision:
    """The decision on a fit at the plan's margin, at level `alpha`."""
    return decide(f, roles.candidates, roles.others, roles.baseline, method.margin, race_target(method), alpha)


def judge(series: Mapping[str, Sequence[Obs]], roles: Roles, method: Method,
          alpha: float = ALPHA) -> tuple[Fit, Decision] | None:
    """The race's weather and its decision on the slices so far, at the plan's margin (None: too few to fit)."""
    f = fit({k: list(v) for k, v in series.items() if v}, roles.references, roles.in_memory, method.rerun_sd,
            RERUN_DF, roles.rerun_own(method))
    if f is None:
        return None
    return f, decision_at(f, roles, method, alpha)


def measured_s(series: Mapping[str, Sequence[Obs]]) -> float:
    """The seconds a race has measured for: from the middle of its first slice to the middle of its last (what
    the analysis reads as its minutes, and the time a projection of more time starts from)."""
    times = [o.t for obs in series.values() for o in obs]
    return max(times) - min(times) if times else 0.0


def decision_record(decision: Decision | None) -> dict[str, Any] | None:
    """A decision as plain data, as the race records it with the run (pure)."""
    if decision is None:
        return None
    return {"settled": decision.settled, "answer": decision.answer, "undecided": list(decision.undecided),
            "out": [list(x) for x in decision.out], "decided": [list(x) for x in decision.decided],
            "pending": list(decision.pending), "margin": decision.margin}


def decision_from_record(d: Mapping[str, Any]) -> Decision:
    """A recorded decision read back (pure); ValueError when it is not one `decision_record` writes."""
    try:
        pairs = {k: tuple((str(n), str(why)) for n, why in d[k]) for k in ("out", "decided")}
        answer = d["answer"]
        return Decision(bool(d["settled"]), None if answer is None else str(answer),
                        tuple(str(n) for n in d["undecided"]), pairs["out"], pairs["decided"],
                        tuple(str(n) for n in d["pending"]), float(d["margin"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a recorded decision: {exc}") from None
