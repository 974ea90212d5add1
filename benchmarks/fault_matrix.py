"""The fault matrix on this machine: configurations x databases with their settings x faults, the outcome counts
per cell, and the wall time of the whole matrix.

Runs `pickfs crashtest --plan PLAN --fault ...` (real recorder failing real block requests, real filesystems, real
servers) on a plan it writes: ext4, ext4 data=journal, xfs, btrfs x SQLite (WAL, synchronous=FULL), PostgreSQL
with its defaults and with data_sync_retry=on, MariaDB (InnoDB, sysbench-oltp's settings), Firebird (embedded,
forced writes); faults: a failed flush, a failed write to the WAL's blocks, a failed write-back to the data files'
blocks, and a failed write-back of the commits table's blocks (rows never written again) with the next checkpoint
left to succeed (the case data_sync_retry decides). A pair that cannot be run (Firebird keeps no WAL, SQLite and
Firebird no table file of its own) is reported as not run at once. Prints one line per cell and the wall time,
with the load average before and after; the run is kept in the results database (`pickfs report RUN --html`).
Needs root; wrap it in the benchmark lock:

    flock /tmp/pickfs-bench.lock .venv/bin/python benchmarks/fault_matrix.py
    flock /tmp/pickfs-bench.lock .venv/bin/python benchmarks/fault_matrix.py --fs ext4,xfs --faults flush
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKLOADS = ('[[workload]]\nname = "sqlite-tpcb"\nlabel = "sqlite-wal-full"\njournal_mode = "WAL"\n'
             'synchronous = "FULL"\n'
             '[[workload]]\nname = "pgbench"\nlabel = "pg-defaults"\n'
             '[[workload]]\nname = "pgbench"\nlabel = "pg-retry"\ndata_sync_retry = "on"\n'
             '[[workload]]\nname = "sysbench-oltp"\nlabel = "mariadb"\n'
             '[[workload]]\nname = "firebird-tpcb"\nlabel = "firebird"\n')


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fs", default="ext4,ext4-journal,xfs,btrfs")
    p.add_argument("--faults", default="flush,write:wal,write:data,write:table")
    p.add_argument("--duration", default="3s")
    p.add_argument("--workdir", default="/var/tmp/pickfs-fault-bench")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        plan, out = Path(tmp) / "plan.toml", Path(tmp) / "faults.json"
        plan.write_text("".join(f'[[config]]\npreset = "{c}"\n' for c in a.fs.split(",")) + WORKLOADS)
        cmd = [sys.executable, "-m", "pickfs", "crashtest", "--plan", str(plan), "--fault", a.faults,
               "--duration", a.duration, "--json", str(out)]
        load0 = os.getloadavg()
        t0 = time.monotonic()
        r = subprocess.run(cmd, env={**os.environ, "PICKFS_WORKDIR": a.workdir}, capture_output=True, text=True)
        wall = time.monotonic() - t0
        load1 = os.getloadavg()
        if r.returncode != 0 or not out.exists():
            print(r.stderr[-3000:], file=sys.stderr)
            return 1
        cells = json.loads(out.read_text())["faults"]["cells"]
    print(f"{'configuration':<14} {'database':<32} {'fault':<11} {'outcome':<9} {'inj':>4} {'acked':>6} {'lost':>5} "
          f"{'errors':>6} {'false':>5}  server / filesystem / after restart")
    for c in cells:
        n, b, t = c.get("counts") or {}, c.get("behaviour") or {}, c.get("truth") or {}
        after = "" if not t else ("came up" if t.get("came_up") else "did not come up") + \
            ("; old value" if n.get("old_value") else "") + ("; corruption" if n.get("corruption") else "")
        retry = "data_sync_retry=on" in c["settings"]
        db = f"{c['database']}{' data_sync_retry=on' if retry else ''}"
        print(f"{c['config']:<14} {db:<32} {c['fault']:<11} {c['outcome']:<9} {c['injected']:>4} "
              f"{n.get('acked', ''):>6} {n.get('acked_lost', ''):>5} {n.get('failed', ''):>6} "
              f"{n.get('false_failures', ''):>5}  {b.get('server', '')} / {b.get('filesystem', '')} / {after}"
              + (f" [{'; '.join(n for n in c['notes'] if 'PR_SET_IO_FLUSHER' not in n)[:200]}]" if c.get("notes") else ""))
    for note in dict.fromkeys(n for c in cells for n in c.get("notes", ()) if "PR_SET_IO_FLUSHER" in n):
        print(f"note: {note}")
    print(f"wall time of the matrix: {wall / 60:.1f} min ({len(cells)} cells); load average before "
          f"{load0[0]:.2f}, after {load1[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
