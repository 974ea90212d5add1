"""Aged filesystems: fill, delete part, refill, as filesystem-aging tools do, before the data is laid out.

A fresh filesystem is kinder than any production one: every file is contiguous and the free space
is a handful of large extents. `age` fills a freshly mounted filesystem to a stated share of its
space with a file population whose sizes follow a log-normal law (many small files, a long tail
of large ones, as measured on real file systems), in a few thousand directories; makes it durable
(so every block is really allocated); deletes a random part of the files; and repeats. The last
round leaves it filled to the share. Everything is drawn from a fixed seed: the same settings age
the same way. The database's data is then laid out in the free space that is left.

`fragmentation` measures what was reached: extents per file (FIEMAP) of the database's files and
of the aged population, and the free space's fragments (the filesystem type's own tool, `FsType.free_space`:
e2freefrag for ext2/3/4, xfs_spaceman for xfs).
"""

from __future__ import annotations

import fcntl
import math
import os
import random
import struct
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pickfs.errors import PickfsError
from pickfs.proc import run
from pickfs.stack.filesystems import fs_type
from pickfs.stack.quiesce import syncfs

AGING_DIR = "pickfs-aging"
FILES_PER_DIR = 64
MEDIAN_FILE_BYTES = 48 * 1024  # the log-normal law's median and spread
SIGMA = 1.9
MIN_FILE_BYTES, MAX_FILE_BYTES = 512, 64 * 1024**2
DELETE_SHARE = 0.5  # of the files, deleted at random between fills
CHUNK = 1024**2
GROWING = 4  # files of each batch of 32 that grow slowly side by side
SLOW_CHUNK = 64 * 1024
FS_IOC_FIEMAP = 0xC020660B
FIEMAP_FLAG_SYNC = 0x1
SAMPLE_FILES = 4000  # files whose extents are counted, at most, per population



@dataclass(frozen=True)
class AgingResult:
    seconds: float
    rounds: int
    files: int  # standing at the end
    bytes_written: int
    fill: float  # share of the filesystem used when the aging ended

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Fragmentation:
    data_files: int
    data_extents: int
    aged_files: int
    aged_extents: int
    free_extents: int | None  # None: no tool counts them for this filesystem
    free_bytes: int

    @property
    def data_extents_per_file(self) -> float | None:
        return self.data_extents / self.data_files if self.data_files else None

    @property
    def aged_extents_per_file(self) -> float | None:
        return self.aged_extents / self.aged_files if self.aged_files else None

    def metrics(self) -> dict[str, float]:
        out = {"frag_data_files": float(self.data_files), "frag_free_bytes": float(self.free_bytes)}
        if self.data_extents_per_file is not None:
            out["frag_data_extents_per_file"] = self.data_extents_per_file
        if self.aged_extents_per_file is not None:
            out["frag_aged_extents_per_file"] = self.aged_extents_per_file
        if self.free_extents is not None:
            out["frag_free_extents"] = float(self.free_extents)
        return out

    def describe(self) -> str:
        parts = []
        if self.data_extents_per_file is not None:
            parts.append(f"{self.data_extents_per_file:.2f} extents per data file ({self.data_files} files)")
        if self.aged_extents_per_file is not None:
            parts.append(f"{self.aged_extents_per_file:.2f} per aged file")
        if self.free_extents is not None:
            parts.append(f"free space in {self.free_extents:,} fragments")
        return "fragmentation: " + ", ".join(parts) if parts else ""


def file_sizes(rng: random.Random, count: int) -> list[int]:
    """`count` file sizes from the log-normal law (pure for a given generator state)."""
    mu = math.log(MEDIAN_FILE_BYTES)
    return [min(MAX_FILE_BYTES, max(MIN_FILE_BYTES, int(rng.lognormvariate(mu, SIGMA)))) for _ in range(count)]


def used_share(path: Path) -> float:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) / st.f_blocks if st.f_blocks else 1.0


