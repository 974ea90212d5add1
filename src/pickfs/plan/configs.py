"""Configurations from a plan: presets and filesystem names, [[config]] tables, their aging, directories."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from pickfs.errors import PlanError, UntrustedPath
from pickfs.model import FsConfig
from pickfs.plan.schema import CONFIG
from pickfs.plan.values import NAME, options, parse_share, text_value, unknown_keys
from pickfs.safepaths import resolve
from pickfs.stack.filesystems import KNOWN, RAW, which
from pickfs.stack.presets import PRESETS, RAW_CONFIG


def configs_from_names(text: str) -> list[FsConfig]:
    """The configurations a comma-separated list names ('all': every preset), each once, in order."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    expanded = [p for n in names for p in (list(PRESETS) if n == "all" else [n])]
    return [resolve_fs_name(n) for n in dict.fromkeys(expanded)]


def resolve_fs_name(name: str) -> FsConfig:
    """A preset, or a bare filesystem type the user names (jfs, f2fs, ...)."""
    name = text_value(name, "a filesystem or preset name", '"ext4"')
    if name in PRESETS:
        return PRESETS[name]
    if name == RAW:
        return RAW_CONFIG
    if name in KNOWN or (NAME.match(name) and which(f"mkfs.{name}")):
        return FsConfig(name, name, description=f"{name} with default options")
    raise PlanError(f"unknown preset or filesystem {name!r}",
                    f"presets: {', '.join(PRESETS)}; or a filesystem type with a mkfs.<type> tool")


def config_from_table(t: dict[str, Any], index: int) -> FsConfig:
    """One [[config]] table, its keys checked against the schema."""
    where = f"[[config]] #{index + 1}"
    unknown_keys(t, CONFIG.names(), where)
    for key in CONFIG.keys:
        if key.value_type == "string" and key.name in t:
            text_value(t[key.name], f"{where} {key.name}", key.example, empty=key.name == "description")
    if "fs" in t and not NAME.match(t["fs"]):
        raise PlanError(f"{where} fs {t['fs']!r} is not a filesystem type", 'e.g. fs = "ext4" (letters, digits, - _ . +)')
    if "path" in t and not os.path.isabs(t["path"]):
        raise PlanError(f"{where} path {t['path']!r} is not an absolute path", 'e.g. path = "/mnt/a"')
    start = resolve_fs_name(t["preset"]) if "preset" in t else None
    fstype = t.get("fs") or (start.fstype if start else None)
    if not fstype and not t.get("path"):
        raise PlanError(f"[[config]] #{index + 1} names no filesystem", 'add fs = "ext4" or preset = "ext4"')
    name = t.get("name") or (start.name if start else fstype or Path(t["path"]).name)
    cfg = FsConfig(
        name=str(name),
        fstype=str(fstype or "existing"),
        mkfs_options=options(t["mkfs"], "mkfs") if "mkfs" in t else (start.mkfs_options if start else ()),
        mount_options=options(t["mount"], "mount") if "mount" in t else (start.mount_options if start else ()),
        scheduler=t.get("scheduler", start.scheduler if start else None),
        base=t.get("base", start.base if start else None),
        path=t.get("path"),
        description=t.get("description", start.description if start else ""),
    )
    if "age" in t:
        cfg = replace(cfg, **aging_fields(t, where))
    return cfg


def aging_fields(t: dict[str, Any], where: str) -> dict[str, Any]:
    """A [[config]]'s aging keys, checked: age = "70%", age_rounds = 3, age_seed = 1."""
    age_key = CONFIG.key("age")
    age = parse_share(t["age"], f"{where} age", age_key.example)
    span = age_key.span
    assert span is not None and span.low is not None and span.high is not None
    if not span.contains(age):
        raise PlanError(f"{where} age {t['age']!r} is out of range",
                        f'age = "{span.low:.0%}" to "{span.high:.0%}" of the filesystem')
    out: dict[str, Any] = {"age": age}
    for key in (CONFIG.key("age_rounds"), CONFIG.key("age_seed")):
        if key.name in t:
            v, count = t[key.name], key.span
            assert count is not None
            if isinstance(v, bool) or not isinstance(v, int) or not count.contains(v):
                raise PlanError(f"{where} {key.name} must be a whole number {count.words()}", f"e.g. {key.example}")
            out[key.name] = v
    return out


def directory_config(path: str) -> FsConfig:
    """An existing directory to compare (a directory target), resolved following root's links only."""
    p = Path(path)
    try:  # resolved following root's links only: one another user planted is refused, not followed
        real = resolve(path, "directory")
    except UntrustedPath as exc:
        raise PlanError(exc.message, "name the directory itself, with no other user's link on the way") from None
    if not real.is_dir():
        raise PlanError(f"directory {path} does not exist", "create it, or name an existing directory")
    label = re.sub(r"[^A-Za-z0-9_.+-]+", "-", str(real).strip("/")) or "root"
    return FsConfig(name=label, fstype="existing", path=str(real), description=f"existing directory {p}")
