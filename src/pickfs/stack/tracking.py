"""A control group per started program: everything it starts, daemons included, stays findable and is ended.

A process group or session is escaped by one `setsid` (a daemonizing command, a server that forks
away); a control group is not: children are born in their parent's group and only root moves them.
Each server and each user command pickfs starts runs in a group of its own (`pickfs-p-<id>`), written
to the ledger before the group is made and before the program starts, so a kill -9 of pickfs at any
moment leaves a group `pickfs cleanup` finds and empties: stopped members continued, SIGTERM, a
grace period, then SIGKILL (cgroup.kill where the kernel has it), then the group removed.

The group is made in the unified (v2) hierarchy, below the group pickfs is in at that moment (so a
memory-limited configuration's limit still holds for it); where only cgroup v1 is mounted, in its
pids or freezer hierarchy. Where no hierarchy can be written, `tracked` yields a group of None and
callers fall back to their process group.
"""

from __future__ import annotations

import errno
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pickfs.errors import ProcessesLeft
from pickfs.stack.cgroups import CGROUP_ROOT, PREFIX, cgroup_refusal, parse_proc_cgroup
from pickfs.stack.ledger import Entry, Ledger
from pickfs.stack.mountinfo import parse_mountinfo
from pickfs.stack.resources import ResourceKind, held

TRACK_PREFIX = f"{PREFIX}p-"
GRACE_S = 5.0  # between SIGTERM and SIGKILL
REMOVE_S = 60.0  # how long a group that is still busy is emptied again before pickfs gives up on it
# How soon a group found busy is tried again: within milliseconds at first (a server killed at once leaves its group
# busy for a moment after it has exited: a crash test does so once a state), then every BUSY_MAX_S.
BUSY_FIRST_S, BUSY_MAX_S = 0.002, 0.1
V1_CONTROLLERS = ("pids", "freezer")


def group_parent(mountinfo: str, proc_cgroup: str) -> tuple[Path, int] | None:
    """Where a new group goes (pure): below pickfs's own group in the v2 hierarchy, else in v1's pids or
    freezer hierarchy; with that hierarchy's version. None when neither is mounted under /sys/fs/cgroup."""
    own = parse_proc_cgroup(proc_cgroup)
    mounts = [m for m in parse_mountinfo(mountinfo) if m.mountpoint.startswith(f"{CGROUP_ROOT}")]
    for m in mounts:
        if m.fstype == "cgroup2" and "" in own:
            return Path(m.mountpoint) / own[""].lstrip("/"), 2
    for controller in V1_CONTROLLERS:
        for m in mounts:
            if m.fstype == "cgroup" and controller in m.options and controller in own:
                return Path(m.mountpoint) / own[controller].lstrip("/"), 1
    return None


