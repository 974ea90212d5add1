"""Undo ledger entries: idempotent, so teardown and `pickfs cleanup` share one path."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pickfs.errors import PickfsError
from pickfs.proc import run
from pickfs.stack import blockdev
from pickfs.stack.ledger import Entry, Ledger
from pickfs.stack.mountinfo import find_mount, parse_mountinfo
from pickfs.stack.signals import shielded


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
            return int(Path(e.get("pidfile")).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return 0
    return int(e.get("child_pid", 0) or 0)


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie (reaped here when it is pickfs's own child)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    if state == "Z":
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return True
    return False


def _undo_process(e: Entry) -> None:
    pid = _pid_of(e)
    if pid <= 0:
        return
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return
    if e.get("match", "") not in cmdline:
        return  # the pid was reused by something else
    os.kill(pid, getattr(signal, e.get("stop_signal", "SIGTERM")))
    for _ in range(600):
        if _gone(pid):
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    for _ in range(100):
        if _gone(pid):
            return
        time.sleep(0.1)


UNDO: dict[str, Callable[[Entry], None]] = {
    "mount": _undo_mount,
    "loop": _undo_loop,
    "image": _undo_image,
    "dir": _undo_dir,
    "scheduler": _undo_scheduler,
    "process": _undo_process,
}


def undo(ledger: Ledger, entry: Entry) -> None:
    UNDO[entry.kind](entry)
    ledger.release(entry)


def undo_all(ledger: Ledger, entries: list[Entry]) -> list[str]:
    """Undo entries newest first; return one line per entry that could not be undone."""
    problems = []
    for entry in reversed(entries):
        try:
            undo(ledger, entry)
        except (PickfsError, OSError) as exc:
            msg = exc.one_line() if isinstance(exc, PickfsError) else str(exc)
            problems.append(f"{entry.kind} {entry.fields}: {msg}")
    return problems


@contextmanager
def holding(ledger: Ledger, kind: str, **fields: Any) -> Iterator[list[Entry]]:
    """Record a resource before it is created; undo it on exit, whatever happened.

    The body creates the resource; it may replace the entry (ledger.update) through the
    yielded one-element list so that later fields (a loop device's name) are kept.
    """
    box = [ledger.record(kind, **fields)]
    try:
        yield box
    finally:
        with shielded():
            undo(ledger, box[0])