def age(mountpoint: Path, fill: float, rounds: int, seed: int) -> AgingResult:
    """Age the filesystem mounted at `mountpoint` to `fill` of its space (see the module's docstring)."""
    rng = random.Random(seed)
    payload = rng.randbytes(CHUNK)  # incompressible: a compressing filesystem stores it all
    root = mountpoint / AGING_DIR
    root.mkdir(mode=0o700)
    files: list[Path] = []
    written = 0
    serial = 0
    t0 = time.monotonic()
    for r in range(rounds):
        while used_share(mountpoint) < fill:
            batch = []
            for size in file_sizes(rng, 32):
                d = root / f"d{serial // FILES_PER_DIR:05d}"
                if serial % FILES_PER_DIR == 0:
                    d.mkdir(mode=0o700, exist_ok=True)
                batch.append((d / f"f{serial:07d}", size))
                serial += 1
            try:
                # a few files grow slowly side by side, made durable as they go (logs, mailboxes): their
                # blocks interleave; the rest are written whole, one after another
                written += _grow_together(batch[:GROWING], payload, rng)
                for path, size in batch[GROWING:]:
                    written += _grow_together([(path, size)], payload, rng, sync=False)
            except OSError as exc:
                raise AgingFailed(f"aging stopped writing at {used_share(mountpoint):.0%} full: "
                                  f"{exc.strerror or exc}", "age to a smaller share, or give a larger --size") from None
            files += [path for path, _ in batch]
            if serial % 1024 < 32:  # delayed allocation: check the space really used now and then
                syncfs(mountpoint)
        syncfs(mountpoint)  # every block allocated before any file is deleted
        if r < rounds - 1:
            doomed = set(rng.sample(range(len(files)), int(len(files) * DELETE_SHARE)))
            for i in sorted(doomed):
                files[i].unlink()
            files = [f for i, f in enumerate(files) if i not in doomed]
            syncfs(mountpoint)
    return AgingResult(time.monotonic() - t0, rounds, len(files), written, used_share(mountpoint))


def _grow_together(batch: list[tuple[Path, int]], payload: bytes, rng: random.Random, sync: bool = True) -> int:
    """Write the files of `batch` a chunk each in turn (each made durable after its chunk when `sync`)."""
    fds = [os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600) for p, _ in batch]
    left = [size for _, size in batch]
    step = SLOW_CHUNK if sync else CHUNK
    try:
        while any(left):
            for i, fd in enumerate(fds):
                if left[i] <= 0:
                    continue
                offset = rng.randrange(CHUNK - step + 1)
                n = os.write(fd, payload[offset:offset + min(left[i], step)])
                left[i] -= n
                if sync:
                    os.fdatasync(fd)
    finally:
        for fd in fds:
            os.close(fd)
    return sum(size for _, size in batch)


class AgingFailed(PickfsError):
    """The aging could not fill the filesystem as asked."""


# -- measuring fragmentation ------------------------------------------------------------------------
def extent_count(path: Path) -> int:
    """Extents of one file, by FIEMAP (0 for an empty one)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        request = bytearray(struct.pack("=QQIIII", 0, 0xFFFFFFFFFFFFFFFF, FIEMAP_FLAG_SYNC, 0, 0, 0))
        fcntl.ioctl(fd, FS_IOC_FIEMAP, request)
        return int(struct.unpack_from("=QQIIII", request)[3])
    finally:
        os.close(fd)


def extents_under(root: Path, rng: random.Random, limit: int = SAMPLE_FILES) -> tuple[int, int]:
    """(files, extents) over the non-empty regular files under `root`, a random sample of `limit` at most."""
    paths: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != AGING_DIR]
        for name in filenames:
            p = Path(dirpath) / name
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if st.st_size > 0 and (st.st_mode & 0o170000) == 0o100000:
                paths.append(p)
    if len(paths) > limit:
        paths = rng.sample(paths, limit)
    files = extents = 0
    for p in paths:
        try:
            extents += extent_count(p)
            files += 1
        except OSError:
            continue  # FIEMAP unsupported here, or the file went away
    return files, extents


def free_extents(fstype: str, device: str | None, mountpoint: Path) -> int | None:
    """The free space's fragments, from the filesystem's own tool (read-only); None where there is none."""
    tool = fs_type(fstype).free_space
    if not device or tool is None:
        return None
    try:
        return tool.parse(run(tool.command(device, mountpoint), package=tool.package, timeout=300).text)
    except PickfsError:
        return None


def fragmentation(mountpoint: Path, datadir: Path, fstype: str, device: str | None, seed: int = 0) -> Fragmentation:
    """What a filesystem's layout has come to: its data files, its aged population and its free space."""
    syncfs(mountpoint)
    rng = random.Random(seed)
    data_files, data_extents = extents_under(datadir, rng)
    aged = mountpoint / AGING_DIR
    aged_files, aged_extents = extents_under(aged, rng) if aged.is_dir() else (0, 0)
    st = os.statvfs(mountpoint)
    return Fragmentation(data_files, data_extents, aged_files, aged_extents, free_extents(fstype, device, mountpoint),
                         st.f_bfree * st.f_frsize)
