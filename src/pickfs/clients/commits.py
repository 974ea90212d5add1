"""The crash test's client: numbered commits, each acknowledgement logged; and the check after a power cut.

    load   create the tables (accounts, and one row per commit)
    run    commit transactions one after another; after each COMMIT returns, append
           "commit-id CLOCK_MONOTONIC-ns" to --acks (on another filesystem: it is the witness);
           with --checkpoint-every S, every S seconds also make the database write its pages
           back (a checkpoint, a WAL switch, a page flush) and log "CLOCK_MONOTONIC-ns what" to
           --events, so that crash moments can be put around them
    check  after recovery: which commits are present, the database's own consistency check,
           and the transactions' invariant (the accounts' balances sum to the commits' deltas)
    serve  check after check in one process (its start-up paid once): each asked for on stdin as
           one JSON line, the options of a `check`, each answered on stdout as one JSON line

A check whose database failed on an engine that runs in the client (embedded Firebird, whose
internal consistency check on a damaged database leaves it able to hang or abort when the
connection is closed or the process exits) answers with "ends": true and ends its process at once
(`check` as well as `serve`): the answer is out before anything the broken engine does next.

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
from typing import Any

from pickfs import databases
from pickfs.clients.sql import add_connection_options, open_tx

ACCOUNTS = 100
FILLER = "x" * 200
# the connections of checks whose engine failed, kept from Python's garbage collector until the process ends: their
# finalizers would call into the failed engine (a cursor's close after Firebird's internal consistency check aborted
# or crashed the process before its answer was out)
LEFT_OPEN: list[Any] = []


def load(args: argparse.Namespace) -> dict[str, Any]:
    db = databases.get(args.backend)
    db.create(args)
    tx, _ = open_tx(args)
    tx.q("CREATE TABLE pickfs_accounts (id INTEGER NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)")
    tx.q("CREATE TABLE pickfs_commits (id INTEGER NOT NULL PRIMARY KEY, delta INTEGER NOT NULL, filler VARCHAR(250))")
    tx.commit()
    for a in range(1, ACCOUNTS + 1):
        tx.q("INSERT INTO pickfs_accounts VALUES (?, ?)", (a, 0))
    tx.commit()
    db.settle_load(tx)
    tx.conn.close()
    return {"client": "pickfs-commits", "step": "load", "backend": args.backend}


def run(args: argparse.Namespace) -> dict[str, Any]:
    tx, _ = open_tx(args)
    conn = tx.conn
    rng = random.Random(args.seed)
    acks = os.open(args.acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    events = os.open(args.events, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if args.events else -1
    start = time.monotonic()
    deadline = start + args.duration
    next_write_back = start + args.checkpoint_every if args.checkpoint_every > 0 else float("inf")
    n = k = 0
    write_back = databases.get(args.backend).write_back(args, args.checkpoint_every)
    try:
        while n < args.transactions and time.monotonic() < deadline:
            n += 1
            delta = rng.randint(-1000, 1000)
            tx.q("UPDATE pickfs_accounts SET balance = balance + ? WHERE id = ?", (delta, rng.randint(1, ACCOUNTS)))
            tx.q("INSERT INTO pickfs_commits VALUES (?, ?, ?)", (n, delta, FILLER))
            tx.commit()
            os.write(acks, f"{n} {time.monotonic_ns()}\n".encode())
            write_back.tick(conn)
            if time.monotonic() >= next_write_back:
                t = time.monotonic_ns()
                try:
                    what = write_back.ask(conn, k)
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


def check(args: argparse.Namespace, end_on_failure: bool = False) -> dict[str, Any]:
    """The check after recovery, its connection closed before it returns. `end_on_failure`: the caller ends its
    process after writing the answer when the answer says so ("ends": the database failed, on an engine that runs in
    this process and is not to be trusted after a failure, `ends_client_after_failure`); that connection is then left
    open, since closing it can hang or abort the engine (`answered`)."""
    out: dict[str, Any] = {"client": "pickfs-commits", "step": "check", "backend": args.backend}
    ends = end_on_failure and databases.get(args.backend).ends_client_after_failure
    try:
        tx, _ = open_tx(args, for_check=True)
    except Exception as exc:
        out["open_error"] = f"{type(exc).__name__}: {exc}"[:300]
        if ends:
            out["ends"] = True
        return out
    try:
        out["own_check"] = databases.get(args.backend).own_check(tx)
        ids = [r[0] for r in tx.q("SELECT id FROM pickfs_commits")]
        # a damaged page can hand back a row whose id is NULL: the rows that have one are counted, the others said
        out["present"] = sorted(i for i in ids if i is not None)
        if len(out["present"]) < len(ids):
            nulls = f"{len(ids) - len(out['present'])} commit rows without an id"
            out["own_check"] = nulls if out["own_check"] == "ok" else f"{out['own_check']}; {nulls}"
        balance = tx.q("SELECT COALESCE(SUM(balance), 0) FROM pickfs_accounts")[0][0]
        deltas = tx.q("SELECT COALESCE(SUM(delta), 0) FROM pickfs_commits")[0][0]
        out["invariant"] = "ok" if int(balance) == int(deltas) else \
            f"accounts sum to {int(balance)} but the commits' deltas to {int(deltas)}"
        tx.rollback()
    except Exception as exc:
        out["query_error"] = f"{type(exc).__name__}: {exc}"[:300]
        if ends:
            out["ends"] = True
    finally:
        if out.get("ends"):
            LEFT_OPEN.append(tx)
        else:
            try:
                tx.conn.close()
            except Exception:
                pass
    return out


def answered(doc: dict[str, Any]) -> None:
    """A check's answer written on stdout; a process whose answer says it ends ("ends") ends here at once: no close of
    the connection its engine failed on, no shutdown of that engine (either can wait for ever, or abort the process
    before its answer is out, on a damaged database); the kernel closes its files."""
    json.dump(doc, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()
    if doc.get("ends"):
        os._exit(0)


def serve(args: argparse.Namespace) -> dict[str, Any]:
    """Checks one after another, each on a connection of its own that is closed before the answer is written (so
    nothing of the state's filesystem is held open between checks); until stdin ends, or a check's database failed on
    an engine not to be trusted after it (the process ends after that answer, `answered`)."""
    parser = _parser()
    for line in sys.stdin:
        if not line.strip():
            continue
        asked = parser.parse_args(["check", *json.loads(line)])
        answered(check(asked, end_on_failure=True))
    return {"client": "pickfs-commits", "step": "serve"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pickfs.clients.commits")
    p.add_argument("step", choices=("load", "run", "check", "serve"))
    add_connection_options(p)
    p.add_argument("--acks", help="run: the acknowledgement log")
    p.add_argument("--transactions", type=int, default=10**9)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--events", help="run: where to log the write-backs asked for")
    p.add_argument("--checkpoint-every", type=float, default=0.0, help="run: seconds between write-backs (0: none)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.step == "check":
        answered(check(args, end_on_failure=True))
        return 0
    result = {"load": load, "run": run, "serve": serve}[args.step](args)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
