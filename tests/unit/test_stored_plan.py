"""A stored plan's method is checked field by field, its nested parts (slices, whole runs, crash test, faults) too,
and a run stored before the parts were split by each flat key (pure)."""

from __future__ import annotations

import pytest

from pickfs.model import Method, Target
from pickfs.plan import build_plan, configs_from_names
from pickfs.plan.flags import workload_specs
from pickfs.store.stored import Damaged, check_plan
from pickfs.usecases.run import plan_record


def _plan() -> dict:  # type: ignore[type-arg]
    plan = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4,xfs"),
                      workload_specs(("sqlite-tpcb",), (), None), Method(), None)
    return plan_record(plan)


def test_a_stored_plan_as_pickfs_writes_it_is_read() -> None:
    assert check_plan(_plan())["method"]["slices"]


@pytest.mark.parametrize(("part", "field", "value", "says"), [
    ("slices", "rounds", "many", "its plan's method slices's rounds is not what pickfs writes"),
    ("whole", "bogus", 1, "its plan's method whole has unknown fields (bogus)"),
    ("crash", None, [1], "its plan's method crash is not a table"),
])
def test_a_damaged_part_of_a_stored_method_is_named(part: str, field: str | None, value: object, says: str) -> None:
    plan = _plan()
    if field is None:
        plan["method"][part] = value
    else:
        plan["method"][part][field] = value
    with pytest.raises(Damaged, match="^" + says.replace("(", r"\(").replace(")", r"\)") + "$"):
        check_plan(plan)


def test_a_flat_key_of_a_run_stored_before_the_parts_is_checked_too() -> None:
    plan = _plan()
    method = plan["method"]
    for part in ("slices", "whole", "crash", "faults"):
        method.pop(part, None)
    method["slice_seconds"] = "long"
    with pytest.raises(Damaged, match="slice_seconds is not what pickfs writes"):
        check_plan(plan)
