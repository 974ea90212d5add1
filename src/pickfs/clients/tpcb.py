"""pgbench's TPC-B-like transaction, written once over the database adapters, run as its own process.

    python -m pickfs.clients.tpcb load --backend sqlite --db PATH --scale 1
    python -m pickfs.clients.tpcb run  --backend firebird --db PATH --scale 1 --duration 10 [--clients 1]

--scale means what it means to pgbench: branches, each with 10 tellers and 100,000 accounts.
The run stops at --duration seconds, or after --transactions when that is given. With --rate N
the transactions are due at N per second (Poisson arrivals, or --arrivals uniform) instead of one
after another, and each one's latency is measured from when it was due (clients/pacing.py). Prints one JSON
document: the transactions committed, their latency histogram and per-second counts, errors, the
durability settings in force, and the client's own CPU time and I/O.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from functools import partial
from typing import Any

from pickfs import databases
from pickfs.clients.histogram import add, merged
from pickfs.clients.pacing import Book, Waits, add_rate_options, arrival_times, merged_books, paced, summary
from pickfs.clients.process import name_process, own_io, run_at_once
from pickfs.clients.sql import add_connection_options, open_tx

CLIENT = "pickfs-tpcb"
ACCOUNTS_PER_BRANCH = 100_000
TELLERS_PER_BRANCH = 10
FILLER = " " * 84

SCHEMA = (
    "CREATE TABLE pgbench_branches (bid INTEGER NOT NULL PRIMARY KEY, bbalance INTEGER, filler CHAR(88))",
    "CREATE TABLE pgbench_tellers (tid INTEGER NOT NULL PRIMARY KEY, bid INTEGER, tbalance INTEGER, filler CHAR(84))",
    "CREATE TABLE pgbench_accounts (aid INTEGER NOT NULL PRIMARY KEY, bid INTEGER, abalance INTEGER,"
    " filler CHAR(84))",
    "CREATE TABLE pgbench_history (tid INTEGER, bid INTEGER, aid INTEGER, delta INTEGER, mtime TIMESTAMP,"
    " filler CHAR(22))",
)

TRANSACTION = (
    "UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?",
    "SELECT abalance FROM pgbench_accounts WHERE aid = ?",
    "UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?",
    "UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP)",
)


def rows(scale: int) -> tuple[tuple[str, list[tuple[Any, ...]]], ...]:
    """pgbench's tables at `scale` branches (pure)."""
    return (("pgbench_branches", [(b, 0, FILLER) for b in range(1, scale + 1)]),
            ("pgbench_tellers", [(t, (t - 1) // TELLERS_PER_BRANCH + 1, 0, FILLER)
                                 for t in range(1, TELLERS_PER_BRANCH * scale + 1)]),
            ("pgbench_accounts", [(a, (a - 1) // ACCOUNTS_PER_BRANCH + 1, 0, FILLER)
                                  for a in range(1, ACCOUNTS_PER_BRANCH * scale + 1)]))


def load(args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    db = databases.get(args.backend)
    db.create(args)
    tx, _ = open_tx(args)
    for stmt in SCHEMA:
        tx.q(stmt)
    tx.commit()
    for table, values in rows(args.scale):
        cur = tx.conn.cursor()
        cur.executemany(f"INSERT INTO {table} VALUES ({', '.join([db.dialect.placeholder] * len(values[0]))})",
                        values)
        tx.commit()
    in_force = db.in_force(tx.conn)
    tx.conn.close()
    db.compact(args)
    return {"client": CLIENT, "step": "load", "mix": "tpcb", "backend": args.backend, "scale": args.scale,
            **in_force, "elapsed_s": time.perf_counter() - t0}


GIVE_UP_AFTER = 100  # failed transactions in a row


class Terminal:
    """One client: its own connection, committing the transaction until the deadline or its quota."""

    def __init__(self, args: argparse.Namespace, index: int, quota: float) -> None:
        self.args, self.quota = args, quota
        self.rng = random.Random(None if args.seed is None else args.seed * 1000 + index)
        self.tx, self.retryable = open_tx(args)  # connected before the run's clock starts
        self.in_force = databases.get(args.backend).in_force(self.tx.conn)
        self.hist: dict[int, int] = {}
        self.per_second: dict[int, int] = {}
        self.done = self.errors = 0
        self.end = 0.0
        self.book = Book()  # at a fixed rate: what became of every transaction due
        self.realtime = False  # at a fixed rate: waited for due times at real-time priority

    def _prepared(self) -> None:
        tx = self.tx
        self.statements = [(s.replace("?", tx.d.placeholder), s.startswith("SELECT")) for s in TRANSACTION]
        self.in_a_row = 0

    def draw(self) -> tuple[Any, ...]:
        """The next transaction's parameters."""
        rng, scale = self.rng, self.args.scale
        aid, tid = rng.randint(1, ACCOUNTS_PER_BRANCH * scale), rng.randint(1, TELLERS_PER_BRANCH * scale)
        bid = rng.randint(1, scale)
        delta = rng.randint(-5000, 5000)
        return (delta, aid), (aid,), (delta, tid), (delta, bid), (tid, bid, aid, delta)

    def attempt(self, params: tuple[Any, ...]) -> bool:
        """One transaction: True when it committed; False when it failed and was rolled back."""
        tx = self.tx
        try:
            cur = tx.conn.cursor()
            for (stmt, reads), p in zip(self.statements, params):
                cur.execute(stmt, p)
                if reads:
                    cur.fetchall()
            tx.commit()
        except self.retryable as exc:
            tx.rollback()
            self.errors += 1
            self.in_a_row += 1
            if self.in_a_row >= GIVE_UP_AFTER:  # not contention: the database cannot commit (a full disk, I/O errors)
                raise RuntimeError(f"{self.in_a_row} transactions in a row failed, the last with: {exc}") from None
            return False
        self.in_a_row = 0
        return True

    def run(self, start: float, deadline: float) -> None:
        self._prepared()
        clock = time.perf_counter
        while self.done < self.quota and clock() < deadline:
            params = self.draw()
            t0 = clock()
            if not self.attempt(params):
                continue
            t1 = clock()
            add(self.hist, int((t1 - t0) * 1e6))
            s = int(t1 - start)
            self.per_second[s] = self.per_second.get(s, 0) + 1
            self.done += 1
        self.end = clock()  # the run's window ends here: closing (a WAL checkpoint, a flush) is not timed

    def prime(self) -> None:
        """One read before the schedule starts, not counted: the connection's first statement reads the
        schema and prepares its statement, which would otherwise land on the first transaction due."""
        cur = self.tx.conn.cursor()
        cur.execute(self.statements[1][0], (1,))
        cur.fetchall()
        self.tx.rollback()

    def run_paced(self, start: float, deadline: float, index: int) -> None:
        """At a fixed rate: this terminal's share of the arrivals, latency from each one's due time."""
        self._prepared()
        args = self.args
        rate = args.rate / args.clients
        arrivals_rng = random.Random(None if args.seed is None else args.seed * 1000 + 500 + index)
        schedule = arrival_times(rate, args.arrivals, arrivals_rng, start, phase=index / args.clients)

        def attempt() -> bool:
            ok = self.attempt(self.draw())
            if ok:
                s = int(time.perf_counter() - start)
                self.per_second[s] = self.per_second.get(s, 0) + 1
                self.done += 1
            return ok

        waits = Waits(not args.normal_waits)  # this thread's own priority while waiting
        self.realtime = waits.realtime
        try:
            self.end = paced(schedule, deadline, attempt, self.book, args.latency_limit, waits=waits)
        finally:
            waits.working()
        self.hist = dict(self.book.service)

    def close(self) -> None:
        try:
            self.tx.conn.close()
        except Exception:
            pass


def run(args: argparse.Namespace) -> dict[str, Any]:
    limit = args.transactions or 0
    quotas = [limit // args.clients + (i < limit % args.clients) if limit else float("inf")
              for i in range(args.clients)]
    terminals = [Terminal(args, i, quotas[i]) for i in range(args.clients)]
    if args.rate > 0:  # at a fixed rate, primed before the schedule's clock starts
        for t in terminals:
            t._prepared()
            t.prime()
    start = time.perf_counter()
    deadline = start + args.duration if not limit else float("inf")
    # the CPU of the run's window: closing is not counted
    if args.rate > 0:
        failures, cpu = run_at_once([partial(t.run_paced, start, deadline, i) for i, t in enumerate(terminals)])
    else:
        failures, cpu = run_at_once([partial(t.run, start, deadline) for t in terminals])
    elapsed = max((t.end for t in terminals), default=0.0) - start
    if elapsed <= 0:  # no terminal finished its loop (each failed): the time until they stopped
        elapsed = time.perf_counter() - start
    for t in terminals:
        t.close()
    return report(args, terminals, elapsed, cpu, failures)


def report(args: argparse.Namespace, terminals: list[Terminal], elapsed: float, cpu: float,
           failures: list[str]) -> dict[str, Any]:
    """The run's JSON document: the fields sqlite-tpcb's and firebird-tpcb's parsers read."""
    hist = {str(k): v for k, v in sorted(merged([t.hist for t in terminals]).items())}
    seconds = merged([t.per_second for t in terminals])
    done, errors = sum(t.done for t in terminals), sum(t.errors for t in terminals)
    return {"client": CLIENT, "step": "run", "mix": "tpcb", "backend": args.backend, "scale": args.scale,
            "clients": args.clients, "transactions": done, "errors": errors, "elapsed_s": elapsed,
            "latency_us": hist, "types": {"tpcb": {"count": done, "errors": errors, "latency_us": hist}},
            "per_second": [seconds.get(s, 0) for s in range(int(elapsed))], "client_cpu_s": cpu,
            **(terminals[0].in_force if terminals else {}), "failures": failures, "io": own_io(),
            **({"fixed_rate": summary(merged_books([t.book for t in terminals]), args.rate, args.arrivals,
                                      args.latency_limit, args.duration,
                                      all(t.realtime for t in terminals))}
               if args.rate > 0 else {})}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="pickfs.clients.tpcb")
    p.add_argument("step", choices=("load", "run"))
    add_connection_options(p)
    p.add_argument("--scale", type=int, default=1, help="branches, as pgbench's scale (100,000 accounts each)")
    p.add_argument("--clients", type=int, default=1)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--transactions", type=int, default=0, help="stop after this many instead (0: at --duration)")
    p.add_argument("--seed", type=int, default=None)
    add_rate_options(p)
    p.add_argument("--process-name", default=CLIENT, help="the name pickfs's monitors see (/proc/PID/comm)")
    args = p.parse_args(argv)
    if args.rate > 0 and args.transactions:
        p.error("--rate runs for --duration; leave --transactions out")
    name_process(args.process_name)
    result = load(args) if args.step == "load" else run(args)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 1 if result.get("failures") else 0


if __name__ == "__main__":
    sys.exit(main())