def _members(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def describe(pid: int) -> str:
    """A process's command line, shortened, for a note; its pid when it is gone.

    A process in the middle of an exec shows no command line for an instant: asked again."""
    for _ in range(20):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return str(pid)
        text = " ".join(a.decode(errors="replace") for a in args if a)[:80]
        if text:
            return text
        time.sleep(0.005)
    return str(pid)


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def end_group(path: Path, grace_s: float = GRACE_S, spare: frozenset[int] = frozenset()) -> list[str]:
    """End every process in the group: continued (a server held still), SIGTERM, SIGKILL after `grace_s`.

    Returns what was ended (command lines). `spare`: pids not to name (a main process already waited for).
    """
    ended: dict[int, str] = {}
    deadline = time.monotonic() + grace_s
    killing = False
    while True:
        alive = [p for p in _members(path) if p != os.getpid()]
        if not alive:
            return [v for k, v in ended.items() if k not in spare]
        if time.monotonic() > deadline + 30:
            return [*(v for k, v in ended.items() if k not in spare), f"{len(alive)} still running after SIGKILL"]
        if not killing and time.monotonic() > deadline:
            killing = True
            try:
                (path / "cgroup.kill").write_text("1\n")  # v2 (Linux 5.14+): the whole group at once
            except OSError:
                pass
        new = [p for p in alive if p not in ended or killing]
        for pid in new:
            ended.setdefault(pid, describe(pid))
        _signal_all(new, signal.SIGCONT)  # a member held still (SIGSTOP) must run to exit
        _signal_all(new, signal.SIGKILL if killing else signal.SIGTERM)
        time.sleep(0.05)


def _populated(path: Path) -> bool | None:
    """Whether the group or a group below it still holds a process (v2's cgroup.events); None where unknown."""
    try:
        for line in (path / "cgroup.events").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "populated":
                return value.strip() != "0"
    except OSError:
        pass
    return None


def _below(path: Path) -> list[Path]:
    try:
        return sorted((d for d in path.iterdir() if d.is_dir()), reverse=True)
    except OSError:
        return []


def still_held(path: Path) -> str:
    """What keeps a group from being removed, in a few words: members, groups below it, or the kernel's count."""
    parts = []
    members, below = _members(path), _below(path)
    if members:
        parts.append(f"{len(members)} process(es): " + ", ".join(describe(p) for p in members[:3]))
    if below:
        parts.append("groups below it: " + ", ".join(d.name for d in below))
    if not parts and _populated(path):
        parts.append("the kernel still counts a process in it")
    return "; ".join(parts) or "nothing listed in it"


def remove_group(path: Path, grace_s: float = GRACE_S, patience_s: float = REMOVE_S) -> None:
    """Empty the group (and any below it) and remove it (idempotent).

    A program pickfs was starting when it was interrupted enters the group only once its fork gets to run,
    and a server may fork while it is being stopped: the group may be found empty and still be busy a moment
    later. So it is emptied again until it is removed, for up to `patience_s`; then ProcessesLeft names what
    is still in it."""
    deadline = time.monotonic() + patience_s
    pause = BUSY_FIRST_S
    while True:
        if not path.is_dir():
            return
        for below in _below(path):
            remove_group(below, grace_s, max(0.0, deadline - time.monotonic()))
        end_group(path, grace_s)
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno == errno.EBUSY and time.monotonic() <= deadline:
                time.sleep(pause)
                pause = min(pause * 2, BUSY_MAX_S)
                continue
            if exc.errno == errno.EBUSY:
                raise ProcessesLeft(f"could not remove the control group {path}: {exc.strerror or exc} "
                                    f"({still_held(path)})",
                                    "wait for those processes to end, then run pickfs cleanup") from None
            raise ProcessesLeft(f"could not remove the control group {path}: {exc.strerror or exc}",
                                "check that the control-group filesystem is mounted read-write and pickfs runs as "
                                "root, then run pickfs cleanup") from None


def in_group(pid: int, path: Path) -> bool:
    """`pid` is in the group `path` (or one below it)."""
    return pid in _members(path) or any(pid in _members(Path(d)) for d, _, _ in os.walk(path) if Path(d) != path)


@dataclass(frozen=True)
class Tracked:
    """A started program's group; path None where no control group could be made."""

    path: Path | None

    def preexec(self) -> Callable[[], None] | None:
        """For Popen: the child enters the group before it runs the program (only system calls, fork-safe)."""
        if self.path is None:
            return None
        procs = os.fsencode(self.path / "cgroup.procs")

        def enter() -> None:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0\n")
            finally:
                os.close(fd)
        return enter

    @contextmanager
    def spawning(self) -> Iterator[None]:
        """pickfs itself in the group while it starts a program (which is born there), back in its own after.

        For a program started as another user, who may not move itself into root's group."""
        if self.path is None:
            yield
            return
        own = Path(f"/proc/{os.getpid()}/cgroup").read_text()
        origin = group_parent(Path("/proc/self/mountinfo").read_text(), own)
        (self.path / "cgroup.procs").write_text(f"{os.getpid()}\n")
        try:
            yield
        finally:
            if origin is not None:
                (origin[0] / "cgroup.procs").write_text(f"{os.getpid()}\n")

    def end(self, grace_s: float = GRACE_S, spare: frozenset[int] = frozenset()) -> list[str]:
        return [] if self.path is None else end_group(self.path, grace_s, spare)

    def members(self) -> list[int]:
        return [] if self.path is None else _members(self.path)


def _parent() -> tuple[Path, int] | None:
    try:
        found = group_parent(Path("/proc/self/mountinfo").read_text(), Path("/proc/self/cgroup").read_text())
    except OSError:
        return None
    if found is None or os.geteuid() != 0 or not found[0].is_dir():
        return None
    return found


@contextmanager
def tracked(ledger: Ledger, what: str) -> Iterator[Tracked]:
    """A new group for one program (`what` names it in the ledger), recorded before it exists; emptied and
    removed on exit, whatever happened."""
    found = _parent()
    if found is None:
        yield Tracked(None)
        return
    parent, version = found
    path = parent / f"{TRACK_PREFIX}{uuid.uuid4().hex[:12]}"
    with held(ledger, TRACKED, path=str(path), version=version, what=what):
        try:
            path.mkdir(mode=0o755)
        except OSError:
            yield Tracked(None)
            return
        yield Tracked(path)


def tracked_refusal(e: Entry, _workdir: Path) -> str | None:
    """Why a ledger entry's group is not a started program's group of pickfs's (pickfs-p-...)."""
    return cgroup_refusal(e.get("path")) or (
        None if Path(e.get("path")).name.startswith(TRACK_PREFIX) else f"{e.get('path')} is no {TRACK_PREFIX} group")


# A started program's group, in the ledger: ended (its members stopped) and removed.
TRACKED = ResourceKind("tracked", tracked_refusal, lambda e: remove_group(Path(e.get("path"))))
