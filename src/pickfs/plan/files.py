"""Plan files: TOML read safely, its top-level keys checked against the schema, every table parsed."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from pickfs.errors import PlanError
from pickfs.model import Plan
from pickfs.plan.build import build_plan
from pickfs.plan.configs import config_from_table, directory_config, resolve_fs_name
from pickfs.plan.method import method_from_table
from pickfs.plan.production import expand_clients, parse_clients, parse_memory, parse_scale
from pickfs.plan.schema import TOP, TOP_KEYS
from pickfs.plan.settings import workload_from_table
from pickfs.plan.target import target_from_table
from pickfs.plan.values import kind_of, table_value, tables_value, text_value, unknown_keys
from pickfs.safepaths import read_small
from pickfs.workloads import DEFAULT_WORKLOAD

MAX_PLAN = 1024**2  # bytes: a plan is a page of TOML


def _read(path: Path) -> str:
    """The plan file's text: a small regular UTF-8 file."""
    try:
        return read_small(path, MAX_PLAN, "plan file").decode("utf-8")
    except ValueError as exc:
        if isinstance(exc, UnicodeDecodeError):
            raise PlanError(f"plan file {path} is not UTF-8 text", "save it as UTF-8 TOML") from None
        raise PlanError(str(exc), "name the plan's .toml file itself") from None
    except FileNotFoundError:
        raise PlanError(f"plan file {path} not found", "check the path") from None
    except IsADirectoryError:
        raise PlanError(f"plan file {path} is a directory", "name a .toml file, e.g. examples/sqlite-durability.toml") \
            from None
    except OSError as exc:
        raise PlanError(f"plan file {path} cannot be read: {exc.strerror or exc}", "check the path and its permissions") \
            from None


def load_plan_file(path: Path, overrides: dict[str, Any] | None = None, workdir: str | None = None,
                   workdir_given: bool = False) -> Plan:
    """A plan from a TOML file. `workdir` (the --workdir option) applies unless the file's [target]
    names one; `workdir_given`: the user gave --workdir explicitly, and it wins over the file's."""
    data = parse_plan_text(_read(path), str(path))
    target_table = table_value(data.get("target", {}), "[target]", 'size = "4G" under [target]')
    target, paths = target_from_table(target_table)
    if workdir and (workdir_given or "workdir" not in target_table):
        target = replace(target, workdir=workdir)
    if "memory" in data:
        target = replace(target, memory_bytes=parse_memory(data["memory"]))
    if "scale" in data:
        target = replace(target, scale=parse_scale(data["scale"]))
    fs = data.get("fs", [])
    if not isinstance(fs, list) or not all(isinstance(n, str) for n in fs):
        raise PlanError(f"fs must be a list of presets or filesystem types, not {kind_of(fs)}",
                        f"e.g. {TOP.key('fs').example}")
    configs = [resolve_fs_name(n) for n in fs]
    config_tables = tables_value(data.get("config", []), "config", '[[config]] with preset = "ext4"')
    configs += [config_from_table(t, i) for i, t in enumerate(config_tables)]
    configs += [directory_config(p) for p in paths]
    workload_tables = tables_value(data.get("workload", [{}]), "workload",
                                   f'[[workload]] with name = "{DEFAULT_WORKLOAD}"')
    workloads = [workload_from_table(t, i) for i, t in enumerate(workload_tables)]
    clients_warnings: list[str] = []
    if "clients" in data:
        workloads, clients_warnings = expand_clients(workloads, parse_clients(data["clients"]))
    method = method_from_table(table_value(data.get("method", {}), "[method]", "runs = 5 under [method]"))
    if overrides:
        method = method.but(**{k: v for k, v in overrides.items() if v is not None})
    baseline = data.get("baseline")
    if baseline is not None:
        baseline = text_value(baseline, "baseline", TOP.key("baseline").example)
    plan = build_plan(target, configs, workloads, method, baseline)
    return replace(plan, warnings=(*plan.warnings, *clients_warnings)) if clients_warnings else plan


def parse_plan_text(text: str, source: str = "the plan") -> dict[str, Any]:
    """The TOML of a plan, with its top-level keys checked."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"plan file {source} is not valid TOML: {exc}", "fix the line it names") from None
    except RecursionError:
        raise PlanError(f"plan file {source} nests arrays or tables too deeply to read",
                        "a plan needs no more than two levels: [[config]] tables of plain values") from None
    unknown_keys(data, TOP_KEYS, "plan file")
    return data
