"""Process trees, read from /proc: which processes descend from a server's main process."""

from __future__ import annotations

import os
from pathlib import Path


def parent_pids() -> dict[int, int]:
    """pid -> parent pid for every process (one pass over /proc)."""
    out: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # the command name (field 2) may hold spaces and parentheses: parse after the last ')'
        fields = stat[stat.rfind(")") + 2:].split()
        out[int(entry.name)] = int(fields[1])
    return out


def descendants(root: int, ppids: dict[int, int]) -> list[int]:
    """root and every process below it, parents before children (pure)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in ppids.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop(0)
        if pid in ppids or pid == root:
            out.append(pid)
            todo.extend(sorted(children.get(pid, [])))
    return out
