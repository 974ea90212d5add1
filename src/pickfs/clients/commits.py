"""The crash test's client: numbered commits, each acknowledgement logged; and the check after a power cut.

    load   create the tables (accounts, and one row per commit)
    run    commit transactions one after another; after each COMMIT returns, append
           "commit-id CLOCK_MONOTONIC-ns" to --acks (on another filesystem: it is the witness);
           with --checkpoint-every S, every S seconds also make the database write its pages
           back (a checkpoint, a WAL switch, a page flush) and log "CLOCK_MONOTONIC-ns what" to
           --events, so that crash moments can be put around them
    check  after recovery: which commits are present, the database's own consistency check,
           and the transactions' invariant (the accounts' balances sum to the commits' deltas)

Each transaction moves a random delta into one account and records it as a commit row, so a
torn transaction breaks the invariant even where the database's own check passes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

from pickfs.clients.tpcc import DIALECTS, Tx, add_connection_options, connect

ACCOUNTS = 100
FILLER = "x" * 200


def load(args: argparse.Namespace) -> dict:
    if args.backend == "firebird":
        from pickfs.clients.tpcc import create_firebird

        create_firebird(args)
    conn, _ = connect(args)
    tx = Tx(conn, DIALECTS[args.backend])
    tx.q("CREATE TABLE pickfs_accounts (id INTEGER NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)")
    tx.q("CREATE TABLE pickfs_commits (id INTEGER NOT NULL PRIMARY KEY, delta INTEGER NOT NULL, filler VARCHAR(250))")
    tx.commit()
    for a in range(1, ACCOUNTS + 1):
        tx.q("INSERT INTO pickfs_accounts VALUES (?, ?)", (a, 0))
    tx.commit()
    if args.backend == "postgresql":  # recovery starts after the tables' pages exist: a torn one cannot be rebuilt
        tx.q("CHECKPOINT")
        tx.commit()
    conn.close()
    return {"client": "pickfs-commits", "step": "load", "backend": args.backend}


# --- crash moments around write-back (crash-fidelity work) ---
class InnoDBPageFlush:
    """InnoDB's nearest to a checkpoint, while commits go on: the page cleaner is told to write every dirty
    page, and a moment later the old limit returns.

    The limit is put back because a page cleaner kept at 0 flushes the log before every page it writes,
    which would make a lazy log flush (innodb_flush_log_at_trx_commit = 2) look safe for the rest of the run.
    """

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self.before: float | None = None
        self.until = 0.0

    def start(self, cur) -> None:
        if self.before is None:
            cur.execute("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
            self.before = float(cur.fetchall()[0][0])
        cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        self.until = time.monotonic() + self.hold_s

    def end_if_due(self, conn) -> None:
        if self.until and time.monotonic() >= self.until:
            conn.cursor().execute(f"SET GLOBAL innodb_max_dirty_pages_pct = {self.before}")
            self.until = 0.0


def _write_back(args: argparse.Namespace, conn, k: int, innodb: InnoDBPageFlush) -> str:
    """Make the database write its pages back now; what was asked for, as an event's words."""
    cur = conn.cursor()
    if args.backend == "postgresql":
        if k % 2:
            cur.execute("SELECT pg_switch_wal()")
            what = "a WAL segment switch"
        else:
            cur.execute("CHECKPOINT")
            what = "a checkpoint"
    elif args.backend == "sqlite":
        if args.journal_mode.upper() != "WAL":
            return ""  # a rollback journal writes the database back at every commit
        cur.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        what = "a WAL checkpoint"
    elif args.backend == "mariadb":
        innodb.start(cur)
        what = "a page flush"
    else:
        return ""
    conn.commit()
    return what


