"""The plan schema: the one declaration of every plan key, that the parser checks against and that
docs/plan.md is generated from. These tests fail when the three drift apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pickfs.errors import PlanError
from pickfs.model import Method
from pickfs.plan import aging_fields, load_plan_file, parse_clients, parse_memory, parse_plan_text, parse_scale
from pickfs.plan.method import check_method, check_method_ranges
from pickfs.plan.reference import COMMAND, EXAMPLE, render_reference
from pickfs.plan.schema import CONFIG, METHOD_KEYS, PRODUCTION, SECTIONS, TARGET, TOP_KEYS, Key, Span
from pickfs.plan.workload_keys import setting_keys
from pickfs.workloads import REGISTRY
from pickfs.workloads.command import SERVER_SETTINGS

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "plan.md"


def test_docs_plan_md_is_what_the_schema_renders():
    assert REFERENCE.exists(), f"docs/plan.md is missing: run `.venv/bin/{COMMAND}` in the repository"
    assert REFERENCE.read_text(encoding="utf-8") == render_reference(), (
        f"docs/plan.md differs from the plan schema: run `.venv/bin/{COMMAND}` in the repository and commit it")


def test_the_reference_names_every_key_of_every_section_and_workload():
    text = render_reference()
    for section in SECTIONS:
        for key in section.keys:
            assert f"| `{key.name}` |" in text, key.name
    for cls in REGISTRY.values():
        assert f"### {cls.name}\n" in text
        for name in cls.setting_names():
            assert f"| `{name}` |" in text, (cls.name, name)


def test_the_example_at_the_top_of_the_reference_is_a_valid_plan(tmp_path):
    path = tmp_path / "example.toml"
    path.write_text(EXAMPLE)
    plan = load_plan_file(path, workdir=str(tmp_path / "wd"))
    assert [c.name for c in plan.configs] == ["ext4", "xfs", "ext4-noatime"]
    assert plan.workloads[0].name == "sqlite-tpcb" and plan.target.memory_bytes == 1024**3
    assert "```toml\n" + EXAMPLE in render_reference()


def test_method_keys_are_the_method_fields_with_their_defaults():
    plan_fields = Method().flat()
    del plan_fields["crash_size_auto"]  # said by the absence of crash_size, not a key of its own
    assert set(METHOD_KEYS) == set(plan_fields)
    assert {k: v.default for k, v in METHOD_KEYS.items()} == plan_fields


def test_top_level_keys_are_the_schema_sections_and_tables():
    assert {"target", "method", "config", "workload", "fs", "baseline", "memory", "scale", "clients"} == TOP_KEYS
    with pytest.raises(PlanError) as err:
        parse_plan_text("colour = 1\n")
    assert err.value.hint == f"valid keys: {', '.join(sorted(TOP_KEYS))}"


@pytest.mark.parametrize(("table", "keys", "text"), [
    ("[target]", TARGET.names(), "[target]\nbogus = 1\n"),
    ("[method]", set(METHOD_KEYS), "[method]\nbogus = 1\n"),
    ("[[config]] #1", CONFIG.names(), "[[config]]\nfs = \"ext4\"\nbogus = 1\n"),
])
def test_each_table_accepts_exactly_its_schema_keys(tmp_path, table, keys, text):
    path = tmp_path / "p.toml"
    path.write_text(text)
    with pytest.raises(PlanError) as err:
        load_plan_file(path, workdir=str(tmp_path / "wd"))
    assert err.value.message == f"{table} has unknown key(s) bogus"
    assert err.value.hint == f"valid keys: {', '.join(sorted(keys))}"


@pytest.mark.parametrize("key", [k for k in (*TARGET.keys, *CONFIG.keys) if k.value_type == "string"],
                         ids=lambda k: k.name)
def test_a_string_key_of_the_schema_refuses_a_number_with_its_example(tmp_path, key: Key):
    section = "[target]" if key in TARGET.keys else "[[config]]"
    path = tmp_path / "p.toml"
    path.write_text(f"{section}\n{key.name} = 7\n")
    with pytest.raises(PlanError) as err:
        load_plan_file(path, workdir=str(tmp_path / "wd"))
    assert err.value.message.endswith(f"{key.name} must be a string, not a whole number")
    assert err.value.hint == f"e.g. {key.example}"


def _inside_and_outside(span: Span, step: float) -> tuple[list[float], list[float]]:
    """Values the span holds (its closed bounds) and values just beyond each bound."""
    inside, outside = [], []
    for bound, is_open, sign in ((span.low, span.low_open, -1), (span.high, span.high_open, 1)):
        if bound is None:
            continue
        (outside if is_open else inside).append(bound)
        outside.append(bound + sign * step)
    return inside, outside


def _method_with(key: str, value: float) -> None:
    method = Method().but(**{key: value})
    check_method_ranges(method)
    check_method(method)


@pytest.mark.parametrize("key", [k for k in METHOD_KEYS.values() if k.span is not None], ids=lambda k: k.name)
def test_the_method_ranges_the_reference_states_are_the_ones_enforced(key: Key):
    assert key.span is not None and key.python is not None
    step = 1 if key.python is int else 0.001
    inside, outside = _inside_and_outside(key.span, step)
    for value in inside:
        _method_with(key.name, key.python(value))
    for value in outside:
        with pytest.raises(PlanError):
            _method_with(key.name, key.python(value))


@pytest.mark.parametrize(("key", "check", "step", "write"), [
    (PRODUCTION.key("memory"), parse_memory, 1, int),
    (PRODUCTION.key("scale"), parse_scale, 0.001, float),
    (PRODUCTION.key("clients"), lambda v: parse_clients([v]), 1, int),
    (CONFIG.key("age"), lambda v: aging_fields({"age": v}, "[[config]] #1"), 0.001, float),
    (CONFIG.key("age_rounds"), lambda v: aging_fields({"age": 0.5, "age_rounds": v}, "[[config]] #1"), 1, int),
    (CONFIG.key("age_seed"), lambda v: aging_fields({"age": 0.5, "age_seed": v}, "[[config]] #1"), 1, int),
], ids=lambda x: x.name if isinstance(x, Key) else "")
def test_the_other_ranges_the_reference_states_are_the_ones_enforced(key: Key, check: Any, step: float, write: Any):
    assert key.span is not None
    inside, outside = _inside_and_outside(key.span, step)
    for value in inside:
        check(write(value))
    for value in outside:
        if value < 0:
            continue  # below zero the parser refuses it as no number at all
        with pytest.raises(PlanError):
            check(write(value))


# -- each workload's settings -----------------------------------------------------------------------------------
def _context(name: str, key: str) -> dict[str, Any]:
    """Settings a value of `key` needs beside it to be checked on its own."""
    if name == "command":
        server = next((s for s, keys in SERVER_SETTINGS.items() if key in keys), "")
        return {"command": "true", **({"server": server} if server and key != "server" else {})}
    if key in ("arrivals", "latency_limit") and name.startswith("fileio"):  # what fio can pace
        return {"rate": 100, "read_share": 1, "fsync_every": 0, "threads": 1}
    if key in ("arrivals", "latency_limit"):
        return {"rate": 100}
    if name == "pgbench" and key in ("clients", "threads"):
        return {"clients": 1, "threads": 1}
    if name == "tpcc" and key == "backend":
        return {"clients": 1}
    return {}


WORKLOAD_KEYS = [(cls, key) for cls in REGISTRY.values() for key in setting_keys(cls)]


@pytest.mark.parametrize(("cls", "key"), WORKLOAD_KEYS, ids=lambda x: getattr(x, "name", ""))
def test_every_workload_setting_is_described(cls, key: Key):
    assert key.description, f"add a description of {cls.name} {key.name} to SETTING_TEXT in plan/workload_keys.py"


@pytest.mark.parametrize(("cls", "key"), [(c, k) for c, k in WORKLOAD_KEYS if k.choices], ids=lambda x: getattr(x, "name", ""))
def test_every_choice_the_reference_lists_is_accepted_and_others_are_not(cls, key: Key):
    for choice in key.choices:
        value = [choice] if key.several else choice
        cls.normalize({**_context(cls.name, key.name), key.name: value})
    with pytest.raises(PlanError):
        value = ["no-such-choice"] if key.several else "no-such-choice"
        cls.normalize({**_context(cls.name, key.name), key.name: value})


@pytest.mark.parametrize(("cls", "key"), [(c, k) for c, k in WORKLOAD_KEYS if k.span], ids=lambda x: getattr(x, "name", ""))
def test_every_workload_range_the_reference_states_is_enforced(cls, key: Key):
    assert key.span is not None
    step = 1 if isinstance(key.default, int) else 0.001
    inside, outside = _inside_and_outside(key.span, step)
    write = int if isinstance(key.default, int) else float
    for value in inside:
        cls.normalize({**_context(cls.name, key.name), key.name: write(value)})
    for value in outside:
        with pytest.raises(PlanError):
            cls.normalize({**_context(cls.name, key.name), key.name: write(value)})


def test_settings_too_large_to_estimate_are_a_plan_error_not_an_internal_one(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('fs = ["ext4"]\n[[workload]]\nname = "tree"\nsource = "generated"\nfiles = 1e308\n')
    with pytest.raises(PlanError) as err:
        load_plan_file(path, workdir=str(tmp_path / "wd"))
    assert err.value.message == "tree needs more than 1 PiB on the filesystem"
