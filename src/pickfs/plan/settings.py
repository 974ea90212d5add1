"""[[workload]] tables: the workload named, its label, and its settings of the shapes the schema gives."""

from __future__ import annotations

import math
from typing import Any

from pickfs.errors import PlanError
from pickfs.model import WorkloadSpec
from pickfs.plan.schema import WORKLOAD
from pickfs.plan.values import kind_of, text_value
from pickfs.plan.workload_keys import setting_shape
from pickfs.workloads import DEFAULT_WORKLOAD, workload_class
from pickfs.workloads.base import Workload

_SHAPE_WORDS = {"table": "a table of values", "list": "a value or a list of values",
                "value": "a string, a number or true/false"}


def check_setting_types(cls: type[Workload], settings: dict[str, Any], where: str) -> None:
    """Each workload setting of the shape its default has: one value (a string, a number or true/false),
    a list of such values where the default is a list, a table of them where it is a table. Finite numbers."""
    for key, value in settings.items():

        def scalar(v: Any, key: str = key) -> bool:
            if isinstance(v, float) and not math.isfinite(v):
                raise PlanError(f"{where} {key} is {v}, not a finite number", f"e.g. {key} = {default_text(cls, key)}")
            return isinstance(v, (str, int, float))

        shape = setting_shape(cls, key)
        if shape == "table":
            ok = isinstance(value, dict) and all(scalar(v) for v in value.values())
        elif shape == "list":
            ok = scalar(value) or (isinstance(value, list) and all(scalar(v) for v in value))
        else:
            ok = scalar(value)
        if not ok:
            raise PlanError(f"{where} {key} must be {_SHAPE_WORDS[shape]}, not {kind_of(value)}",
                            f"e.g. {key} = {default_text(cls, key)}")


def default_text(cls: type[Workload], key: str) -> str:
    """A setting's default as an example in a hint."""
    default = cls.defaults.get(key)
    if isinstance(default, str):
        return f'"{default}"' if default else '"..."'
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, (int, float)):
        return str(default)
    if isinstance(default, list):
        return "[" + ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in default) + "]"
    if isinstance(default, dict):
        return '{ NAME = "value" }'
    return '"..."'


def workload_from_table(t: dict[str, Any], index: int) -> WorkloadSpec:
    """One [[workload]] table: its name and label, every other key a setting of that workload."""
    t = dict(t)
    where = f"[[workload]] #{index + 1}"
    name = text_value(t.pop("name", DEFAULT_WORKLOAD), f"{where} name", f'name = "{DEFAULT_WORKLOAD}"')
    cls = workload_class(name)
    label = text_value(t.pop("label", name), f"{where} label", WORKLOAD.key("label").example)
    check_setting_types(cls, t, f"workload {label}:")
    settings = cls.normalize(t)
    return WorkloadSpec(name=name, label=str(label), settings=tuple(sorted(settings.items())))
