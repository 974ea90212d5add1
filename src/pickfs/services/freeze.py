"""Hold a server still while other configurations are measured: SIGSTOP its whole process tree,
SIGCONT it for its own slice. A stopped server does no background work (checkpoints, flushing,
purge threads), so it cannot disturb the configuration being measured next to it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from pickfs.stack.processes import descendants, parent_pids


def main_pid(pidfile: str) -> int | None:
    """The server's main pid from its pid file (first line), if that process still exists."""
    try:
        pid = int(Path(pidfile).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if Path(f"/proc/{pid}").exists() else None


class Freezer:
    """Stops and continues one server's process tree, found through its pid file."""

    def __init__(self, pidfile: str) -> None:
        self.pidfile = pidfile
        self.stopped: list[int] = []

    def freeze(self) -> None:
        root = main_pid(self.pidfile)
        if root is None:
            return
        # Stop the parent first so it forks nothing new, then its tree until no new process shows up.
        for _ in range(5):
            new = [p for p in descendants(root, parent_pids()) if p not in self.stopped]
            if not new:
                return
            for pid in new:
                try:
                    os.kill(pid, signal.SIGSTOP)
                    self.stopped.append(pid)
                except OSError:  # gone meanwhile
                    pass

    def thaw(self) -> None:
        for pid in reversed(self.stopped):
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:  # gone meanwhile: nothing to continue; carry on with the others
                pass
        self.stopped = []
