"""Files created, renamed and removed under a directory while a workload runs, with when (polled).

A crash moment just after a file appears or is renamed (a new WAL segment, a journal, a table)
is where databases and programs most often get durability wrong, so crash moments are put
there too. Polling (every 50 ms) sees a file that lived shorter than that not at all.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from pickfs.crash.states import Event

POLL_S = 0.05


def snapshot(root: Path) -> dict[int, str]:
    """inode -> path relative to root, of every file and directory under it (missing ones skipped)."""
    out: dict[int, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            path = os.path.join(dirpath, name)
            try:
                out[os.lstat(path).st_ino] = os.path.relpath(path, root)
            except OSError:
                continue
    return out


def changes(before: dict[int, str], after: dict[int, str], t_ns: int) -> list[Event]:
    """What happened between two snapshots, as events at t_ns (pure)."""
    out = []
    for ino, path in after.items():
        old = before.get(ino)
        if old is None:
            out.append(Event(t_ns, f"creating {path}", "file"))
        elif old != path:
            out.append(Event(t_ns, f"renaming {old} to {path}", "file"))
    out += [Event(t_ns, f"removing {path}", "file") for ino, path in before.items() if ino not in after]
    return out


class FileWatch:
    """Polls a directory in a thread from start() to stop(); the events found, in order."""

    def __init__(self, root: Path, limit: int = 5000) -> None:
        self.root, self.limit = root, limit
        self.events: list[Event] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._last: dict[int, str] = {}

    def start(self) -> FileWatch:
        self._last = snapshot(self.root)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            now = snapshot(self.root)
            found = changes(self._last, now, time.monotonic_ns())
            self._last = now
            self.events.extend(found[: max(0, self.limit - len(self.events))])

    def stop(self) -> list[Event]:
        self._stop.set()
        self._thread.join(timeout=10)
        return list(self.events)
