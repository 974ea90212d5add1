"""Per-task delay accounting (/proc/sys/kernel/task_delayacct): off by default on current
kernels; with it on, /proc/<pid>/stat says how long each task, jbd2 included, waited on I/O."""

from __future__ import annotations

from pathlib import Path

SYSCTL = Path("/proc/sys/kernel/task_delayacct")


def current() -> str | None:
    try:
        return SYSCTL.read_text().strip()
    except OSError:
        return None


def enable() -> bool:
    try:
        SYSCTL.write_text("1\n")
    except OSError:
        return False
    return current() == "1"
