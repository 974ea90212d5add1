"""Undo ledger entries: idempotent, so teardown and `pickfs cleanup` share one path.

Each kind of resource is a `ResourceKind` (stack/resources.py) that carries its refusal and its undo
together; `KINDS` gathers them all. pickfs undoes only what it can prove it made (`refusal`): paths
inside its work directory (or a directory target's `pickfs-*` data directory), loop devices backed
by its own images, processes that are still the very ones it started, schedulers of real block
devices, control groups of its own. Anything else is left alone and reported, with its ledger entry
kept for the user to check.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pickfs.errors import NotUndone, PickfsError
from pickfs.proc import run
from pickfs.stack import blockdev
from pickfs.stack.cgroups import CGROUP
from pickfs.stack.ledger import CLOCK_SLACK_S, Entry, Ledger, process_state, start_ticks, started_at
from pickfs.stack.mountinfo import find_mount, parse_mountinfo
from pickfs.stack.processes import descendants, parent_pids
from pickfs.stack.resources import ResourceKind, held, settle
from pickfs.stack.tracking import TRACKED, in_group
from pickfs.stack.workdir import inside

# I/O schedulers a scheduler entry may restore (blk-mq, and the legacy single-queue ones).
KNOWN_SCHEDULERS = frozenset({"none", "mq-deadline", "kyber", "bfq", "noop", "deadline", "cfq"})


def is_mounted(mountpoint: str) -> bool:
    return find_mount(parse_mountinfo(Path("/proc/self/mountinfo").read_text()), mountpoint) is not None


def _undo_mount(e: Entry) -> None:
    mp = e.get("mountpoint")
    for attempt in range(5):
        if not is_mounted(mp):
            return
        try:
            run(["umount", mp], package="util-linux")
        except PickfsError:
            if attempt == 4:
                run(["umount", "--lazy", mp], package="util-linux")
            time.sleep(0.2 * (attempt + 1))


def _undo_loop(e: Entry) -> None:
    image = e.get("image")
    if image and os.path.exists(image):
        for dev in blockdev.loops_backed_by(Path(image)):
            blockdev.detach_loop(dev)


def _undo_image(e: Entry) -> None:
    Path(e.get("path")).unlink(missing_ok=True)


def _undo_dir(e: Entry) -> None:
    path = Path(e.get("path"))
    if not path.exists() or is_mounted(str(path)):
        return
    if e.get("recursive"):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.rmdir()
        except OSError:
            pass


def _undo_scheduler(e: Entry) -> None:
    original = e.get("original")
    if original and blockdev.get_scheduler(e.get("device")) != original:
        blockdev.set_scheduler(e.get("device"), original)


def _pid_of(e: Entry) -> int:
    """The process an entry names: a pid, or the first line of a pid file (a server's own)."""
    if e.get("pidfile"):
        try:
            fd = os.open(e.get("pidfile"), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd) as fh:
                return int(fh.read(64).split()[0])
        except (OSError, ValueError, IndexError):
            return 0
    pid = e.get("child_pid", 0)
    return pid if isinstance(pid, int) else 0


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie (reaped here when it is pickfs's own child)."""
    state = process_state(pid)
    if state is None:
        return True
    if state == "Z":
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return True
    return False


def same_process(e: Entry, pid: int) -> bool:
    """`pid` is still the process the entry recorded: same start time, or started after the entry was written."""
    ticks = start_ticks(pid)
    if ticks is None:
        return False
    if e.get("start_pid") == pid and isinstance(e.get("start_ticks"), int):
        return bool(ticks == e.get("start_ticks"))
    started = started_at(pid)
    return started is not None and started >= e.created - CLOCK_SLACK_S


def _undo_process(e: Entry) -> None:
    pid = _pid_of(e)
    if pid <= 1 or pid == os.getpid():
        return
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return
    if e.get("match") not in cmdline or not same_process(e, pid):
        return  # the pid was reused by something else: pickfs's process is gone
    group = e.get("group")
    if isinstance(group, str) and group and not in_group(pid, Path(group)):
        return  # not in the group pickfs started it in: another program's (a pid file's stale pid, reused)
    # A server held still for a side-by-side comparison (SIGSTOP) must run again to stop cleanly:
    # after a kill -9 of pickfs nothing else would ever continue it.
    for member in descendants(pid, parent_pids()):
        try:
            os.kill(member, signal.SIGCONT)
        except ProcessLookupError:
            pass
    with exit_watch(pid) as watch:
        os.kill(pid, getattr(signal, e.get("stop_signal", "SIGTERM")))
        if wait_gone(pid, 60.0, watch):
            return
        os.kill(pid, signal.SIGKILL)
        wait_gone(pid, 10.0, watch)


@contextmanager
def exit_watch(pid: int) -> Iterator[int | None]:
    """A pidfd of the process (Linux 5.3+), readable once it exits; None where there is none. Opened before the
    process is signalled: a pidfd names that process itself, never a later one given its pid."""
    try:
        fd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


# Where no pidfd wakes the wait, how often a stopping process is looked at.
GONE_POLL_S = 0.005


def wait_gone(pid: int, timeout_s: float, watch: int | None = None) -> bool:
    """Until the process has exited (True) or `timeout_s` passed (False): woken by its exit through `watch` (its
    pidfd), else looked at every few milliseconds. A server's stop was looked at every 100 ms, and a crash test
    stops a server per state."""
    deadline = time.monotonic() + timeout_s
    while not _gone(pid):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if watch is None:
            time.sleep(min(left, GONE_POLL_S))
        elif not select.select([watch], [], [], min(left, 1.0))[0]:
            continue
        else:  # exited: its entry in /proc is a zombie or gone a moment later
            time.sleep(0.0005)
    return True


def _path_refusal(path: Any, workdir: Path, datadir_ok: bool = False) -> str | None:
    """Why a path is not pickfs's: not inside its work directory (nor, if allowed, a `pickfs-*` data directory)."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return f"{path!r} is not an absolute path"
    if inside(path, workdir):
        return None
    if datadir_ok and is_pickfs_datadir(path):
        return None
    return f"{path} is outside pickfs's work directory {workdir}"


def is_pickfs_datadir(path: str) -> bool:
    """A directory target's data directory: its last component starts with pickfs- and is no symbolic link."""
    return (Path(path).name.startswith("pickfs-") and not os.path.islink(path)
            and Path(os.path.realpath(path)).name == Path(path).name)


def _scheduler_refusal(e: Entry) -> str | None:
    device, original = e.get("device"), e.get("original")
    if not isinstance(device, str) or not device.startswith("/dev/"):
        return f"device {device!r} is not under /dev"
    if not Path(f"/sys/block/{blockdev.disk_name(device)}").is_dir():
        return f"device {device} is no block device under /sys/block"
    if original is not None and original not in KNOWN_SCHEDULERS:
        return f"scheduler {original!r} is not one of {', '.join(sorted(KNOWN_SCHEDULERS))}"
    return None


def _process_refusal(e: Entry) -> str | None:
    match = e.get("match")
    if not isinstance(match, str) or not match.strip():
        return "names no command to match, so the process cannot be told from another"
    if not e.get("pidfile") and not isinstance(e.get("child_pid", 0), int):
        return "names no pid"
    return None


def _path_kind(name: str, key: str, undo: Callable[[Entry], None], datadir_ok: bool = False) -> ResourceKind:
    """A kind whose entry names a path (under `key`) that must lie inside the work directory."""
    return ResourceKind(name, lambda e, workdir: _path_refusal(e.get(key), workdir, datadir_ok), undo)


MOUNT = _path_kind("mount", "mountpoint", _undo_mount)
IMAGE = _path_kind("image", "path", _undo_image)
LOOP = _path_kind("loop", "image", _undo_loop)  # a loop device: pickfs's when its image is
DIR = _path_kind("dir", "path", _undo_dir, datadir_ok=True)  # or a directory target's pickfs-* data directory
SCHEDULER = ResourceKind("scheduler", lambda e, _workdir: _scheduler_refusal(e), _undo_scheduler)
PROCESS = ResourceKind("process", lambda e, _workdir: _process_refusal(e), _undo_process)

# Every kind of resource a ledger entry may name.
KINDS: dict[str, ResourceKind] = {k.name: k for k in (MOUNT, LOOP, IMAGE, DIR, SCHEDULER, PROCESS, CGROUP, TRACKED)}


def refusal(e: Entry, workdir: Path) -> str | None:
    """Why pickfs cannot prove it made what the entry names; None when it may undo it."""
    kind = KINDS.get(e.kind)
    if kind is None:
        return f"kind {e.kind!r} is unknown (known: {', '.join(sorted(KINDS))})"
    return kind.refusal(e, workdir)


def undo(ledger: Ledger, entry: Entry) -> None:
    """Undo one entry and release it; NotUndone (entry kept) when pickfs cannot prove it made the resource."""
    kind = KINDS.get(entry.kind)
    if kind is None:
        raise NotUndone(f"{entry.kind} left alone: {refusal(entry, ledger.workdir)}",
                        f"check it, then delete {ledger.directory / (entry.id + '.json')}")
    settle(ledger, kind, entry)


@dataclass(frozen=True)
class UndoReport:
    undone: int
    refused: tuple[str, ...]  # entries naming what pickfs cannot prove it made: left alone, kept
    failed: tuple[str, ...]  # entries whose undo went wrong


def undo_entries(ledger: Ledger, entries: list[Entry]) -> UndoReport:
    """Undo entries newest first; one line per entry refused or failed."""
    refused, failed = [], []
    for entry in reversed(entries):
        try:
            undo(ledger, entry)
        except NotUndone as exc:
            refused.append(exc.one_line())
        except (PickfsError, OSError) as exc:
            msg = exc.one_line() if isinstance(exc, PickfsError) else str(exc)
            failed.append(f"{entry.kind} {entry.fields}: {msg}")
    return UndoReport(len(entries) - len(refused) - len(failed), tuple(refused), tuple(failed))


def undo_all(ledger: Ledger, entries: list[Entry]) -> list[str]:
    """Undo entries newest first; return one line per entry that was left alone or could not be undone."""
    report = undo_entries(ledger, entries)
    return [*report.refused, *report.failed]


def holding(ledger: Ledger, kind: str, **fields: Any) -> AbstractContextManager[list[Entry]]:
    """Record a resource of the kind named (one of KINDS) before it is created; undo it on exit, whatever
    happened (resources.held). The body may replace the entry (ledger.update) through the yielded list."""
    if kind not in KINDS:
        raise ValueError(f"no resource kind {kind!r} (known: {', '.join(sorted(KINDS))})")
    return held(ledger, KINDS[kind], **fields)
