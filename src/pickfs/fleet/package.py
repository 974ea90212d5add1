"""pickfs as the hosts get it: a wheel built from this source tree, and the wheels of its dependencies,
so that a host installs it with no registry of its own (`pip install --no-index`)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pickfs
from pickfs.errors import PickfsError

NOT_A_TREE = "run pickfs fleet from a clone of pickfs (./bootstrap.sh pickfs fleet ...), whose tree it builds"


@dataclass(frozen=True)
class Shipment:
    wheels: Path  # a directory: pickfs's wheel and every dependency's
    wheel: str  # the file name of pickfs's own wheel in it
    tree_hash: str  # of the sources it was built from: a host reinstalls when it changes


def source_tree() -> Path:
    root = Path(pickfs.__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "src" / "pickfs").is_dir():
        raise PickfsError("this pickfs is installed without its source tree", NOT_A_TREE)
    return root


def tree_files(root: Path) -> list[Path]:
    files = [root / "pyproject.toml", root / "README.md"]
    files += sorted(p for p in (root / "src" / "pickfs").rglob("*")
                    if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc"))
    return [f for f in files if f.exists()]


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for f in tree_files(root):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _pip(scratch: Path, *args: str) -> None:
    """pip, its temporary files in `scratch` (not the shared /tmp, where a kill -9 would leave them)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, env={**os.environ, "TMPDIR": str(scratch)})
    if proc.returncode != 0:
        tail = " | ".join(line.strip() for line in proc.stderr.strip().splitlines()[-3:])
        raise PickfsError(f"pip {args[0]} failed: {tail}",
                          "this machine (the controller) needs PyPI, or its pip cache, to build what the hosts install")


def build(cache: Path) -> Shipment:
    """The wheels for this tree, built once per version of the sources into `cache`.

    Everything the build makes on its way (a copy of the tree, pip's temporary files) is inside the
    version's own directory, which is removed and made again until the build completes: a build
    killed midway leaves nothing outside it, and the next one starts afresh."""
    root = source_tree()
    digest = tree_hash(root)
    out = cache / digest
    done = out / ".complete"
    if not done.exists():
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True, mode=0o700)
        scratch = out / ".build"
        copy = scratch / "tree"  # build a copy: building in place leaves build/ and egg-info in the clone
        for f in tree_files(root):
            dest = copy / f.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)
        _pip(scratch, "wheel", "--no-deps", "-q", "-w", str(out), str(copy))
        wheel = next(out.glob("pickfs-*.whl"))
        _pip(scratch, "download", "-q", "--only-binary=:all:", "-d", str(out), str(wheel))
        shutil.rmtree(scratch)
        done.write_text(wheel.name)
    return Shipment(out, done.read_text().strip(), digest)
