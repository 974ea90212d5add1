"""The fault test's client: it keeps committing through the fault and logs every answer it was given.

    load   the crash test's tables (clients/commits.py), and one row holding the newest commit's number
    run    numbered transactions until --duration ends, each a line in --log:
             "N A t_ns"            commit N acknowledged
             "N E t_ns message"    commit N failed: the error the client was given
             "- C t_ns message"    no connection (the server down or restarting): nothing was sent
             "- K t_ns what"       a write-back asked for (a checkpoint, a WAL checkpoint); "- k t_ns message" failed
           a failed transaction is rolled back, a broken connection opened again, and the client goes on
    check  after restart: the commits present, the newest-commit row, the database's own check and the invariant
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
from pickfs.clients import commits
from pickfs.clients.sql import Tx, add_connection_options, open_tx
from pickfs.faults.plan import LAYOUTS

RECONNECT_PAUSE_S = 0.1


def load(args: argparse.Namespace) -> dict[str, Any]:
    commits.load(args)
    tx, _ = open_tx(args)
    tx.q("CREATE TABLE pickfs_newest (id INTEGER NOT NULL PRIMARY KEY, n INTEGER NOT NULL)")
    tx.commit()
    tx.q("INSERT INTO pickfs_newest VALUES (1, 0)")
    tx.commit()
    resolved = {}
    for name, sql in LAYOUTS[args.backend].queries.items():  # files a fault is aimed at, as the database names them
        rows = tx.q(sql)
        resolved[name] = str(rows[0][0]) if rows else ""
        tx.rollback()
    tx.conn.close()
    return {"client": "pickfs-faults", "step": "load", "backend": args.backend, "resolved": resolved}


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]


def _drop(tx: Tx | None) -> None:
    if tx is None:
        return
    try:
        tx.conn.close()
    except Exception:
        pass


class Session:
    """A connection that is opened again when the database broke it."""

    def __init__(self, args: argparse.Namespace, log: int) -> None:
        self.args, self.log = args, log
        self.tx: Tx | None = None
        self.back = databases.get(args.backend).write_back(args, 1.0)

    def note(self, line: str) -> None:
        os.write(self.log, (line.replace("\n", " ") + "\n").encode())

    def connected(self) -> Tx | None:
        if self.tx is None:
            try:
                self.tx, _ = open_tx(self.args)
            except Exception as exc:
                self.note(f"- C {time.monotonic_ns()} {one_line(exc)}")
                time.sleep(RECONNECT_PAUSE_S)
        return self.tx

    def commit(self, n: int, delta: int, account: int) -> None:
        tx = self.connected()
        if tx is None:
            return
        try:
            tx.q("UPDATE pickfs_accounts SET balance = balance + ? WHERE id = ?", (delta, account))
            tx.q("INSERT INTO pickfs_commits VALUES (?, ?, ?)", (n, delta, commits.FILLER))
            tx.q("UPDATE pickfs_newest SET n = ? WHERE id = 1", (n,))
            tx.commit()
        except Exception as exc:
            self.note(f"{n} E {time.monotonic_ns()} {one_line(exc)}")
            self.recover(tx)
            return
        self.note(f"{n} A {time.monotonic_ns()}")
        try:
            self.back.tick(tx.conn)  # what a write-back changed for a while put back when due (InnoDB's page flush)
        except Exception as exc:
            self.note(f"- k {time.monotonic_ns()} {one_line(exc)}")
            self.recover(tx)

    def recover(self, tx: Tx) -> None:
        """Roll back; a connection that then cannot answer a query (the server closed it) is opened again."""
        try:
            tx.rollback()
            tx.q("SELECT 1")
            tx.rollback()
        except Exception:
            _drop(tx)
            self.tx = None

    def write_back(self, k: int) -> None:
        tx = self.connected()
        if tx is None:
            return
        t = time.monotonic_ns()
        try:
            what = self.back.ask(tx.conn, k)
            if what:
                self.note(f"- K {t} {what}")
        except Exception as exc:
            self.note(f"- k {t} {one_line(exc)}")
            self.recover(tx)


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    log = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    session = Session(args, log)
    deadline = time.monotonic() + args.duration
    next_back = time.monotonic() + args.checkpoint_every if args.checkpoint_every > 0 else float("inf")
    n = k = 0
    try:
        while time.monotonic() < deadline:
            if session.connected() is None:
                continue
            n += 1
            session.commit(n, rng.randint(-1000, 1000), rng.randint(1, commits.ACCOUNTS))
            if time.monotonic() >= next_back:
                session.write_back(k)
                k += 1
                next_back = time.monotonic() + args.checkpoint_every
    finally:
        os.close(log)
        _drop(session.tx)
    return {"client": "pickfs-faults", "step": "run", "backend": args.backend, "attempts": n}


def check(args: argparse.Namespace) -> dict[str, Any]:
    out = commits.check(args)
    if "present" not in out:
        return out
    try:
        tx, _ = open_tx(args)
        try:
            rows = tx.q("SELECT n FROM pickfs_newest WHERE id = 1")
            out["newest"] = int(rows[0][0]) if rows else None
            tx.rollback()
        finally:
            tx.conn.close()
    except Exception as exc:
        out["query_error"] = one_line(exc)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="pickfs.faults.client")
    p.add_argument("step", choices=("load", "run", "check"))
    add_connection_options(p)
    p.add_argument("--log", help="run: the log of every answer")
    p.add_argument("--duration", type=float, default=4.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--checkpoint-every", type=float, default=0.0, help="run: seconds between write-backs (0: none)")
    args = p.parse_args(argv)
    result = {"load": load, "run": run, "check": check}[args.step](args)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
