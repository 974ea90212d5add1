"""The commits client that stays up answers each check as a client started for it does, and a check that hangs is
ended and answered by a new process (a real SQLite database, real processes; no root needed)."""

import json
import sqlite3
import subprocess
import sys

from pickfs.crash.client import clients
from pickfs.stack.ledger import Ledger
from tests.conftest import ledger_entries


def one_shot(*argv):
    out = subprocess.run([sys.executable, "-m", "pickfs.clients.commits", *argv], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_a_standing_client_answers_as_a_client_per_check_and_one_that_hangs_is_replaced(workdir):
    db = workdir / "commits.db"
    options = ["--backend", "sqlite", "--db", str(db), "--journal-mode", "WAL", "--synchronous", "FULL"]
    one_shot("load", *options)
    one_shot("run", *options, "--acks", str(workdir / "acks.log"), "--duration", "0.3")
    ledger = Ledger(workdir / "ledger")
    with clients(ledger, workdir / "client.err") as standing:
        first = standing.ask("sqlite", None, options, 60)
        again = standing.ask("sqlite", None, options, 60)
        assert first == again == one_shot("check", *options)
        assert first["present"] and first["own_check"] == "ok" and first["invariant"] == "ok"
        # a missing database: the same answer as well (sqlite makes an empty one; its tables are missing)
        other = [*options[:2], "--db", str(workdir / "none.db"), *options[4:]]
        assert standing.ask("sqlite", None, other, 60) == one_shot("check", *other)
        (process,) = standing.by_key.values()
        assert process.started == 1
        # a check that waits for ever (another process holds the database's write lock through a WAL reset, so
        # the check's connection waits on its busy timeout): ended at the time limit, the next check a new process
        locker = sqlite3.connect(db, isolation_level=None)
        locker.execute("PRAGMA locking_mode=EXCLUSIVE")
        locker.execute("BEGIN EXCLUSIVE")
        pid = process.proc.pid
        assert standing.ask("sqlite", None, options, 2) is None
        assert process.proc is None
        locker.execute("ROLLBACK")
        locker.close()
        assert standing.ask("sqlite", None, options, 60) == first
        assert process.started == 2 and process.proc.pid != pid
    assert process.proc is None
    assert ledger_entries(workdir) == []
