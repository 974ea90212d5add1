"""Input data for the file-tree workloads, made once and kept outside the filesystem under test.

Every data set lives in its own directory of the cache, named by what made it, and is built in
a temporary directory renamed into place when complete: an interrupted build is never reused.
Generated data uses a fixed seed, so two machines (or two runs) get the same files.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pickfs.errors import PlanError

# A kernel source tree (Linux 6.1): ~79,000 files in ~5,100 directories, ~1.2 GB; file sizes
# are roughly log-normal around a median of ~4.5 KiB with a long tail.
KERNEL_FILES = 79_000
KERNEL_FILES_PER_DIR = 15.5
KERNEL_MEDIAN_BYTES = 4_600
KERNEL_SIGMA = 1.5
KERNEL_MAX_BYTES = 4 * 1024**2
COMPRESSED = {".xz": ["xz", "-dc"], ".gz": ["gzip", "-dc"], ".tgz": ["gzip", "-dc"], ".bz2": ["bzip2", "-dc"],
              ".zst": ["zstd", "-dc"]}


def tree_sizes(files: int, seed: int) -> np.ndarray:
    """File sizes of a kernel-like tree (pure, deterministic)."""
    rng = np.random.default_rng(seed)
    sizes = rng.lognormal(np.log(KERNEL_MEDIAN_BYTES), KERNEL_SIGMA, files)
    return np.clip(sizes, 0, KERNEL_MAX_BYTES).astype(np.int64)


def tree_layout(files: int, seed: int) -> list[str]:
    """Relative directory of each file: a tree about 6 levels deep, ~15 files per directory (pure)."""
    rng = np.random.default_rng(seed + 1)
    ndirs = max(1, round(files / KERNEL_FILES_PER_DIR))
    dirs = [""]
    for i in range(1, ndirs):
        parent = dirs[int(rng.integers(0, len(dirs)))] if len(dirs) > 1 else ""
        if parent.count("/") >= 6:
            parent = ""
        dirs.append(f"{parent}/d{i}" if parent else f"d{i}")
    picks = rng.integers(0, ndirs, files)
    return [dirs[int(p)] for p in picks]


def estimated_tree_bytes(files: int) -> int:
    """Space a generated tree takes on a filesystem with 4 KiB blocks (rounded up per file)."""
    mean = KERNEL_MEDIAN_BYTES * float(np.exp(KERNEL_SIGMA**2 / 2))
    return int(files * (mean + 2048))


def text_pool(seed: int, size: int = 1 << 20) -> bytes:
    """Source-code-like text (compresses like code does), to cut file contents from."""
    rng = np.random.default_rng(seed + 2)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz_", dtype=np.uint8)
    words = [bytes(rng.choice(letters, int(n))) for n in rng.integers(2, 12, 800)]
    punct = [b" ", b" ", b" ", b"(", b");\n", b" = ", b";\n\t", b", ", b"->", b"\n}\n", b"{\n\t"]
    out = bytearray()
    while len(out) < size:
        out += words[int(rng.integers(0, len(words)))] + punct[int(rng.integers(0, len(punct)))]
    return bytes(out[:size])


def random_bytes(rng: np.random.Generator, n: int) -> bytes:
    return rng.bytes(n)


def _build(cache: Path, key: str, make: Callable[[Path], None]) -> Path:
    final = cache / key
    if final.exists():
        return final
    cache.mkdir(parents=True, exist_ok=True)
    tmp = cache / f".{key}.{os.getpid()}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        make(tmp)
        os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _digest(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:12]


def linux_source_tarballs() -> list[Path]:
    """Debian's linux-source package puts the kernel tree here, compressed."""
    return sorted(Path(p) for p in glob.glob("/usr/src/linux-source-*.tar.*"))


def decompressed_tarball(cache: Path, source: Path) -> Path:
    """An uncompressed copy of a tarball in the cache (decompressed once), or the tarball itself."""
    if not source.is_file():
        raise PlanError(f"tarball {source} does not exist", "name an existing .tar, .tar.xz, .tar.gz or .tar.bz2 file")
    tool = next((argv for suffix, argv in COMPRESSED.items() if source.name.endswith(suffix)), None)
    if tool is None:
        return source
    st = source.stat()
    key = f"tar-{source.name.split('.tar')[0]}-{_digest(str(source), st.st_size, st.st_mtime)}"

    def make(tmp: Path) -> None:
        with open(tmp / "source.tar", "wb") as out:
            proc = subprocess.run([*tool, str(source)], stdout=out, stderr=subprocess.PIPE)
        if proc.returncode != 0:
            raise PlanError(f"could not decompress {source}: {proc.stderr.decode(errors='replace').strip()[:200]}",
                            f"check the file, or install {tool[0]}")

    return _build(cache, key, make) / "source.tar"


def generated_tree_tarball(cache: Path, files: int, seed: int) -> Path:
    """An uncompressed tarball of a kernel-like generated tree."""

    def make(tmp: Path) -> None:
        pool = text_pool(seed)
        pool2 = pool * 2
        rng = np.random.default_rng(seed + 3)
        tree = tmp / "linux-like"
        sizes, dirs = tree_sizes(files, seed), tree_layout(files, seed)
        made: set[str] = set()
        for i, (size, d) in enumerate(zip(sizes, dirs)):
            if d not in made:
                (tree / d).mkdir(parents=True, exist_ok=True)
                made.add(d)
            start = int(rng.integers(0, len(pool)))
            body = pool2[start:start + int(size)] if size <= len(pool) else \
                (pool * (int(size) // len(pool) + 1))[:int(size)]
            (tree / d / f"f{i}.c").write_bytes(body)
        subprocess.run(["tar", "-cf", str(tmp / "source.tar"), "-C", str(tmp), "linux-like"], check=True,
                       capture_output=True)
        shutil.rmtree(tree)

    return _build(cache, f"tree-{files}-{seed}", make) / "source.tar"


def package_db(cache: Path, packages: int, seed: int) -> Path:
    """A package manager's local database: a directory per package with desc, files and mtree."""

    def make(tmp: Path) -> None:
        pool = text_pool(seed)
        rng = np.random.default_rng(seed + 4)
        db = tmp / "local"
        for i in range(packages):
            d = db / f"package{i}-1.{i % 17}-{i % 5}"
            d.mkdir(parents=True)
            for name, median in (("desc", 700), ("files", 2500), ("mtree", 1500)):
                size = int(min(rng.lognormal(np.log(median), 1.0), 256 * 1024))
                start = int(rng.integers(0, len(pool) - size)) if size < len(pool) else 0
                body = f"%NAME%\npackage{i}\n".encode() + pool[start:start + size]
                (d / name).write_bytes(body)

    return _build(cache, f"pkgdb-{packages}-{seed}", make) / "local"


def random_files(cache: Path, kind: str, count: int, low: int, high: int, seed: int) -> Path:
    """`count` files of incompressible data, each between `low` and `high` bytes."""

    def make(tmp: Path) -> None:
        rng = np.random.default_rng(seed)
        d = tmp / kind
        d.mkdir()
        for i in range(count):
            size = int(rng.integers(low, high + 1))
            with open(d / f"{kind}{i:05d}.bin", "wb") as fh:
                left = size
                while left:
                    n = min(left, 64 * 1024**2)
                    fh.write(random_bytes(rng, n))
                    left -= n

    return _build(cache, f"{kind}-{count}-{low}-{high}-{seed}", make) / kind
