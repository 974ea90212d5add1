"""[target]: what the configurations are built on, its keys checked against the schema."""

from __future__ import annotations

from typing import Any

from pickfs.errors import PlanError
from pickfs.model import Target
from pickfs.plan.schema import TARGET
from pickfs.plan.values import kind_of, text_value, unknown_keys
from pickfs.stack.workdir import path_problem, workdir_problem
from pickfs.units import MAX_SIZE, parse_size


def target_from_table(t: dict[str, Any]) -> tuple[Target, list[str]]:
    """The [target] table -> the target and the directories it names (a directory target's paths)."""
    unknown_keys(t, TARGET.names(), "[target]")
    for key in TARGET.keys:
        if key.value_type == "string" and key.name in t:
            text_value(t[key.name], f"[target] {key.name}", key.example)
    if "size" in t and (isinstance(t["size"], bool) or not isinstance(t["size"], (str, int))):
        raise PlanError(f"[target] size must be a string or a whole number of bytes, not {kind_of(t['size'])}",
                        f"e.g. {TARGET.key('size').example}")
    paths_key = TARGET.key("paths")
    paths = t.get("paths", [])
    if not isinstance(paths, list) or not all(isinstance(x, str) for x in paths):
        raise PlanError(f"[target] paths must be a list of directories, not {kind_of(paths)}",
                        f"e.g. {paths_key.example}")
    for x in paths:
        text_value(x, "[target] paths entry", paths_key.example)
    kinds = TARGET.key("kind").choices
    kind = t.get("kind", TARGET.key("kind").default)
    if kind not in kinds:
        raise PlanError(f"unknown target kind {kind!r}", f"use {', '.join(kinds[:-1])} or {kinds[-1]}")
    defaults = Target()
    target = Target(kind=kind, workdir=t.get("workdir", defaults.workdir),
                    size_bytes=parse_size(t.get("size", defaults.size_bytes)),
                    device=t.get("device"), confirm=t.get("confirm"), size_auto="size" not in t)
    return target, list(paths)


def check_target(target: Target) -> None:
    """The target's own values: a work directory that is an absolute path of plain characters, a size in range."""
    if not isinstance(target.workdir, str) or path_problem(target.workdir):
        raise PlanError(f"work directory {target.workdir!r} is not an absolute path of plain characters",
                        "e.g. --workdir /var/tmp/pickfs (or workdir = \"/var/tmp/pickfs\" under [target])")
    problem = workdir_problem(target.workdir)
    if problem:
        raise PlanError(problem, "name a new or empty directory for pickfs (it is made if missing), "
                                 "e.g. --workdir /var/tmp/pickfs")
    if isinstance(target.size_bytes, bool) or not isinstance(target.size_bytes, int) \
            or not 0 <= target.size_bytes <= MAX_SIZE:
        raise PlanError(f"image size {target.size_bytes!r} is out of range", "e.g. --size 4G (at most 1P)")
    for what, value in (("device", target.device), ("confirm", target.confirm)):
        if value is not None:
            text_value(value, f"the target's {what}", "--device /dev/sdb --confirm-device /dev/sdb")
