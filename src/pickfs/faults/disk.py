"""A disk that fails on command: the crash recorder (a FUSE file under the loop device) with a fault switch.

Everything is recorded in the ledger before it is made: the recorder's process and mount, and the switch, a
directory whose presence arms the fault; the switch is recorded last, so undoing the ledger (here, or
`pickfs cleanup` after kill -9) disarms the fault first, and the filesystem above unmounts on a disk that works.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from pickfs.crash.recorder import NOTE
from pickfs.crash.session import MODULE, fuse_unavailable, sparse_image
from pickfs.errors import ConfigUnavailable
from pickfs.faults.extents import device_ranges
from pickfs.faults.plan import FaultPlan
from pickfs.stack.cleanup import holding, is_mounted
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import check_room
from pickfs.stack.tracking import tracked


@dataclass(frozen=True)
class FaultyDisk:
    image: Path  # the image file, seen through the recorder (the loop device goes on it)
    switch: Path  # present: the fault is armed
    ranges: Path  # the byte ranges a failing write must touch
    injected: Path  # one line per request the recorder failed
    errors: Path  # the recorder's stderr: what the kernel refused it (PR_SET_IO_FLUSHER, mlockall)

    def notes(self) -> list[str]:
        """What the recorder could not arrange for itself, in words."""
        try:
            text = self.errors.read_text(errors="replace")
        except OSError:
            return []
        return [line.removeprefix(NOTE) for line in text.splitlines() if line.startswith(NOTE)]

    def arm(self, ledger: Ledger, stack: ExitStack) -> None:
        """Arm the fault (recorded first, so that undoing the ledger disarms it before anything else)."""
        stack.enter_context(holding(ledger, "dir", path=str(self.switch), recursive=True))
        self.switch.mkdir(mode=0o700)

    def disarm(self) -> None:
        shutil.rmtree(self.switch, ignore_errors=True)

    def aim(self, files: list[Path]) -> int:
        """Point a write fault at the files' blocks as the filesystem maps them now; the ranges' count."""
        return self.aim_ranges(device_ranges(files))

    def aim_ranges(self, found: list[tuple[int, int]]) -> int:
        """Point a write fault at the device's byte ranges [start, end); their count."""
        tmp = self.ranges.with_suffix(".new")
        tmp.write_text("".join(f"{a} {b}\n" for a, b in found))
        os.replace(tmp, self.ranges)  # the recorder reads it again when it changes
        return len(found)

    def failures(self) -> list[int]:
        """The moments (CLOCK_MONOTONIC ns) of the requests the recorder failed, in order."""
        try:
            lines = self.injected.read_text().splitlines()
        except OSError:
            return []
        return [int(line.split()[0]) for line in lines if line.split() and line.split()[0].isdigit()]


@contextmanager
def faulty_disk(base: Path, size: int, ledger: Ledger, fault: FaultPlan) -> Iterator[FaultyDisk]:
    """An empty image of `size` bytes served by the recorder with `fault` (disarmed), until exit."""
    reason = fuse_unavailable()
    if reason:
        raise ConfigUnavailable(f"cannot inject faults: {reason}", "install FUSE support to inject faults")
    backing, mountpoint = base / "backing", base / "recorder"
    backing.mkdir(mode=0o700, parents=True)
    mountpoint.mkdir(mode=0o700)
    check_room(base, size)
    sparse_image(backing / "image", size)
    errors = base / "recorder.err"
    disk = FaultyDisk(mountpoint / "image", base / "armed", base / "ranges", base / "injected", errors)
    disk.ranges.write_text("")
    disk.injected.write_text("")
    spec = base / "fault.json"
    spec.write_text(json.dumps(fault.switch_spec(disk.switch, disk.ranges, disk.injected)))
    with ExitStack() as stack:
        group = stack.enter_context(tracked(ledger, "fault-injecting recorder"))
        box = stack.enter_context(holding(ledger, "process", child_pid=0, match=MODULE, stop_signal="SIGTERM"))
        with open(errors, "wb") as err:  # the recorder's own log of writes is not needed here
            proc = subprocess.Popen([sys.executable, "-m", MODULE, str(backing), str(mountpoint), os.devnull,
                                     str(spec)], stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                    start_new_session=True, preexec_fn=group.preexec())
        box[0] = ledger.update(box[0], child_pid=proc.pid)
        stack.enter_context(holding(ledger, "mount", mountpoint=str(mountpoint)))
        deadline = time.monotonic() + 30
        while not is_mounted(str(mountpoint)):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ConfigUnavailable(f"the fault-injecting recorder did not start: "
                                        f"{errors.read_text()[-300:].strip()}", "check that FUSE works here")
            time.sleep(0.05)
        try:
            yield disk
        finally:
            disk.disarm()
            subprocess.run(["umount", str(mountpoint)], capture_output=True)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass  # the ledger's undo stops it
