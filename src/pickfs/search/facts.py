"""What this machine offers a search (reads the system): filesystems it cannot build, schedulers, versions."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from pickfs.model import SCHEDULERS
from pickfs.search.space import Facts, Space
from pickfs.stack.filesystems import unavailable_reason, which

_VERSION = re.compile(r"(\d+(?:\.\d+)+)")
TOOLS = {"e2fsprogs": ("mke2fs", "-V"), "xfsprogs": ("mkfs.xfs", "-V"), "btrfs-progs": ("mkfs.btrfs", "--version")}


def parse_version(text: str) -> tuple[int, ...] | None:
    """The first dotted version in a tool's output (pure)."""
    m = _VERSION.search(text)
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def parse_schedulers(text: str) -> frozenset[str]:
    """'[none] mq-deadline kyber bfq' -> the names (pure)."""
    return frozenset(w.strip("[]") for w in text.split() if w.strip("[]"))


def _schedulers() -> frozenset[str]:
    for queue in sorted(Path("/sys/block").glob("loop*/queue/scheduler")):
        try:
            return parse_schedulers(queue.read_text())
        except OSError:
            continue
    return frozenset(SCHEDULERS)


def _tool_version(tool: str, flag: str) -> tuple[int, ...] | None:
    path = which(tool)
    if path is None:
        return None
    try:
        r = subprocess.run([path, flag], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_version(r.stdout + r.stderr)


def gather(space: Space) -> Facts:
    missing = {fs.fstype: why for fs in space.filesystems if (why := unavailable_reason(fs.fstype))}
    versions: dict[str, tuple[int, ...]] = {}
    kernel = parse_version(os.uname().release)
    if kernel:
        versions["kernel"] = kernel
    for package, (tool, flag) in TOOLS.items():
        v = _tool_version(tool, flag)
        if v:
            versions[package] = v
    return Facts(missing, _schedulers(), versions)
