"""The database's own settings as dimensions of a search, and each stage's standing up within its share."""

from __future__ import annotations

import json
import math
import random

import pytest

from pickfs.errors import PlanError
from pickfs.fsfacts import facts_of
from pickfs.model import FsConfig, Method, Plan, Target, Trial, WorkloadSpec, plan_from_dict, plan_to_dict
from pickfs.report.search_text import render
from pickfs.search.driver import (
    STANDUP_SHARE,
    StageOutcome,
    StageSpec,
    images_of,
    run_search,
    screening_rank,
    within_share,
)
from pickfs.search.outcome import setup, to_dict
from pickfs.search.space import Candidate, Dimension, FsSpace, Space, Value, built_in, from_table, unsafe_left_out
from pickfs.search.stages import standup_per_image
from pickfs.stats.decision import decide, preference, standing_order
from pickfs.stats.weather import Fit, Spread
from pickfs.store.stored import check_plan

SPEC = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", (("duration", 4.0), ("journal_mode", "WAL"), ("scale", 1),
                                                  ("synchronous", "FULL"), ("transactions", 0)))


def _dims(space: Space, fstype: str) -> list[str]:
    return [d.name for d in space.of(fstype).dimensions]


# --- the database's settings as dimensions -----------------------------------------------------------------
def test_the_workload_settings_are_dimensions_and_the_unsafe_ones_are_left_out():
    space = built_in(("ext4",), workload=SPEC, backend="sqlite")
    assert _dims(space, "ext4")[-2:] == ["journal mode", "synchronous"]
    names = [c.name for c in space.expand()]
    assert "ext4+journal-delete" in names and "ext4+noatime+journal-delete" in names
    assert not any("synchronous-normal" in n for n in names)  # NORMAL can lose commits on a power cut
    said = unsafe_left_out(space)
    assert any(s.startswith("ext4 synchronous-normal: synchronous=NORMAL with WAL") for s in said)
    unsafe = built_in(("ext4",), unsafe=True, workload=SPEC, backend="sqlite")
    assert any("synchronous-normal" in c.name for c in unsafe.expand())
    # without a workload (or one with no built-in database settings) the space is the filesystem's alone
    assert "journal mode" not in _dims(built_in(("ext4",)), "ext4")
    assert "journal mode" not in _dims(built_in(("ext4",), workload=WorkloadSpec("fio", "fio")), "ext4")


def test_a_database_value_is_the_other_setting_than_the_workload_own():
    spec = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", (("journal_mode", "DELETE"), ("synchronous", "FULL")))
    space = built_in(("xfs",), workload=spec, backend="sqlite")
    fs = space.of("xfs")
    journal = fs.dimensions[_dims(space, "xfs").index("journal mode")]
    assert [v.label for v in journal.values] == ["", "journal-wal"]
    k = _dims(space, "xfs").index("journal mode")
    choice = [0] * len(fs.dimensions)
    choice[k] = 1
    c = space.config(Candidate("xfs", tuple(choice)))
    assert c.name == "xfs+journal-wal" and c.database == (("journal_mode", "WAL"),)
    assert "database journal_mode=WAL" in c.description


def test_a_configuration_with_database_settings_runs_its_cells_with_them_in_the_same_race():
    plain = FsConfig("ext4+defaults", "ext4")
    delete = FsConfig("ext4+journal-delete", "ext4", database=(("journal_mode", "DELETE"),))
    plan = Plan(Target(), (plain, delete), (SPEC,), Method(), "ext4+defaults")
    a, b = plan.cells()
    assert a.workload is SPEC
    assert b.workload.label == a.workload.label  # one race: the engine groups cells by workload label
    assert b.workload.get("journal_mode") == "DELETE" and b.workload.get("synchronous") == "FULL"
    stored = json.loads(json.dumps(plan_to_dict(plan)))
    check_plan(stored)  # what the results database reads back is checked field by field
    back = plan_from_dict(stored)
    assert back.configs == plan.configs and back.cells() == plan.cells()
    assert "database" not in plain.settings()  # a stored run of named configurations is unchanged


