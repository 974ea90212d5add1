"""The use case under `pickfs run`, its dry run, `pickfs plan check` and a fleet host's job: one typed request,
one function, and the time estimate asking the engine how each workload is measured."""

from __future__ import annotations

import argparse
import ast
from dataclasses import replace
from pathlib import Path

import pytest

from pickfs.engine.choice import how_measured
from pickfs.engine.estimate import estimate
from pickfs.engine.schedule import SIDE_BY_SIDE_BUDGET, Slot, estimate_seconds
from pickfs.errors import PlanError
from pickfs.model import Method, Target, WorkloadSpec
from pickfs.plan import build_plan, configs_from_names, expand_clients
from pickfs.usecases.run import RunRequest, Silent, run_plan
from pickfs.workloads import workload_class

SRC = Path(__file__).resolve().parents[2] / "src" / "pickfs"


def spec(name: str, **settings: object) -> WorkloadSpec:
    return WorkloadSpec(name, name, tuple(sorted(workload_class(name).normalize(settings).items())))


TPCB = spec("sqlite-tpcb", duration=1.0)


def every_import(path: Path) -> list[str]:
    """Every module a file imports, deferred imports inside functions too."""
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


@pytest.mark.parametrize("path", sorted((SRC / "usecases").glob("*.py")), ids=lambda p: p.name)
def test_the_use_case_prints_nothing_and_knows_no_command(path):
    wrong = [m for m in every_import(path)
             if m.startswith(("pickfs.cli", "pickfs.console", "pickfs.report", "pickfs.run_console", "click", "rich"))]
    assert wrong == []


def test_the_fleet_host_side_runs_plans_without_the_cli():
    assert [m for m in every_import(SRC / "fleet" / "hostside.py") if m.startswith("pickfs.cli")] == []


def test_a_request_is_a_plan_or_a_run_to_resume():
    plan = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4"), [TPCB], Method(), None)
    with pytest.raises(PlanError, match="--dry-run checks a new plan"):
        RunRequest(resume="20260101-000000-abcd", dry_run=True)
    with pytest.raises(PlanError, match="a plan or the id of a run to resume"):
        RunRequest()
    with pytest.raises(PlanError, match="a plan or the id of a run to resume"):
        RunRequest(plan=plan, resume="20260101-000000-abcd")
    with pytest.raises(AttributeError):
        RunRequest(plan=plan).dry_run = True  # type: ignore[misc]


def test_a_dry_run_creates_nothing_and_says_what_the_machine_lacks(tmp_path):
    workdir = tmp_path / "wd"
    plan = build_plan(Target(workdir=str(workdir)), configs_from_names("ext4,jfs"), [TPCB], Method(), None)
    events = Silent()
    outcome = run_plan(RunRequest(plan=plan, workdir=str(workdir), results=str(tmp_path / "r.db"), dry_run=True),
                       events)
    assert outcome.status == "dry run" and outcome.run_id is None and outcome.record is None
    assert outcome.preview is not None and outcome.preview.plan == plan
    assert [e.label for e in outcome.preview.estimates] == ["sqlite-tpcb"]
    assert not workdir.exists() and not (tmp_path / "r.db").exists() and events.said == []


def test_the_estimate_of_a_device_target_is_whole_runs_as_the_engine_measures_it():
    """A device holds one filesystem at a time: the engine measures its configurations one at a time, whatever
    the method says, and the estimate counts whole runs (it used to count the side-by-side budget)."""
    plan = build_plan(Target(kind="device", device="/dev/nonexistent", confirm="/dev/nonexistent", workdir="/var/tmp/x"),
                      configs_from_names("ext4,xfs"), [TPCB], Method(), None)
    assert plan.method.side_by_side
    [way] = how_measured(plan)
    assert way.way.name == "one at a time" and not way.sliced
    [est] = estimate(plan)
    expected = sum(estimate_seconds(Slot(c, r), plan.method) for r in range(plan.method.runs) for c in plan.cells())
    assert est.seconds == pytest.approx(expected) and "whole run(s)" in est.how
    assert est.seconds != SIDE_BY_SIDE_BUDGET


def test_client_counts_share_one_budget_in_the_estimate_as_in_the_run():
    """--clients 1,2: the engine gives each client count half the workload's budget; so does the estimate."""
    specs, _ = expand_clients([spec("pgbench")], (1, 2))
    plan = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4,xfs"), specs, Method(), None)
    ways = how_measured(plan)
    assert [w.way.name for w in ways] == ["race", "race"]
    assert [w.method.max_seconds for w in ways] == [SIDE_BY_SIDE_BUDGET / 2] * 2
    assert [e.seconds for e in estimate(plan)] == [SIDE_BY_SIDE_BUDGET / 2] * 2


def test_the_estimate_follows_each_way_of_measuring():
    plan = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4,xfs"),
                      [TPCB, spec("smallfiles")], Method(), None)
    ways = how_measured(plan)
    assert [(w.way.name, w.sliced) for w in ways] == [("race", True), ("whole runs", False)]
    assert [w.way.name for w in how_measured(replace(plan, method=replace(plan.method, race=False)))][0] == \
        "side by side"
    older = replace(plan, method=replace(plan.method, side_by_side=False))
    assert {w.way.name for w in how_measured(older)} == {"one at a time"}
    sliced, whole = estimate(plan)
    assert sliced.seconds == SIDE_BY_SIDE_BUDGET and "whole run(s)" in whole.how


def test_a_fleet_job_asks_for_its_plan_or_the_run_kept_in_it(tmp_path):
    from pickfs.fleet import hostside

    plan_file = tmp_path / "plan.toml"
    plan_file.write_text('[target]\nworkdir = "/var/tmp/x"\n[[config]]\npreset = "ext4"\n'
                         '[[workload]]\nname = "sqlite-tpcb"\n')
    job = tmp_path / "job"
    job.mkdir()
    a = argparse.Namespace(dir=str(job), workdir=str(tmp_path / "wd"), plan=str(plan_file), confirm_device="")
    request = hostside.job_request(a)
    assert request is not None and request.plan is not None and request.resume is None
    assert request.results == str(job / "results.db") and request.workdir == str(tmp_path / "wd")
    assert request.plan.target.workdir == str(tmp_path / "wd")  # the controller's --workdir wins


def test_a_fleet_job_resumes_the_run_kept_in_it_and_leaves_a_complete_one(tmp_path):
    from pickfs.fleet import hostside
    from pickfs.store import ResultStore

    job = tmp_path / "job"
    job.mkdir()
    store = ResultStore(job / "results.db")
    store.create_run("20260101-000000-abcd", "0.1.0", {}, {"hostname": "box"})
    store.set_status("20260101-000000-abcd", "interrupted")
    a = argparse.Namespace(dir=str(job), workdir=str(tmp_path / "wd"), plan=str(tmp_path / "unread.toml"),
                           confirm_device="")
    request = hostside.job_request(a)
    assert request is not None and request.plan is None and request.resume == "20260101-000000-abcd"
    assert request.results == str(job / "results.db")
    store.set_status("20260101-000000-abcd", "complete")
    store.close()
    assert hostside.job_request(a) is None
