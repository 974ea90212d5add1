"""Does running pgbench through pickfs change what it measures?

On one freshly made filesystem (ext4 on a loop image) with one PostgreSQL server started by
pickfs, alternates pgbench as pickfs runs it (per-transaction log and per-second progress
on) with the same pgbench command typed by hand (no logging), and prints the median tps of
each and their ratio. Needs root and PostgreSQL.

    sudo .venv/bin/python benchmarks/pgbench_vs_hand.py [--pairs 5] [--duration 10] [--clients 4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from pickfs.model import Target, WorkloadSpec
from pickfs.proc import run
from pickfs.services.postgresql import PostgreSQL
from pickfs.stack.ledger import Ledger
from pickfs.stack.presets import PRESETS
from pickfs.stack.provision import provision
from pickfs.workloads.pgbench import Pgbench, _tool, parse_summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--workdir", default="/var/tmp/pickfs-bench")
    args = ap.parse_args()
    if os.geteuid() != 0 or PostgreSQL.unavailable_reason():
        print(f"error: needs root and PostgreSQL ({PostgreSQL.unavailable_reason() or 'run as root'})",
              file=sys.stderr)
        return 1
    settings = Pgbench.normalize({"clients": args.clients, "threads": min(2, args.clients),
                                  "duration": args.duration, "scale": 10})
    spec = WorkloadSpec("pgbench", "pgbench", tuple(sorted(settings.items())))
    target = Target(workdir=args.workdir, size_bytes=4 * 1024**3)
    ledger = Ledger(Path(args.workdir) / "ledger")
    wl = Pgbench()
    through, by_hand = [], []
    with provision(PRESETS["ext4"], target, ledger) as prov:
        with PostgreSQL.start(prov.datadir, settings, ledger, Path(args.workdir) / "run") as ep:
            wl.prepare(spec, prov.datadir, ep)
            hand = [_tool("pgbench"), "-b", "tpcb-like", "-c", str(args.clients), "-j", str(min(2, args.clients)),
                    "-T", str(args.duration), "-h", ep.socket_dir, "-p", str(ep.port), "-U", ep.user, ep.database]
            for i in range(args.pairs):
                for mine in ((True, False) if i % 2 == 0 else (False, True)):
                    if mine:
                        through.append(Pgbench.parse(wl.run(spec, prov.datadir, ep).text)["tps"])
                    else:
                        by_hand.append(parse_summary(run(hand, timeout=args.duration * 5 + 60).text)["tps"])
    a, b = statistics.median(through), statistics.median(by_hand)
    print(f"ext4 on a loop image, pgbench tpcb-like, scale 10, {args.clients} clients, {args.duration} s, "
          f"{args.pairs} runs each, alternated:")
    print(f"  through pickfs (sampled log, -P 1): {a:9,.0f} tps   runs: {', '.join(f'{v:,.0f}' for v in through)}")
    print(f"  by hand:                            {b:9,.0f} tps   runs: {', '.join(f'{v:,.0f}' for v in by_hand)}")
    print(f"  ratio {a / b:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
