"""The recorder: a FUSE filesystem serving one image file, logging every write and flush in order.

Run as its own process by pickfs (python -m pickfs.crash.recorder BACKING MOUNTPOINT LOG). The loop
device under test sits on MOUNTPOINT/image; its writes arrive here in the order the device sent
them, and each flush it receives reaches this daemon as fsync(). Single-threaded, and the kernel's
writeback cache is left off (libfuse's default), so nothing is reordered or merged on the way.
It never fsyncs the backing file itself: the host does not crash, the log is what is modelled.
"""

from __future__ import annotations

import ctypes
import errno
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


class Recorder(fuse.Operations):
    use_ns = True

    def __init__(self, backing: Path, log: Path) -> None:
        self.path = backing / IMAGE
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
    recorder = Recorder(backing, log)
    try:
        fuse.FUSE(recorder, str(mountpoint), foreground=True, nothreads=True, fsname="pickfs-recorder")
    finally:
        if not recorder.log.closed:
            recorder.log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
