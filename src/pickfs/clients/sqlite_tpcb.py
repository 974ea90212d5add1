"""The SQLite TPC-B-like client, run as its own process so pickfs itself is not measured.

    python -m pickfs.clients.sqlite_tpcb prepare --db PATH --scale N ...
    python -m pickfs.clients.sqlite_tpcb run --db PATH --duration S ...

Standard library only, so its start-up is cheap. Prints one JSON document on stdout.
The transaction is pgbench's built-in TPC-B-like script.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import time

from pickfs.clients.histogram import add

ACCOUNTS_PER_BRANCH = 100_000
TELLERS_PER_BRANCH = 10
FILLER = " " * 84

SCHEMA = (
    "CREATE TABLE pgbench_branches (bid INTEGER PRIMARY KEY, bbalance INTEGER NOT NULL, filler TEXT)",
    "CREATE TABLE pgbench_tellers (tid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, tbalance INTEGER NOT NULL,"
    " filler TEXT)",
    "CREATE TABLE pgbench_accounts (aid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, abalance INTEGER NOT NULL,"
    " filler TEXT)",
    "CREATE TABLE pgbench_history (tid INTEGER, bid INTEGER, aid INTEGER, delta INTEGER, mtime TEXT,"
    " filler TEXT)",
)

TRANSACTION = (
    "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid",
    "SELECT abalance FROM pgbench_accounts WHERE aid = :aid",
    "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid",
    "UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP)",
)


def connect(path: str, journal_mode: str, synchronous: str) -> tuple[sqlite3.Connection, str, int]:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    mode = conn.execute(f"PRAGMA journal_mode={journal_mode}").fetchone()[0]
    conn.execute(f"PRAGMA synchronous={synchronous}")
    sync_in_force = conn.execute("PRAGMA synchronous").fetchone()[0]
    return conn, str(mode).upper(), int(sync_in_force)


def prepare(args: argparse.Namespace) -> dict:
    t0 = time.perf_counter()
    conn, mode, sync = connect(args.db, args.journal_mode, args.synchronous)
    for stmt in SCHEMA:
        conn.execute(stmt)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO pgbench_branches VALUES (?, 0, ?)",
                     ((b, FILLER) for b in range(1, args.scale + 1)))
    conn.executemany("INSERT INTO pgbench_tellers VALUES (?, ?, 0, ?)",
                     ((t, (t - 1) // TELLERS_PER_BRANCH + 1, FILLER)
                      for t in range(1, args.scale * TELLERS_PER_BRANCH + 1)))
    conn.executemany("INSERT INTO pgbench_accounts VALUES (?, ?, 0, ?)",
                     ((a, (a - 1) // ACCOUNTS_PER_BRANCH + 1, FILLER)
                      for a in range(1, args.scale * ACCOUNTS_PER_BRANCH + 1)))
    conn.execute("COMMIT")
    if mode == "WAL":
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return {"client": "pickfs-sqlite-tpcb", "step": "prepare", "scale": args.scale,
            "journal_mode": mode, "synchronous": sync, "elapsed_s": time.perf_counter() - t0}


def own_io() -> dict:
    """This process's I/O as the kernel counts it, read before exiting (a parent's count
    would mix in every child it reaps)."""
    out = {}
    try:
        with open("/proc/self/io") as fh:
            for line in fh:
                key, value = line.split(":", 1)
                out[key.strip()] = int(value)
    except (OSError, ValueError):
        pass
    return out


def run(args: argparse.Namespace) -> dict:
    conn, mode, sync = connect(args.db, args.journal_mode, args.synchronous)
    rng = random.Random(args.seed)
    accounts = args.scale * ACCOUNTS_PER_BRANCH
    tellers = args.scale * TELLERS_PER_BRANCH
    histogram: dict[int, int] = {}
    per_second: list[int] = []
    execute = conn.execute
    clock = time.perf_counter
    limit = args.transactions or None
    start = clock()
    deadline = start + args.duration if not limit else float("inf")
    done = 0
    while True:
        now = clock()
        if now >= deadline or (limit is not None and done >= limit):
            break
        aid = rng.randint(1, accounts)
        tid = rng.randint(1, tellers)
        bid = rng.randint(1, args.scale)
        delta = rng.randint(-5000, 5000)
        params = {"delta": delta, "aid": aid, "tid": tid, "bid": bid}
        execute("BEGIN")
        for stmt in TRANSACTION:
            execute(stmt, params).fetchall()
        execute("COMMIT")
        end = clock()
        add(histogram, int((end - now) * 1e6))
        second = int(end - start)
        while len(per_second) <= second:
            per_second.append(0)
        per_second[second] += 1
        done += 1
    elapsed = clock() - start
    conn.close()
    return {"client": "pickfs-sqlite-tpcb", "step": "run", "transactions": done, "elapsed_s": elapsed,
            "journal_mode": mode, "synchronous": sync, "sqlite_version": sqlite3.sqlite_version,
            "latency_us": {str(k): v for k, v in sorted(histogram.items())}, "per_second": per_second,
            "io": own_io()}


def name_process(name: str) -> None:
    """Show up as `name` in /proc/<pid>/comm, so pickfs's monitors can tell the client apart."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    name_process("pickfs-sqlite")
    parser = argparse.ArgumentParser(prog="pickfs.clients.sqlite_tpcb")
    parser.add_argument("step", choices=("prepare", "run"))
    parser.add_argument("--db", required=True)
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--journal-mode", default="WAL")
    parser.add_argument("--synchronous", default="FULL")
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--transactions", type=int, default=0)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    result = prepare(args) if args.step == "prepare" else run(args)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