def run(args: argparse.Namespace) -> dict:
    conn, _ = connect(args)
    tx = Tx(conn, DIALECTS[args.backend])
    rng = random.Random(args.seed)
    acks = os.open(args.acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    events = os.open(args.events, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if args.events else -1
    start = time.monotonic()
    deadline = start + args.duration
    next_write_back = start + args.checkpoint_every if args.checkpoint_every > 0 else float("inf")
    n = k = 0
    innodb = InnoDBPageFlush(hold_s=min(0.3, args.checkpoint_every / 2))
    try:
        while n < args.transactions and time.monotonic() < deadline:
            n += 1
            delta = rng.randint(-1000, 1000)
            tx.q("UPDATE pickfs_accounts SET balance = balance + ? WHERE id = ?", (delta, rng.randint(1, ACCOUNTS)))
            tx.q("INSERT INTO pickfs_commits VALUES (?, ?, ?)", (n, delta, FILLER))
            tx.commit()
            os.write(acks, f"{n} {time.monotonic_ns()}\n".encode())
            innodb.end_if_due(conn)
            if time.monotonic() >= next_write_back:
                t = time.monotonic_ns()
                try:
                    what = _write_back(args, conn, k, innodb)
                except Exception as exc:
                    what = ""
                    conn.rollback()
                    print(f"write-back request failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                if what and events >= 0:
                    os.write(events, f"{t} {what} ({k + 1})\n".encode())
                k += 1
                next_write_back = time.monotonic() + args.checkpoint_every
    finally:
        os.close(acks)
        if events >= 0:
            os.close(events)
        conn.close()
    return {"client": "pickfs-commits", "step": "run", "backend": args.backend, "commits": n}


def _own_check(args: argparse.Namespace, tx: Tx) -> str:
    """The database's own consistency check: 'ok' or what it found."""
    if args.backend == "sqlite":
        rows = tx.q("PRAGMA integrity_check")
        found = [r[0] for r in rows]
        return "ok" if found == ["ok"] else "; ".join(found)[:300]
    if args.backend == "postgresql":
        tx.q("CREATE EXTENSION IF NOT EXISTS amcheck")
        for index in ("pickfs_commits_pkey", "pickfs_accounts_pkey"):
            tx.q("SELECT bt_index_parent_check(?::regclass, true)", (index,))
        return "ok"
    if args.backend == "mariadb":
        bad = [f"{r[0]}: {r[3]}" for r in tx.q("CHECK TABLE pickfs_commits, pickfs_accounts EXTENDED")
               if r[2] in ("error", "Error") or (r[2] == "status" and r[3] != "OK")]
        return "ok" if not bad else "; ".join(bad)[:300]
    return "ok"


def check(args: argparse.Namespace) -> dict:
    out: dict = {"client": "pickfs-commits", "step": "check", "backend": args.backend}
    try:
        conn, _ = connect(args)
    except Exception as exc:
        out["open_error"] = f"{type(exc).__name__}: {exc}"[:300]
        return out
    tx = Tx(conn, DIALECTS[args.backend])
    try:
        out["own_check"] = _own_check(args, tx)
        out["present"] = sorted(r[0] for r in tx.q("SELECT id FROM pickfs_commits"))
        balance = tx.q("SELECT COALESCE(SUM(balance), 0) FROM pickfs_accounts")[0][0]
        deltas = tx.q("SELECT COALESCE(SUM(delta), 0) FROM pickfs_commits")[0][0]
        out["invariant"] = "ok" if int(balance) == int(deltas) else \
            f"accounts sum to {int(balance)} but the commits' deltas to {int(deltas)}"
        tx.rollback()
    except Exception as exc:
        out["query_error"] = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        try:
            conn.close()
        except Exception:
            pass
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="pickfs.clients.commits")
    p.add_argument("step", choices=("load", "run", "check"))
    add_connection_options(p)
    p.add_argument("--acks", help="run: the acknowledgement log")
    p.add_argument("--transactions", type=int, default=10**9)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--events", help="run: where to log the write-backs asked for")
    p.add_argument("--checkpoint-every", type=float, default=0.0, help="run: seconds between write-backs (0: none)")
    args = p.parse_args(argv)
    result = {"load": load, "run": run, "check": check}[args.step](args)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
