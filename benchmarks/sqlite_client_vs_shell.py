"""Is pickfs's SQLite client what gets measured? Compare it with the sqlite3 shell on tmpfs.

Runs the same TPC-B-like transactions (same random values) through pickfs's Python client
and through the sqlite3 command-line shell, on /dev/shm (tmpfs, so no disk is involved and
any client overhead shows in full). Prints transactions per second for each and the ratio.

    .venv/bin/python benchmarks/sqlite_client_vs_shell.py [--transactions 50000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pickfs.clients.tpcb import ACCOUNTS_PER_BRANCH, TELLERS_PER_BRANCH, TRANSACTION


def script(n: int, scale: int, seed: int, journal_mode: str, synchronous: str) -> str:
    rng = random.Random(seed * 1000)  # the client's first terminal draws from the same sequence
    lines = [f"PRAGMA journal_mode={journal_mode};", f"PRAGMA synchronous={synchronous};"]
    for _ in range(n):
        aid = rng.randint(1, scale * ACCOUNTS_PER_BRANCH)
        tid = rng.randint(1, scale * TELLERS_PER_BRANCH)
        bid = rng.randint(1, scale)
        delta = rng.randint(-5000, 5000)
        params = ((delta, aid), (aid,), (delta, tid), (delta, bid), (tid, bid, aid, delta))
        lines.append("BEGIN;")
        for stmt, values in zip(TRANSACTION, params):
            for v in values:
                stmt = stmt.replace("?", str(v), 1)
            lines.append(stmt + ";")
        lines.append("COMMIT;")
    return "\n".join(lines) + "\n"


def fresh_db(directory: Path, scale: int) -> Path:
    db = directory / "tpcb.db"
    for p in directory.glob("tpcb.db*"):
        p.unlink()
    subprocess.run([sys.executable, "-m", "pickfs.clients.tpcb", "load", "--backend", "sqlite", "--db", str(db),
                    "--scale", str(scale)], check=True, capture_output=True)
    return db


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transactions", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--synchronous", default="FULL")
    args = ap.parse_args()
    shell = shutil.which("sqlite3")
    if shell is None:
        print("error: the sqlite3 shell is missing (apt-get install sqlite3)", file=sys.stderr)
        return 1
    seed, scale = 42, 1
    sql = script(args.transactions, scale, seed, "WAL", args.synchronous)
    client_tps, shell_tps = [], []
    with tempfile.TemporaryDirectory(dir="/dev/shm", prefix="pickfs-bench-") as tmp:
        d = Path(tmp)
        for _ in range(args.repeats):
            db = fresh_db(d, scale)
            t0 = time.perf_counter()
            subprocess.run([shell, str(db)], input=sql, text=True, check=True, capture_output=True)
            shell_tps.append(args.transactions / (time.perf_counter() - t0))

            db = fresh_db(d, scale)
            out = subprocess.run([sys.executable, "-m", "pickfs.clients.tpcb", "run", "--backend", "sqlite", "--db", str(db),
                                  "--scale", str(scale), "--transactions", str(args.transactions),
                                  "--synchronous", args.synchronous, "--seed", str(seed)],
                                 check=True, capture_output=True, text=True)
            doc = json.loads(out.stdout)
            client_tps.append(doc["transactions"] / doc["elapsed_s"])
    c, s = statistics.median(client_tps), statistics.median(shell_tps)
    print(f"tmpfs, WAL, synchronous={args.synchronous}, {args.transactions} transactions, "
          f"median of {args.repeats}:")
    print(f"  pickfs client (Python sqlite3): {c:10,.0f} tx/s   runs: {', '.join(f'{v:,.0f}' for v in client_tps)}")
    print(f"  sqlite3 shell:                  {s:10,.0f} tx/s   runs: {', '.join(f'{v:,.0f}' for v in shell_tps)}")
    print(f"  client / shell: {c / s:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
