"""Wait until a block device is idle, so a measured run starts in steady state; make a filesystem durable."""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path

from pickfs.monitors.sampler import read_disk


def wait_idle(name: str, quiet_s: float, timeout_s: float, poll_s: float = 0.1) -> tuple[bool, float]:
    """Return (idle, seconds waited). Idle: nothing completed or in flight for quiet_s."""
    t0 = time.monotonic()
    last = read_disk(name)
    if last is None:
        return True, 0.0
    quiet_since = t0
    while True:
        time.sleep(poll_s)
        now = time.monotonic()
        cur = read_disk(name)
        if cur is None:
            return True, now - t0
        if cur.in_flight or (cur.reads, cur.writes) != (last.reads, last.writes):
            quiet_since = now
        last = cur
        if now - quiet_since >= quiet_s:
            return True, now - t0
        if now - t0 >= timeout_s:
            return False, now - t0


_libc = ctypes.CDLL(None, use_errno=True)


def syncfs(path: Path) -> float:
    """Make everything written to the filesystem holding `path` durable; return the seconds it took."""
    t0 = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"syncfs failed: {os.strerror(err)}")
    finally:
        os.close(fd)
    return time.perf_counter() - t0
