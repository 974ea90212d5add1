"""How long does building a configuration take? Attach, mkfs, mount, unmount, detach.

For each filesystem this machine supports, on a sparse image of the given size, repeated;
prints the median of each step in milliseconds. Needs root.

    sudo .venv/bin/python benchmarks/provision_times.py [--size 4G] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pickfs.proc import run
from pickfs.stack import blockdev
from pickfs.stack.filesystems import KNOWN, fs_type, unavailable_reason
from pickfs.units import parse_size

STEPS = ("attach", "mkfs", "mount", "umount", "detach")


def once(fs: str, size: int, workdir: Path) -> dict[str, float]:
    image, mnt = workdir / "bench.img", workdir / "mnt"
    mnt.mkdir(exist_ok=True)
    with open(image, "wb") as fh:
        fh.truncate(size)
    ft = fs_type(fs)
    times: dict[str, float] = {}
    t = time.perf_counter()
    dev = blockdev.attach_loop(image)
    times["attach"] = time.perf_counter() - t
    try:
        t = time.perf_counter()
        run([*ft.mkfs, *ft.steady, dev], timeout=600)
        times["mkfs"] = time.perf_counter() - t
        t = time.perf_counter()
        run(["mount", "-t", fs, dev, str(mnt)])
        times["mount"] = time.perf_counter() - t
        t = time.perf_counter()
        run(["umount", str(mnt)])
        times["umount"] = time.perf_counter() - t
    finally:
        t = time.perf_counter()
        blockdev.detach_loop(dev)
        times["detach"] = time.perf_counter() - t
        image.unlink()
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="4G")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workdir", default="/var/tmp/pickfs")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("error: needs root (losetup, mkfs, mount)", file=sys.stderr)
        return 1
    size = parse_size(args.size)
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    print(f"median of {args.repeats}, {args.size} sparse image, milliseconds")
    print(f"{'filesystem':10} " + " ".join(f"{s:>8}" for s in STEPS) + f" {'total':>8}")
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="bench-") as tmp:
        for fs, ft in KNOWN.items():
            if not ft.needs_device or unavailable_reason(fs):
                continue
            samples = [once(fs, size, Path(tmp)) for _ in range(args.repeats)]
            med = {s: statistics.median(x[s] for x in samples) * 1000 for s in STEPS}
            print(f"{fs:10} " + " ".join(f"{med[s]:8.1f}" for s in STEPS) + f" {sum(med.values()):8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
