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


# -- issue 18.3: every example finishes as shipped within about 10 minutes on a 2-core VM ----------
ROOT = Path(__file__).parent.parent.parent
SHIPPED_BOUND_S = 10 * 60


def _header_commands(path: Path) -> list[str]:
    """The `sudo pickfs ...` lines of an example's header comment."""
    lines = path.read_text().splitlines()
    header = [x for x in lines if x.startswith("#")]
    return [x.lstrip("# ").removeprefix("sudo ") for x in header if x.lstrip("# ").startswith("sudo pickfs ")]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_is_measured_side_by_side(path):
    assert load_plan_file(path).method.side_by_side


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_with_known_lengths_is_estimated_under_ten_minutes(path):
    """plan check's first-run estimate (no stored run), where it is more than a guess: side by
    side, a sliceable workload's time is its budget or its fixed rounds. A command's or a file
    tree's run has no length until it has run once (30 s is the guess), so those are left out."""
    from pickfs.engine.estimate import estimate
    from pickfs.workloads import workload_class

    plan = load_plan_file(path)
    known = [w.label for w in plan.workloads if workload_class(w.name).sliceable]
    seconds = sum(e.seconds for e in estimate(plan) if e.label in known)
    assert seconds <= SHIPPED_BOUND_S, f"{path.name}: about {seconds / 60:.1f} min"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_header_gives_its_own_shipped_command_and_the_case_studies_table_lists_it(path):
    commands = _header_commands(path)
    assert commands and f"--plan examples/{path.name}" in commands[0]
    studies = (ROOT / "docs" / "case-studies.md").read_text()
    table = studies[studies.index("\n## The shipped examples, measured\n"):]
    section = table[:table.index("\n#", 1)] if "\n#" in table[1:] else table  # up to the next heading
    assert f"`{commands[0]}`" in section
