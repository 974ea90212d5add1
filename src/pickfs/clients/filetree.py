"""File-tree jobs: run phases (copy, extract, search, read, delete) and time each on its own.

Run as its own process so the I/O it causes is attributed to it. Reads a JSON spec on stdin:
{"root": dir on the filesystem under test, "drop_caches": bool,
 "phases": [{"name": "extract", "op": "extract", "src": ..., "dst": ..., "preload": [...]}, ...]}
Before each phase: sync, drop the page cache (when root and asked), read the phase's `preload`
sources back into memory (they live outside the filesystem under test, so their disk is not what
gets measured). Each phase's time ends with syncfs() of the filesystem under test, so data
still in memory is not counted as written. Prints one JSON document.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CLIENT = "pickfs-filetree"


def drop_caches() -> bool:
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def walk_files(root: Path) -> list[Path]:
    out: list[Path] = []
    stack = [root]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append(Path(e.path))
                elif e.is_file(follow_symlinks=False):
                    out.append(Path(e.path))
    return out


def preload(paths: list[str]) -> int:
    """Read files (or every file under directories) once; return the bytes read."""
    total = 0
    for p in map(Path, paths):
        for f in walk_files(p) if p.is_dir() else [p]:
            with open(f, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    total += len(chunk)
    return total


def _tool(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:2])} failed: {(proc.stderr or proc.stdout).strip()[:300]}")


def search(root: Path) -> int:
    """What `find -name` does: list every directory and stat every entry."""
    count = 0
    stack = [root]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                e.stat(follow_symlinks=False)
                count += 1
                if e.is_dir(follow_symlinks=False):
                    stack.append(Path(e.path))
    return count


def read_all(root: Path, needle: bytes, times: int) -> int:
    """What a package query does: read every file looking for a word, `times` over."""
    hits = 0
    for _ in range(times):
        for f in walk_files(root):
            with open(f, "rb") as fh:
                if needle in fh.read():
                    hits += 1
    return hits


def run_phase(phase: dict[str, Any]) -> dict[str, Any]:
    # The spec's JSON values, as given: src and dst are the paths of the ops that use them.
    op = phase["op"]
    src: Any = phase.get("src")
    dst: Any = phase.get("dst")
    extra: dict[str, Any] = {}
    if op == "copy_file":
        Path(dst).parent.mkdir(parents=True, exist_ok=True)
        _tool(["cp", src, dst])
    elif op == "copy_tree":
        _tool(["cp", "-a", f"--reflink={phase.get('reflink', 'auto')}", src, dst])
    elif op == "extract":
        Path(dst).mkdir(parents=True, exist_ok=True)
        _tool(["tar", "-xf", src, "-C", dst])
    elif op == "delete":
        _tool(["rm", "-rf", "--", *phase["paths"]])
    elif op == "search":
        extra["entries"] = search(Path(src))
    elif op == "read":
        extra["hits"] = read_all(Path(src), phase.get("needle", "pickfs").encode(), int(phase.get("times", 1)))
    else:
        raise RuntimeError(f"unknown phase op {op!r}")
    return extra


def main() -> int:
    spec = json.loads(sys.stdin.read())
    root = Path(spec["root"])
    phases = []
    dropped = True
    for phase in spec["phases"]:
        if spec.get("drop_caches", True):
            dropped = drop_caches() and dropped
        else:
            os.sync()
        preloaded = preload(phase.get("preload", []))
        t0 = time.perf_counter()
        try:
            extra = run_phase(phase)
            _tool(["sync", "-f", str(root)])
        except (RuntimeError, OSError) as exc:
            print(f"phase {phase['name']}: {exc}", file=sys.stderr)
            return 1
        elapsed = time.perf_counter() - t0
        st = os.statvfs(root)
        phases.append({"name": phase["name"], "elapsed_s": elapsed, "preloaded_bytes": preloaded,
                       "space_used_bytes": (st.f_blocks - st.f_bfree) * st.f_frsize, **extra})
    json.dump({"client": CLIENT, "phases": phases, "caches_dropped": dropped and spec.get("drop_caches", True)},
              sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
