from pathlib import Path

import pytest

from pickfs.plan import load_plan_file

EXAMPLES = sorted((Path(__file__).parent.parent.parent / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_shipped_examples_are_valid_plans(path):
    plan = load_plan_file(path)
    assert plan.configs and plan.workloads


def test_examples_exist():
    assert len(EXAMPLES) >= 2


def test_durability_example_warns_about_the_two_setting_config():
    plan = load_plan_file(next(p for p in EXAMPLES if p.name == "sqlite-durability.toml"))
    assert len(plan.warnings) == 2 and "ext4-noatime-deadline" in plan.warnings[0]
    assert plan.warnings[1].startswith("on images the scheduler setting changes only each loop device's queue")