def test_the_answer_prints_the_database_settings_it_ran_with():
    c = FsConfig("ext4+journal-delete", "ext4", database=(("journal_mode", "DELETE"),))
    assert setup(c, SPEC, "sqlite")["database_settings"] == {"journal_mode": "DELETE", "synchronous": "FULL"}


def test_a_declared_database_table():
    t = {"filesystems": ["ext4"], "ext4": {"atime": ["", "mount:noatime"]},
         "database": {"journal": ["", "set:journal_mode=delete", "set:journal_mode=truncate"]}}
    space = from_table(t, SPEC, "sqlite")
    journal = space.of("ext4").dimensions[-1]
    assert journal.name == "journal" and [v.database for v in journal.values[1:]] == [
        (("journal_mode", "DELETE"),), (("journal_mode", "TRUNCATE"),)]
    assert space.size() == 6
    with pytest.raises(PlanError, match="is not KEY=VALUE"):
        from_table({"database": {"journal": ["", "set:journal_mode"]}}, SPEC, "sqlite")
    with pytest.raises(PlanError, match="not a database setting"):
        from_table({"database": {"atime": ["", "mount:noatime"]}}, SPEC, "sqlite")


# --- a search over a database dimension, on a synthetic surface -------------------------------------------
ATIME = Dimension("atime", (Value(""), Value("noatime", mount=("noatime",))))
JOURNAL = Dimension("journal mode", (Value(""), Value("journal-delete", database=(("journal_mode", "DELETE"),))))
DB_SURFACE = Space((FsSpace("ext4", (ATIME, JOURNAL)), FsSpace("xfs", (ATIME, JOURNAL))), workload=SPEC,
                   backend="sqlite")
NOISE = 0.02


class Racer:
    """Levels from a response surface: journal-delete +25%, noatime +0, xfs -10%; standing up an image
    takes `image_s`."""

    def __init__(self, seed: int, image_s: float | None = None) -> None:
        self.rng = random.Random(seed)
        self.image_s = image_s
        self.stages: list[StageSpec] = []

    def level(self, c: FsConfig) -> float:
        return 0.25 * bool(c.database) - 0.10 * (c.fstype == "xfs")

    def __call__(self, spec: StageSpec) -> StageOutcome:
        self.stages.append(spec)
        spreads = {c.name: Spread(self.level(c) + self.rng.gauss(0, NOISE), NOISE**2, 30.0, 2, 20, None)
                   for c in spec.configs}
        fit = Fit({}, {}, spreads, (), 0.0, 0.0, (), (), {}, True)
        order = standing_order([c.name for c in spec.configs], {c.name: preference(c, facts_of(c.fstype)) for c in spec.configs})
        decision = decide(fit, order, (), spec.baseline, 0.05, 0.1, 0.05)
        return StageOutcome(spec, "run", fit, decision, (), spec.budget_s / 2, len(spec.configs), self.image_s)


@pytest.mark.parametrize("seed", range(4))
def test_the_search_finds_a_database_setting_that_helps_and_answers_with_it(seed):
    result = run_search(DB_SURFACE, Racer(seed), 1800.0, seed=seed, sample=1)
    assert result.answer == "ext4+journal-delete"
    measurable = {(e.fstype, e.dimension) for e in result.effects if e.measurable}
    assert ("ext4", "journal mode") in measurable and ("ext4", "atime") not in measurable
    d = to_dict("s", result, SPEC, "sqlite", {})
    assert d["answer"]["setup"]["database_settings"]["journal_mode"] == "DELETE"
    assert "sqlite settings as measured: journal_mode=DELETE, synchronous=FULL" in render(d)


# --- each stage's standing up within its share ------------------------------------------------------------
def _spec(n: int, budget_s: float, blocks: int | None) -> StageSpec:
    return StageSpec("refinement", tuple(FsConfig(f"c{i}", "ext4") for i in range(n)), "c0", budget_s, blocks)


