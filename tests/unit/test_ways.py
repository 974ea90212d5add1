"""The ways of measuring: one registry (engine/choice.py `WAYS`) that the executor, the dry run, the time estimate
and the run's first line all ask, so that they describe the same method; flags become a plan in plan/ only, with
one rule for a share and one default margin."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pickfs.cli.plan_check import method_lines
from pickfs.engine.capacity import CAPACITY_SEARCH
from pickfs.engine.choice import WAYS, how_measured
from pickfs.engine.estimate import estimate
from pickfs.engine.race import RACE
from pickfs.engine.sidebyside import SIDE_BY_SIDE
from pickfs.engine.wholeruns import ONE_AT_A_TIME, WHOLE_RUNS
from pickfs.errors import PlanError
from pickfs.model import Method, Target
from pickfs.plan import build_plan, config_from_table, configs_from_names, expand_clients
from pickfs.plan.flags import workload_specs
from pickfs.plan.values import parse_share
from pickfs.usecases.run import method_words

DEVICE = Target(kind="device", device="/dev/nonexistent", confirm="/dev/nonexistent", workdir="/var/tmp/x")


def test_a_device_targets_dry_run_says_one_at_a_time_as_the_executor_measures_it():
    """A device holds one filesystem at a time: the executor measures one configuration at a time, whatever the
    method says. The dry run said 'side by side' (it described the method from its flags)."""
    plan = build_plan(DEVICE, configs_from_names("ext4,xfs"), workload_specs((), (), None), Method(), None)
    assert plan.method.side_by_side
    assert [w.way for w in how_measured(plan)] == [ONE_AT_A_TIME]
    lines = method_lines(plan)
    assert lines[0].startswith("one at a time (sqlite-tpcb): 5 run(s) per cell"), lines
    assert not any("side by side" in line or "slice" in line for line in lines), lines
    assert method_words(plan).startswith("one at a time, 5 runs each")
    [est] = estimate(plan)
    assert "whole run(s)" in est.how


def test_the_dry_run_names_each_way_the_executor_takes_with_its_workloads():
    plan = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4,xfs"),
                      workload_specs(("sqlite-tpcb", "smallfiles"), (), None), Method(), None)
    assert [w.way for w in how_measured(plan)] == [RACE, WHOLE_RUNS]
    lines = method_lines(plan)
    assert lines[0].startswith("race (sqlite-tpcb): every configuration built")
    assert any(line.startswith("whole runs (smallfiles): 5 whole run(s) per configuration") for line in lines)
    assert method_words(plan).startswith("race, automatic blocks, rounds until the answer is settled at a 5% margin")
    no_race = replace(plan, method=replace(plan.method, race=False))
    assert [w.way for w in how_measured(no_race)] == [SIDE_BY_SIDE, WHOLE_RUNS]
    assert method_lines(no_race)[0].startswith("side by side (sqlite-tpcb): ")
    older = replace(plan, method=replace(plan.method, side_by_side=False))
    assert method_lines(older)[0].startswith("one at a time (sqlite-tpcb, smallfiles): ")
    search = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4,xfs"),
                        workload_specs(("sqlite-tpcb",), (), None), Method(latency_target="p99<=5ms"), None)
    assert [w.way for w in how_measured(search)] == [CAPACITY_SEARCH]
    assert method_lines(search)[0].startswith("capacity search (sqlite-tpcb): ")


def test_every_way_describes_itself_and_the_registry_ends_with_one_that_fits_anything():
    plan = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4"), workload_specs((), (), None),
                      Method(), None)
    assert len({w.name for w in WAYS}) == len(WAYS)
    assert WAYS[-1].fits(plan, plan.workloads[0])
    for way in WAYS:
        assert way.describe(Method(latency_target="p99<=5ms")) and way.words(Method(latency_target="p99<=5ms"))


@pytest.mark.parametrize("given", ["70", 70, "1"])
def test_a_share_has_one_rule_in_a_plan_file_and_in_a_flag(given):
    """A bare number of 1 or more reads as a percentage: the flags refused it, a plan's age took 70 as 7000%."""
    with pytest.raises(PlanError, match="is read as a share"):
        parse_share(given, "--margin", "--margin 5%", upper=0.5)
    with pytest.raises(PlanError, match="is read as a share"):
        config_from_table({"name": "aged", "fs": "ext4", "age": given}, 0)
    assert parse_share("70%", "age", "age = 70%") == pytest.approx(0.7)
    assert parse_share(0.05, "--margin", "--margin 5%", upper=0.5) == 0.05


def test_the_dry_run_gives_each_workload_the_budget_it_is_measured_with():
    """Client counts share one workload's budget; another workload of the same way has its own. The dry run
    grouped workloads by way alone and described all of them by the first one's method (pgbench at 1, 2, 4
    clients and sqlite-tpcb: one "3 min per workload" line for all)."""
    pgbench, sqlite = workload_specs(("pgbench", "sqlite-tpcb"), (), None)
    specs = [*expand_clients([pgbench], [1, 2, 4])[0], sqlite]
    plan = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4,xfs"), specs, Method(), None)
    assert [w.way for w in how_measured(plan)] == [RACE] * 4
    lines = method_lines(plan)
    heads = [line.split(":")[0] for line in lines if line.startswith("race")]
    assert heads == ["race (pgbench-c1, pgbench-c2, pgbench-c4)", "race (sqlite-tpcb)"], lines
    budgets = [line.strip() for line in lines if line.strip().startswith("budget:")]
    assert budgets[0].startswith("budget: 3 min per workload") and budgets[1].startswith("budget: 9 min"), budgets
    assert len(method_words(plan).split("; ")) == 2


def test_the_estimate_and_the_dry_run_say_what_the_capacity_search_measures_until_and_on_how_many_blocks():
    """The estimate worded a capacity search's end as the race's ("until the recommendation is settled") and the
    dry run promised it automatic blocks; it steps each rate on one block unless the plan names more."""
    search = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4,xfs"),
                        workload_specs(("sqlite-tpcb",), (), None), Method(latency_target="p99<=5ms"), None)
    [way] = how_measured(search)
    assert way.method.slices.blocks == 1
    [est] = estimate(search)
    assert "then until each one's highest rate within" in est.how and "recommendation" not in est.how, est.how
    assert "(1 block(s))" in est.how or "built" not in est.how
    lines = method_lines(search)
    assert lines[0].startswith("capacity search (sqlite-tpcb): every configuration built 1 time(s)"), lines
    assert method_words(search).startswith("capacity search, 1 block(s), steps to the highest rate within")
    race = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4,xfs"),
                      workload_specs(("sqlite-tpcb",), (), None), Method(), None)
    [est] = estimate(race)
    assert f"then until {RACE.until(race.method)} or" in est.how
