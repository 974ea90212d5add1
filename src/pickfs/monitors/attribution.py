"""Which processes and kernel threads belong to the cell being measured (pure).

Several cells run at once on one machine (side by side, and other pickfs runs or anything else
the user has running), and /proc/<pid>/io and the task states are read for every process on the
host. A cell's own are: the processes below pickfs (its client, its command and their children)
and below the cell's own server, minus those below the servers of other cells standing next to
it; and the kernel threads that serve the cell's own device (the ext4 journal thread
`jbd2/loop3-8`, the loop device's worker `kworker/...-loop3`, xfs's `xfsaild/loop3` and
`kworker/...-xfs-cil/loop3`, the writeback worker `flush-7:3`). btrfs's threads and workqueues
are not named after their device (`btrfs-transaction`, `btrfs-cleaner`,
`kworker/...-btrfs-endio-write`): on a btrfs cell they count as its own, which overstates it when
another btrfs is busy at the same time. Everything else is "other
activity on this machine"."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pickfs.stack.filesystems import fs_type

KTHREADD = 2  # the parent of every kernel thread


@dataclass(frozen=True)
class Scope:
    """What belongs to one cell: its device, its filesystem type, its server's main pids, and
    the main pids of the servers of other cells standing beside it."""

    disk: str | None = None  # loop3, vdb
    major_minor: str | None = None  # 7:3
    fstype: str | None = None
    roots: tuple[int, ...] = ()  # pickfs itself and the cell's own server
    foreign: tuple[int, ...] = ()  # other cells' servers


def _children(ppids: Mapping[int, int]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for pid, ppid in ppids.items():
        out.setdefault(ppid, []).append(pid)
    return out


def _below(roots: Iterable[int], children: Mapping[int, list[int]], ppids: Mapping[int, int]) -> set[int]:
    out: set[int] = set()
    todo = [r for r in roots if r in ppids]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.add(pid)
        todo.extend(children.get(pid, ()))
    return out


def own_processes(ppids: Mapping[int, int], scope: Scope) -> set[int]:
    """The user-space processes that belong to the cell: below its roots, not below a foreign server."""
    children = _children(ppids)
    return _below(scope.roots, children, ppids) - _below(scope.foreign, children, ppids)


def is_kernel_thread(pid: int, ppid: int) -> bool:
    return pid == KTHREADD or ppid == KTHREADD


def serves_device(comm: str, scope: Scope) -> bool:
    """Is this kernel thread one of the cell's device or filesystem (by its name)?"""
    if scope.disk and re.search(rf"(?<![A-Za-z0-9]){re.escape(scope.disk)}(?![0-9])", comm):
        return True
    if scope.major_minor and re.search(rf"flush-{re.escape(scope.major_minor)}(?![0-9])", comm):
        return True
    # btrfs's threads and workqueues (kworker/u8:3-btrfs-endio-write) name no device
    return scope.fstype is not None and fs_type(scope.fstype).serves_unnamed(comm)


def belongs(pid: int, ppid: int, comm: str, own: set[int], scope: Scope) -> bool:
    """Does this task belong to the cell (a process below its roots, or a kernel thread of its device)?"""
    if is_kernel_thread(pid, ppid):
        return serves_device(comm, scope)
    return pid in own
