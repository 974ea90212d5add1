"""Production conditions, measured (issue 13): a memory limit and aged filesystems.

memory: the same read-heavy job (fio random reads over DATA, its page cache kept between slices)
run through pickfs on ext4 with and without --memory LIMIT, one after the other; prints the
device's reads and the throughput of each (median per slice). Without the limit the data stays
in the page cache; with it, reads reach the device.

aging: for each filesystem, a sparse image of SIZE aged to FILL (stack/aging.py, 3 rounds, seed 1)
and the same fresh, each with 4 files of 128 MiB laid out after; prints the aging's time and the
fragmentation reached. Needs root. Hold the disk lock when the disk is shared:

    sudo flock /tmp/pickfs-disk.lock .venv/bin/python benchmarks/production_conditions.py memory [--limit 1G --data 3G]
    sudo flock /tmp/pickfs-disk.lock .venv/bin/python benchmarks/production_conditions.py aging [--size 4G --fill 0.7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pickfs.model import FsConfig, Target, WorkloadSpec
from pickfs.stack.aging import fragmentation
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import provision
from pickfs.units import parse_size
from pickfs.workloads.fio import Fileio


def memory(limit: str, data: str, workdir: Path) -> None:
    job = ["--fs", "ext4", "--workload", "fileio", "--set", "read_share=1", "--set", f"size={data}", "--set",
           "fsync_every=0", "--set", "keep_cache=true", "--blocks", "1", "--rounds", "5", "--slice", "2s",
           "--max-time", "3m"]
    env = {**os.environ, "PICKFS_WORKDIR": str(workdir)}
    for name, extra in ((f"--memory {limit}", ["--memory", limit]), ("no limit", [])):
        out = workdir / "run.json"
        subprocess.run([sys.executable, "-m", "pickfs", "run", *job, *extra, "--json", str(out)], check=True,
                       env=env, capture_output=True)
        cell = json.loads(out.read_text())["cells"][0]
        reads = cell["monitors"]["disk_read_bytes"]
        print(f"{name:>14}: device reads {reads / 1024**2:,.0f} MiB per slice, "
              f"{statistics.median(cell['values']):,.0f} reads/s (median of {len(cell['values'])} slices); "
              f"{' '.join(n for n in cell['notes'] if n.startswith('data'))}")


def aging(size: int, fill: float, workdir: Path) -> None:
    ledger = Ledger(workdir / "ledger")
    spec = WorkloadSpec("fileio", "fileio", tuple(sorted(Fileio.normalize({"size": "512M", "files": 4}).items())))
    for fs in ("ext4", "xfs", "btrfs"):
        for age in (None, fill):
            with provision(FsConfig(fs, fs, age=age), Target(workdir=str(workdir), size_bytes=size), ledger) as prov:
                Fileio(workdir / "data").prepare(spec, prov.datadir)
                f = fragmentation(Path(prov.info.mountpoint), prov.datadir, fs, prov.info.device)
                a = prov.aging
                how = (f"aged to {a.fill:.0%} in {a.seconds:.1f} s ({a.files:,} files, "
                       f"{a.bytes_written / 1024**3:.1f} GiB written)") if a else "fresh"
                print(f"{fs:>6} {how}: data {f.data_extents_per_file:.1f} extents/file, aged files "
                      f"{f.aged_extents_per_file or 0:.2f} extents/file, free space in "
                      f"{f.free_extents if f.free_extents is not None else '?'} fragments", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("memory", "aging"))
    p.add_argument("--limit", default="1G")
    p.add_argument("--data", default="3G")
    p.add_argument("--size", default="4G")
    p.add_argument("--fill", type=float, default=0.7)
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="pickfs-bench-", dir="/var/tmp") as tmp:
        if a.what == "memory":
            memory(a.limit, a.data, Path(tmp))
        else:
            aging(parse_size(a.size), a.fill, Path(tmp))


if __name__ == "__main__":
    main()
