"""Start the recorder (a FUSE filesystem of pickfs's own) and stop it; both tracked in the ledger."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from pickfs.errors import ConfigUnavailable
from pickfs.stack.cleanup import holding, is_mounted
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import check_room
from pickfs.stack.tracking import tracked

MODULE = "pickfs.crash.recorder"


def fuse_unavailable() -> str | None:
    """None when this machine can run the recorder; else what to install or load."""
    if not Path("/dev/fuse").exists():
        return "the kernel has no FUSE (/dev/fuse is missing; modprobe fuse, or use a kernel with CONFIG_FUSE_FS)"
    try:
        import mfusepy  # noqa: F401  # deferred: mfusepy, loaded only to ask whether libfuse is there
    except (ImportError, OSError) as exc:  # OSError: mfusepy found no libfuse
        return f"the FUSE library is missing ({exc}; apt-get install libfuse3-3, pip install mfusepy)"
    return None


def sparse_image(path: Path, size: int) -> None:
    """A new sparse image file of `size` bytes, readable by root only (0600), never through a planted link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Recording:
    image: Path  # the image file, seen through the recorder
    backing: Path  # the same file, underneath
    log: Path


@contextmanager
def recording(base: Path, size: int, ledger: Ledger, image: Path | None = None) -> Iterator[Recording]:
    """An empty image of `size` bytes whose every write and flush is logged, until exit.

    `image`: an image file of pickfs's own (a crash state) to serve instead: it is moved under the
    recorder, and is at `Recording.backing` afterwards.
    """
    reason = fuse_unavailable()
    if reason:
        raise ConfigUnavailable(f"cannot record writes: {reason}", "install FUSE support to run crash tests")
    backing, mountpoint, log = base / "backing", base / "recorder", base / "writes.log"
    backing.mkdir(mode=0o700, parents=True)
    mountpoint.mkdir(mode=0o700)
    if image is not None:
        os.rename(image, backing / "image")
    else:
        check_room(base, size)  # as every image: the host must hold it at its whole size
        sparse_image(backing / "image", size)
    log.touch(mode=0o600)
    errors = base / "recorder.err"
    with ExitStack() as stack:
        group = stack.enter_context(tracked(ledger, "write recorder"))
        box = stack.enter_context(holding(ledger, "process", child_pid=0, match=MODULE, stop_signal="SIGTERM"))
        with open(errors, "wb") as err:
            proc = subprocess.Popen([sys.executable, "-m", MODULE, str(backing), str(mountpoint), str(log)],
                                    stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True,
                                    preexec_fn=group.preexec())
        box[0] = ledger.update(box[0], child_pid=proc.pid)
        stack.enter_context(holding(ledger, "mount", mountpoint=str(mountpoint)))
        deadline = time.monotonic() + 30
        while not is_mounted(str(mountpoint)):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ConfigUnavailable(f"the write recorder did not start: {errors.read_text()[-300:].strip()}",
                                        "check that FUSE works here (modprobe fuse)")
            time.sleep(0.05)
        yield Recording(mountpoint / "image", backing / "image", log)
        # Unmounting ends the daemon, which closes the log; the ledger entries then find nothing to undo.
        subprocess.run(["umount", str(mountpoint)], capture_output=True)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass  # the ledger's undo stops it