def test_a_stage_stands_up_within_its_share():
    assert images_of(10, 2) == 24 and images_of(10, 1) == 12
    # room for 25 images: the race's two automatic blocks of 24 fit
    assert within_share(_spec(10, 600.0, None), 12.0) == _spec(10, 600.0, None)
    # room for 20: one block of 12 images instead
    one = within_share(_spec(10, 480.0, None), 12.0)
    assert one.blocks == 1 and len(one.configs) == 10 and one.cut.startswith("one block of images, not 2")
    # room for 10: one block, the last configurations left out, the baseline kept
    cut = within_share(_spec(10, 240.0, None), 12.0)
    assert cut.blocks == 1 and [c.name for c in cut.configs] == [f"c{i}" for i in range(8)]
    assert images_of(len(cut.configs), 1) * 12.0 <= 240.0 * STANDUP_SHARE
    assert cut.cut.startswith("one block of 8 of its 10 configurations (c8, c9 left out)")
    # never fewer than the baseline and one other
    assert len(within_share(_spec(10, 10.0, 1), 12.0).configs) == 2


def test_a_screening_cut_keeps_every_filesystem_defaults_then_the_values_alone_then_the_sample():
    result = run_search(DB_SURFACE, Racer(1), 150.0, seed=1, sample=1)  # a 1 min screening: room for 5 images
    screening = result.stages[0].spec
    assert [c.name for c in screening.configs] == ["ext4+defaults", "ext4+noatime", "ext4+journal-delete",
                                                   "xfs+defaults"]
    assert screening.cut.startswith("one block of 4 of its 7 configurations (xfs+noatime, xfs+journal-delete, ")
    assert screening_rank(DB_SURFACE, [Candidate("ext4", (0, 0)), Candidate("ext4", (1, 0)),
                                       Candidate("ext4", (1, 1))]) == [0, 1, 2]


def test_a_slow_stand_up_in_the_screening_cuts_the_next_stage_and_the_report_says_so():
    slow = Racer(1, image_s=60.0)  # a 4.8 min share leaves room for 2 images of a minute each
    result = run_search(DB_SURFACE, slow, 15 * 60.0, seed=1, sample=1)
    screening, refinement = result.stages[0], result.stages[1]
    assert screening.spec.cut == ""  # the prior, 6 s an image, fits the screening's 6 min
    assert refinement.spec.blocks == 1 and refinement.spec.cut
    assert images_of(len(refinement.spec.configs), 1) * 60.0 <= max(
        refinement.spec.budget_s * STANDUP_SHARE, images_of(2, 1) * 60.0)
    assert refinement.spec.configs[0].name == "ext4+defaults"
    text = render(to_dict("s", result, SPEC, "sqlite", {}))
    assert "    cut: one block of" in text


def test_what_standing_up_an_image_took_is_the_median_gap_between_images():
    def prep(t: float, block: int = 0) -> Trial:
        return Trial(run_id="r", cell_index=0, repetition=0, phase="prepare", started=t, elapsed_s=1.0, ok=True,
                     block=block)

    trials = [prep(0.0), prep(10.0), prep(20.0), prep(30.0), prep(200.0, 1),
              Trial(run_id="r", cell_index=0, repetition=0, phase="measured", started=40.0, elapsed_s=1.0, ok=True)]
    assert math.isclose(standup_per_image(trials) or 0.0, 10.0)
    assert standup_per_image(trials[:1]) is None


def test_a_declared_page_size_is_a_database_value_and_a_bad_one_is_refused_before_anything_runs():
    space = from_table({"filesystems": ["ext4"], "database": {"page size": ["", "set:page_size=16384"]}}, SPEC, "sqlite")
    cfg = space.config(Candidate("ext4", tuple(1 if d.name == "page size" else 0 for d in space.of("ext4").dimensions)))
    assert dict(cfg.database) == {"page_size": "16384"} and cfg.name.endswith("+page-16384")
    with pytest.raises(PlanError, match=r"\[search\] ext4 page size page-1000: sqlite-tpcb page_size = '1000' is not a value"):
        from_table({"filesystems": ["ext4"], "database": {"page size": ["", "set:page_size=1000"]}}, SPEC, "sqlite")
    with pytest.raises(PlanError, match="has no setting wal_size"):
        from_table({"filesystems": ["ext4"], "database": {"wal": ["", "set:wal_size=4"]}}, SPEC, "sqlite")
