"""The search's space, pruning, screening design and refinement, on a synthetic response surface."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from pickfs.errors import PlanError
from pickfs.fsfacts import Needs, facts_of
from pickfs.model import FsConfig, WorkloadSpec
from pickfs.report.search_text import render
from pickfs.search.design import dimension_ranking, effects, no_difference, refinement, screening
from pickfs.search.driver import StageOutcome, StageSpec, run_search, same_setup
from pickfs.search.outcome import to_dict
from pickfs.search.space import (
    Candidate,
    Dimension,
    Facts,
    FsSpace,
    Space,
    Value,
    built_in,
    from_table,
    prune,
    unsafe_left_out,
)
from pickfs.stats.decision import decide, preference, standing_order
from pickfs.stats.weather import Fit, Spread

# --- the space -----------------------------------------------------------------------------------------


def test_the_built_in_space_has_at_least_40_safe_configurations_and_leaves_out_the_unsafe():
    space = built_in()
    safe = space.expand()
    assert len(safe) >= 40
    names = [c.name for c in safe]
    assert len(set(names)) == len(names)
    assert "ext4+defaults" in names and "xfs+noatime" in names
    assert not any("nobarrier" in n or "writeback" in n for n in names)
    unsafe = built_in(unsafe=True).expand()
    assert any("nobarrier" in c.name for c in unsafe) and len(unsafe) > len(safe)
    said = unsafe_left_out(space)
    assert any(s.startswith("ext4 nobarrier: nobarrier") for s in said)
    assert any(s.startswith("ext4 data-writeback") for s in said)


def test_a_candidate_becomes_a_configuration_with_its_options():
    space = built_in(("xfs",))
    fs = space.of("xfs")
    k_log = [d.name for d in fs.dimensions].index("log size")
    k_atime = [d.name for d in fs.dimensions].index("atime")
    k_sched = [d.name for d in fs.dimensions].index("scheduler")
    choice = [0] * len(fs.dimensions)
    choice[k_log], choice[k_atime], choice[k_sched] = 1, 1, 1
    c = space.config(Candidate("xfs", tuple(choice)))
    assert c.name == "xfs+log128m+noatime+mq-deadline"
    assert c.mkfs_options == ("-l", "size=128m") and c.mount_options == ("noatime",)
    assert c.scheduler == "mq-deadline"
    d = space.config(space.default("xfs"))
    assert d.name == "xfs+defaults" and d.scheduler == "none" and not d.mkfs_options


def test_pruning_names_what_the_machine_lacks_before_anything_runs():
    space = built_in()
    facts = Facts(missing={"btrfs": "mkfs.btrfs is not installed (apt-get install btrfs-progs)"},
                  schedulers=frozenset({"none", "kyber"}), versions={"kernel": (5, 4), "e2fsprogs": (1, 47)})
    pruned = prune(space, facts)
    assert [f.fstype for f in pruned.filesystems] == ["ext4", "xfs"]
    assert "btrfs: left out, mkfs.btrfs is not installed (apt-get install btrfs-progs)" in pruned.pruned
    assert any(p.startswith("ext4 fast commit fastcommit: left out, needs kernel 5.10, this machine has 5.4")
               for p in pruned.pruned)
    assert any("mq-deadline: left out, the kernel offers no mq-deadline scheduler" in p for p in pruned.pruned)
    assert not any("fastcommit" in c.name or "mq-deadline" in c.name for c in pruned.expand())
    # a newer machine keeps them
    kept = prune(space, Facts(versions={"kernel": (6, 1), "e2fsprogs": (1, 47)}))
    assert kept.pruned == () and kept.size() == space.size()
    with pytest.raises(PlanError, match="none of the search space"):
        prune(built_in(("btrfs",)), Facts(missing={"btrfs": "no"}))


def test_a_declared_space_from_the_plan_section():
    space = from_table({"filesystems": ["ext4"], "scheduler": ["none", "bfq"],
                        "ext4": {"atime": ["", "mount:noatime"], "journal size": ["", "mkfs:-J size=128"]}})
    fs = space.of("ext4")
    dims = {d.name: d for d in fs.dimensions}
    assert dims["journal size"].values[1].mkfs == ("-J", "size=128")
    assert dims["scheduler"].values[1].scheduler == "bfq"
    with pytest.raises(PlanError, match="is not KIND:OPTIONS"):
        from_table({"ext4": {"atime": ["", "noatime"]}})
    with pytest.raises(PlanError, match="unknown I/O scheduler"):
        from_table({"scheduler": ["none", "cfq"]})
    with pytest.raises(PlanError, match="has no setting budget"):
        from_table({"budget": 3})
    with pytest.raises(PlanError, match="no built-in space and no dimensions"):
        from_table({"filesystems": ["jfs"]})


# --- a synthetic response surface: two real effects and an interaction ----------------------------------
A, B, C = (Dimension(n, (Value(""), Value(n.lower(), mount=(f"opt_{n.lower()}",)))) for n in ("A", "B", "C"))
D = Dimension("D", (Value(""), Value("d1", mount=("opt_d=1",)), Value("d2", mount=("opt_d=2",))))
SURFACE = Space((FsSpace("ext4", (A, B, C, D)), FsSpace("xfs", (A, C))))
TRUE = {"ext4": (0.20, 0.15, 0.0, 0.0), "xfs": (0.05, 0.0)}  # log effects per value changed
INTERACTION = 0.10  # ext4 A and B together
NOISE = 0.02  # standard error of every level


def truth(c: Candidate) -> float:
    level = sum(e for e, i in zip(TRUE[c.fstype], c.choice, strict=True) if i) - (0.05 if c.fstype == "xfs" else 0)
    if c.fstype == "ext4" and c.choice[0] and c.choice[1]:
        level += INTERACTION
    return level


class Surface:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.by_name = {SURFACE.name(c): c for c in SURFACE.candidates()}
        self.stages: list[StageSpec] = []

    def __call__(self, spec: StageSpec) -> StageOutcome:
        self.stages.append(spec)
        spreads = {c.name: Spread(truth(self.candidate(c)) + self.rng.gauss(0, NOISE), NOISE**2, 30.0, 2, 20, None)
                   for c in spec.configs}
        fit = Fit({}, {}, spreads, (), 0.0, 0.0, (), (), {}, True)
        order = standing_order([c.name for c in spec.configs], {c.name: preference(c, facts_of(c.fstype)) for c in spec.configs})
        decision = decide(fit, order, (), spec.baseline, 0.05, 0.1, 0.05)
        return StageOutcome(spec, "run", fit, decision, (), spec.budget_s / 2, len(spec.configs))

    def candidate(self, config: FsConfig) -> Candidate:
        """The point of the surface a configuration is (a preset by its settings; the surface has no scheduler)."""
        if config.name in self.by_name:
            return self.by_name[config.name]
        plain = replace(config, scheduler=None)
        return next(c for c in SURFACE.candidates() if same_setup(SURFACE.config(c), plain))


@pytest.mark.parametrize("seed", range(12))
def test_the_search_finds_the_optimum_and_reports_no_effect_where_there_is_none(seed):
    racer = Surface(seed)
    result = run_search(SURFACE, racer, 1800.0, seed=seed, sample=2)
    assert result.answer == "ext4+a+b"
    assert [s.spec.name for s in result.stages] == ["screening", "refinement", "final"]
    measurable = {(e.fstype, e.dimension) for e in result.effects if e.measurable}
    assert ("ext4", "A") in measurable and ("ext4", "B") in measurable
    assert not measurable & {("ext4", "C"), ("ext4", "D"), ("xfs", "C")}
    assert {(e.fstype, e.dimension) for e in no_difference(result.effects)} >= {("ext4", "C"), ("ext4", "D"), ("xfs", "C")}
    ranked = dimension_ranking(result.effects)
    assert (ranked[0].fstype, ranked[0].dimension) == ("ext4", "A")
    assert result.advantage is not None and result.advantage.low > 1.3  # e^(0.45) = 1.57 over the defaults
    assert result.configurations < SURFACE.size()


def test_screening_changes_one_value_at_a_time_from_the_defaults_then_samples():
    design = screening(SURFACE, 2, seed=1)
    names = [SURFACE.name(c) for c in design]
    assert names[:8] == ["ext4+defaults", "ext4+a", "ext4+b", "ext4+c", "ext4+d1", "ext4+d2", "xfs+defaults", "xfs+a"]
    assert len(design) == 9 + 2 and len(set(design)) == len(design)


def test_refinement_combines_the_helpers_and_takes_each_out_again():
    rng = random.Random(3)
    design = screening(SURFACE, 0, seed=0)
    spreads = {SURFACE.name(c): Spread(truth(c) + rng.gauss(0, NOISE), NOISE**2, 30.0, 2, 20, None) for c in design}
    fit = Fit({}, {}, spreads, (), 0.0, 0.0, (), (), {}, True)
    found = effects(SURFACE, fit, design)
    leader = Candidate("ext4", (1, 0, 0, 0))
    names = [SURFACE.name(c) for c in refinement(SURFACE, found, [leader])]
    assert names[:2] == ["ext4+a", "ext4+a+b"]
    assert "ext4+b" in names  # the combination with A taken out again
    assert math.isclose(min(e.ratio for e in found if e.dimension == "A" and e.fstype == "ext4"), math.exp(0.2),
                        rel_tol=0.1)


def test_needs_words():
    assert Needs("kernel", (5, 10)).words() == "kernel 5.10"


SURFACE_SPEC = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", ())


def test_a_preset_that_is_a_finalist_setup_is_raced_once_and_named_with_it():
    presets = (FsConfig("ext4", "ext4"),  # every default, as the search's ext4+defaults
               FsConfig("ext4-b", "ext4", (), ("opt_b",)),  # mount options in another order are the same setup
               FsConfig("xfs-c", "xfs", (), ("opt_c",), "mq-deadline"))  # another scheduler: another setup
    racer = Surface(0)
    result = run_search(SURFACE, racer, 1800.0, seed=0, sample=2, presets=presets)
    final = racer.stages[-1]
    names = [c.name for c in final.configs]
    assert "ext4" not in names and "xfs-c" in names
    assert ("ext4", "ext4+defaults") in final.same_as
    for i, a in enumerate(final.configs):
        assert not any(same_setup(a, b) for b in final.configs[i + 1:]), a.name
    assert result.best_preset is not None and result.best_preset.over in {"ext4", "ext4-b", "xfs-c"}
    text = render(to_dict("s", result, SURFACE_SPEC, None, {}))
    assert "preset ext4 as ext4+defaults" in text


def test_when_the_answer_is_the_fastest_preset_the_report_says_so():
    presets = (FsConfig("ab", "ext4", (), ("opt_a", "opt_b")),)
    result = run_search(SURFACE, Surface(1), 1800.0, seed=1, sample=2, presets=presets)
    assert result.answer == "ext4+a+b"
    assert result.best_preset is not None and result.best_preset.same and result.best_preset.over == "ab"
    assert "the fastest preset, ab, is this same setup" in render(to_dict("s", result, SURFACE_SPEC, None, {}))


def test_an_unsettled_final_race_names_what_its_report_prefers():
    """The final race could not settle; its run's report prefers the configuration it leans to on its estimates, and
    so does the search's answer (it named the decision's more preferred one, which the report did not)."""
    base = Surface(3)

    def racer(spec: StageSpec) -> StageOutcome:
        got = base(spec)
        if spec.name != "final" or got.decision is None:
            return got
        other = next(c.name for c in spec.configs if c.name != got.decision.answer)
        return replace(got, decision=replace(got.decision, settled=False, undecided=(other,)), preferred=other)

    result = run_search(SURFACE, racer, 1800.0, seed=3, sample=2)
    final = result.stages[-1]
    assert not result.settled and final.decision is not None
    assert result.answer == final.preferred != final.decision.answer
    assert result.tied[0] == result.answer and final.decision.answer in result.tied
