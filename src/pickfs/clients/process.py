"""What every client process does: its own name and I/O count for pickfs's monitors, and its terminals run at once."""

from __future__ import annotations

import ctypes
import resource
import threading
from collections.abc import Callable


def name_process(name: str) -> None:
    """Show up as `name` in /proc/<pid>/comm, so pickfs's monitors can tell the client apart."""
    try:
        ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def own_io() -> dict[str, int]:
    """This process's I/O as the kernel counts it, read before exiting (a parent's count
    would mix in every child it reaps)."""
    out = {}
    try:
        with open("/proc/self/io") as fh:
            for line in fh:
                key, value = line.split(":", 1)
                out[key.strip()] = int(value)
    except (OSError, ValueError):
        pass
    return out


def run_at_once(loops: list[Callable[[], None]]) -> tuple[list[str], float]:
    """Each terminal's loop in its own thread until all end: what failed (one line each), and the CPU seconds
    this process used meanwhile."""
    failures: list[str] = []

    def guard(loop: Callable[[], None]) -> None:
        try:
            loop()
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}")

    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    threads = [threading.Thread(target=guard, args=(loop,)) for loop in loops]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    return failures, (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
