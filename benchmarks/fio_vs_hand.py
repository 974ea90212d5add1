"""Does running fio through pickfs change what it measures?

On one freshly made filesystem (ext4 on a loop image), lays the fileio files out once, then
alternates the fileio workload as pickfs runs it (job file on stdin, JSON out, parsed) with the
very same job file run by hand (`fio job.fio`, fio's normal text output, IOPS read from it), and
prints the median IOPS of each, their ratio and a Mann-Whitney p-value. Needs root and fio.

    sudo .venv/bin/python benchmarks/fio_vs_hand.py [--pairs 5] [--duration 10]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from scipy.stats import mannwhitneyu

from pickfs.model import Target, WorkloadSpec
from pickfs.stack.ledger import Ledger
from pickfs.stack.presets import PRESETS
from pickfs.stack.provision import provision
from pickfs.workloads.fio import Fileio, fio_unavailable

_IOPS = re.compile(r"(read|write): IOPS=([\d.]+)(k?)")


def hand_iops(text: str) -> float:
    """Total IOPS from fio's own terminal output (read + write lines)."""
    return sum(float(v) * (1000 if k else 1) for _, v, k in _IOPS.findall(text))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--workdir", default="/var/tmp/pickfs-bench")
    args = ap.parse_args()
    if os.geteuid() != 0 or fio_unavailable():
        print(f"error: needs root and fio ({fio_unavailable() or 'run as root'})", file=sys.stderr)
        return 1
    settings = Fileio.normalize({"size": "512M", "files": 8, "duration": args.duration})
    spec = WorkloadSpec("fileio", "fileio", tuple(sorted(settings.items())))
    ledger = Ledger(Path(args.workdir) / "ledger")
    wl = Fileio()
    through, by_hand = [], []
    with provision(PRESETS["ext4"], Target(workdir=args.workdir, size_bytes=2 * 1024**3), ledger) as prov:
        wl.prepare(spec, prov.datadir)
        job = Path(args.workdir) / "fileio-by-hand.fio"
        job.write_text(wl.measured_job(spec, prov.datadir))
        for i in range(args.pairs):
            for mine in ((True, False) if i % 2 == 0 else (False, True)):
                if mine:
                    through.append(Fileio.parse(wl.run(spec, prov.datadir).text)["iops"])
                else:
                    out = subprocess.run(["fio", str(job)], capture_output=True, text=True, check=True).stdout
                    by_hand.append(hand_iops(out))
    a, b = statistics.median(through), statistics.median(by_hand)
    p = mannwhitneyu(through, by_hand).pvalue
    print(f"ext4 on a loop image, fileio (16 KiB random, 60% reads, fsync every 100 I/Os), 512 MiB in 8 files, "
          f"{args.duration:g} s, {args.pairs} runs each, alternated:")
    print(f"  through pickfs: {a:9,.0f} IOPS   runs: {', '.join(f'{v:,.0f}' for v in through)}")
    print(f"  by hand:        {b:9,.0f} IOPS   runs: {', '.join(f'{v:,.0f}' for v in by_hand)}")
    print(f"  ratio {a / b:.3f}, Mann-Whitney p = {p:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
