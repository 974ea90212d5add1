"""One pickfs per run: a lock held for as long as a run is executed, and the test of whether a run is live.

The lock is an flock on WORKDIR/locks/RUN.lock (0600, in a 0700 directory of pickfs's own). The
kernel drops it when its process ends, however it ends, so a run whose lock can be taken is not
being executed by anyone: `run --resume RUN` is refused while another pickfs holds it, and
`pickfs cleanup` marks a run still 'running' without a holder as interrupted.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from pathlib import Path

from pickfs.errors import PickfsError
from pickfs.stack.workdir import PRIVATE_MODE, private_dir

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class RunLive(PickfsError):
    """The run is being executed by another pickfs."""

    exit_code = 2


def _path(workdir: Path, run_id: str) -> Path:
    if not RUN_ID.match(run_id):
        raise PickfsError(f"run id {run_id!r} is not one pickfs makes", "name a run listed by: pickfs results")
    return workdir / "locks" / f"{run_id}.lock"


def hold(workdir: Path, run_id: str) -> int:
    """Take the run's lock for the rest of this process (its descriptor); RunLive when another pickfs has it."""
    private_dir(workdir / "locks", PRIVATE_MODE)
    fd = os.open(_path(workdir, run_id), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    for _ in range(10):  # a `pickfs cleanup` looking at it holds it for an instant
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            time.sleep(0.1)
    os.close(fd)
    raise RunLive(f"run {run_id} is running in another pickfs right now",
                  f"wait for it to end (or stop it), then: pickfs run --resume {run_id}")


def release(fd: int) -> None:
    os.close(fd)


def is_live(workdir: Path, run_id: str) -> bool:
    """Another process holds the run's lock (read only: a missing lock file means nobody does)."""
    try:
        fd = os.open(_path(workdir, run_id), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (OSError, PickfsError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
