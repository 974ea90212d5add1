"""The recorder: a FUSE filesystem serving one image file, logging every write and flush in order.

Run as its own process by pickfs (python -m pickfs.crash.recorder BACKING MOUNTPOINT LOG). The loop
device under test sits on MOUNTPOINT/image; its writes arrive here in the order the device sent
them, and each flush it receives reaches this daemon as fsync(). Single-threaded, and the kernel's
writeback cache is left off (libfuse's default), so nothing is reordered or merged on the way.
It never fsyncs the backing file itself: the host does not crash, the log is what is modelled.

With a fault file (a fifth argument, written by pickfs.faults) it also fails chosen writes or flushes with EIO
while the file the fault names as its switch exists: the loop device turns a failed write into a failed write
request and a failed fsync into a failed flush, so the filesystem above sees a real block I/O error. It then
marks itself an I/O flusher (PR_SET_IO_FLUSHER) and locks its memory, since it is in the I/O path.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import stat
import sys
import time
from pathlib import Path

import mfusepy as fuse

from pickfs.crash.log import FLUSH, TRUNCATE, WRITE, ZERO, encode

IMAGE = "image"
FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE = 0x02, 0x10
_LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_IO_FLUSHER, MCL_CURRENT_FUTURE = 57, 3


class FaultSwitch:
    """Fails writes or flushes as a fault file says, while its switch file exists.

    The file (JSON): kind ("write" or "flush"), nth (the k-th matching request after the switch appears is the
    first to fail), times (how many fail; 0: every one from then on), for_s (instead: every one for this long
    after the first), switch (the file whose presence arms it), ranges (for writes: a file of "start end" byte
    ranges of the image a write must touch, read again when it changes), injected (where each failure is noted).
    A failed write writes nothing; a failed flush flushes nothing.
    """

    def __init__(self, spec: dict[str, object]) -> None:
        self.kind = str(spec["kind"])
        self.nth, self.times = int(str(spec.get("nth", 1))), int(str(spec.get("times", 1)))
        self.for_ns = int(float(str(spec.get("for_s", 0))) * 1e9)
        self.switch, self.ranges_file = str(spec["switch"]), str(spec.get("ranges", ""))
        self.injected = open(str(spec["injected"]), "ab", buffering=0)  # noqa: SIM115 - for the process's life
        self.seen = self.failed = self.first_ns = 0
        self.ranges: list[tuple[int, int]] = []
        self.ranges_mtime = (-1, -1)

    def _touches(self, offset: int, length: int) -> bool:
        try:
            st = os.stat(self.ranges_file)
        except OSError:
            return False
        mtime = (st.st_ino, st.st_mtime_ns)  # a new file is renamed into place each time
        if mtime != self.ranges_mtime:
            with open(self.ranges_file) as fh:
                self.ranges = [(int(a), int(b)) for a, b in (line.split() for line in fh if line.strip())]
            self.ranges_mtime = mtime
        return any(start < offset + length and offset < end for start, end in self.ranges)

    def fails(self, kind: str, offset: int = 0, length: int = 0) -> bool:
        if kind != self.kind or not os.path.exists(self.switch):
            return False
        if kind == "write" and not self._touches(offset, length):
            return False
        self.seen += 1
        if self.seen < self.nth:
            return False
        now = time.monotonic_ns()
        if self.failed and (now - self.first_ns > self.for_ns if self.for_ns else 0 < self.times <= self.failed):
            return False
        self.first_ns = self.first_ns or now
        self.failed += 1
        self.injected.write(f"{now} {kind} {offset} {length}\n".encode())
        return True


NOTE = "pickfs-recorder-note: "  # a line of its stderr pickfs reports


def in_the_io_path() -> list[str]:
    """Never wait on the writeback this process serves: an I/O flusher (no reclaim through filesystems) with its
    memory locked (no page of it swapped out while the device waits on it). What the kernel refused, in words."""
    refused = []
    if _LIBC.prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0) != 0:
        refused.append(f"PR_SET_IO_FLUSHER refused ({os.strerror(ctypes.get_errno())}; it needs CAP_SYS_RESOURCE)")
    if _LIBC.mlockall(MCL_CURRENT_FUTURE) != 0:
        refused.append(f"mlockall refused ({os.strerror(ctypes.get_errno())})")
    return refused


class Recorder(fuse.Operations):
    use_ns = True

    def __init__(self, backing: Path, log: Path, faults: FaultSwitch | None = None) -> None:
        self.path, self.faults = backing / IMAGE, faults
        self.log = open(log, "ab", buffering=1 << 20)  # noqa: SIM115 - closed when the filesystem is released

    def _check(self, path: str) -> None:
        if path != "/" + IMAGE:
            raise fuse.FuseOSError(errno.ENOENT)

    def _note(self, kind: bytes, offset: int = 0, length: int = 0, data: bytes = b"") -> None:
        self.log.write(encode(kind, time.monotonic_ns(), offset, length))
        if data:
            self.log.write(data)

    def getattr(self, path: str, fh: int | None = None) -> dict[str, int]:
        if path == "/":
            st = os.stat(self.path.parent)
            return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2, "st_uid": st.st_uid, "st_gid": st.st_gid,
                    "st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns, "st_ctime": st.st_ctime_ns}
        self._check(path)
        st = os.stat(self.path)
        return {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks")} | {
            "st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns, "st_ctime": st.st_ctime_ns}

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", IMAGE]

    def open(self, path: str, flags: int) -> int:
        self._check(path)
        return os.open(self.path, flags & ~(os.O_DIRECT | os.O_SYNC | os.O_DSYNC | os.O_APPEND | os.O_CREAT))

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        if self.faults is not None and self.faults.fails("write", offset, len(data)):
            raise fuse.FuseOSError(errno.EIO)
        n = os.pwrite(fh, data, offset)
        self._note(WRITE, offset, n, bytes(data[:n]))
        return n

    def truncate(self, path: str, length: int, fh: int | None = None) -> None:
        self._check(path)
        os.truncate(self.path, length)
        self._note(TRUNCATE, length)

    def fallocate(self, path: str, mode: int, offset: int, length: int, fh: int) -> None:
        if _LIBC.fallocate(fh, mode, ctypes.c_long(offset), ctypes.c_long(length)) != 0:
            raise fuse.FuseOSError(ctypes.get_errno() or errno.EOPNOTSUPP)
        if mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE):  # a discard: the range now reads as zeros
            self._note(ZERO, offset, length)

    def fsync(self, path: str, datasync: int, fh: int) -> None:
        if self.faults is not None and self.faults.fails("flush"):
            raise fuse.FuseOSError(errno.EIO)
        self._note(FLUSH)
        self.log.flush()

    def flush(self, path: str, fh: int) -> None:
        self.log.flush()

    def release(self, path: str, fh: int) -> None:
        os.close(fh)

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self.path.parent)
        return {k: getattr(st, k) for k in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files",
                                            "f_ffree", "f_favail", "f_namemax")}

    def destroy(self, path: str) -> None:
        self.log.close()


def main(argv: list[str]) -> int:
    backing, mountpoint, log = map(Path, argv[1:4])
    faults = FaultSwitch(json.loads(Path(argv[4]).read_text())) if len(argv) > 4 else None
    if faults is not None:
        for refused in in_the_io_path():
            print(f"{NOTE}{refused}: under memory pressure the recorder could wait on the device it serves",
                  file=sys.stderr, flush=True)
    recorder = Recorder(backing, log, faults)
    try:
        fuse.FUSE(recorder, str(mountpoint), foreground=True, nothreads=True, fsname="pickfs-recorder")
    finally:
        if not recorder.log.closed:
            recorder.log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
