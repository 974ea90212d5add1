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
activity on this machine".

For the CPU others take (is the machine busy?), pickfs as a whole is one side: every process below
pickfs or below any cell's server, and the kernel threads that serve the cell's device or a
device standing beside it (`Scope.beside`). User-space processes outside it are "others"; kernel
threads that serve none of them (`kworker/u8:1-events_unbound`, `ksoftirqd/0`, `rcu_sched`) may
be doing pickfs's work or anyone's, and are counted apart, as the kernel's."""

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
    beside: tuple[Scope, ...] = ()  # the devices and filesystems of the cells standing beside it


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


def pickfs_processes(ppids: Mapping[int, int], scope: Scope) -> set[int]:
    """Every user-space process of pickfs's: below pickfs and the cell's server, and below the servers
    of the cells beside it."""
    return _below((*scope.roots, *scope.foreign), _children(ppids), ppids)


def serves_pickfs(comm: str, scope: Scope) -> bool:
    """Is this kernel thread one of the device or filesystem of the cell or of a cell beside it?"""
    return serves_device(comm, scope) or any(serves_device(comm, s) for s in scope.beside)


@dataclass(frozen=True)
class CpuSides:
    """CPU time in clock ticks of one interval, by whose it was."""

    pickfs: int = 0
    others: int = 0
    kernel: int = 0  # kernel threads that serve none of pickfs's devices: anyone's work


def split_cpu(before: Mapping[int, int], after: Mapping[int, tuple[str, int, int]],
              ours: set[int], kernel_is_ours: Mapping[str, bool]) -> tuple[CpuSides, dict[str, int]]:
    """The CPU ticks each task took between two scans of /proc, by side, and the others' by name.

    before: pid -> ticks at the first scan; after: pid -> (name, ticks, parent) at the second (a
    kworker's name changes with the work it does, a process's when it runs another program: names
    are not compared); kernel_is_ours: a kernel thread's name -> does it serve pickfs's devices
    (names not in it: no). A task not in the first scan (or with fewer ticks: the pid was reused)
    was born between them: all its ticks count. A task that ended between them loses its last ticks."""
    pickfs = others = kernel = 0
    by_name: dict[str, int] = {}
    for pid, (comm, ticks, ppid) in after.items():
        prev = before.get(pid)
        took = ticks - prev if prev is not None and ticks >= prev else ticks
        if not took:
            continue
        if is_kernel_thread(pid, ppid):
            if kernel_is_ours.get(comm, False):
                pickfs += took
            else:
                kernel += took
        elif pid in ours:
            pickfs += took
        else:
            others += took
            by_name[comm] = by_name.get(comm, 0) + took
    return CpuSides(pickfs, others, kernel), by_name
