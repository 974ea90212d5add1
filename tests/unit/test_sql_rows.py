"""`Tx.q`, the SQL clients' one call: a statement's rows, [] for a statement that returns none, and an error met while
fetching the rows raised with the engine's own message (a damaged page past the first row read as "no rows" made a
check report every commit lost, or fail with an IndexError of its own). Real sqlite3; Firebird's embedded engine in
test_firebird_check.py."""

import argparse
import os
import sqlite3

import pytest

from pickfs import databases
from pickfs.clients import commits
from pickfs.clients.sql import Tx, open_tx

PAGE = 4096


def sqlite_args(db) -> argparse.Namespace:
    return argparse.Namespace(backend="sqlite", db=str(db), page_size=PAGE, journal_mode="WAL", synchronous="FULL")


def test_a_statement_without_rows_gives_none_and_a_query_its_rows(tmp_path):
    tx, _ = open_tx(sqlite_args(tmp_path / "a.db"))
    assert tx.q("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)") == []
    assert tx.q("INSERT INTO t VALUES (?, ?)", (1, "one")) == []
    assert tx.q("UPDATE t SET v = ? WHERE id = ?", ("uno", 1)) == []
    assert tx.q("SELECT id, v FROM t WHERE id = ?", (2,)) == []
    assert tx.q("SELECT id, v FROM t") == [(1, "uno")]
    assert tx.q("PRAGMA integrity_check") == [("ok",)]
    tx.conn.close()


def damaged(tmp_path, pages: tuple[int, ...] = ()):
    """A commits database (2,000 commits, all in its file) with these pages overwritten by garbage (numbered from 1;
    page 2 is the accounts table's root): by default its last 8, the commits table's last leaves, so its first rows
    read."""
    args = sqlite_args(tmp_path / "c.db")
    commits.load(args)
    commits.run(argparse.Namespace(**vars(args), acks=str(tmp_path / "acks.log"), transactions=2000, duration=60.0,
                                   seed=1, events=None, checkpoint_every=0.0))
    assert not os.path.exists(args.db + "-wal") or os.path.getsize(args.db + "-wal") == 0
    conn = sqlite3.connect(args.db)
    assert conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'pickfs_accounts'").fetchone() == (2,)
    conn.close()
    count = os.path.getsize(args.db) // PAGE
    with open(args.db, "r+b") as f:
        for n in pages or range(count - 7, count + 1):
            f.seek((n - 1) * PAGE)
            f.write(os.urandom(PAGE))
    return args


def test_an_error_while_fetching_rows_is_raised_with_the_engines_message(tmp_path):
    args = damaged(tmp_path)
    tx = Tx(sqlite3.connect(args.db), databases.get("sqlite").dialect)
    cur = tx.conn.cursor()
    cur.execute("SELECT id FROM pickfs_commits")
    assert cur.fetchone() is not None  # the first row reads: the damage is met while fetching
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        tx.q("SELECT id FROM pickfs_commits")
    tx.conn.close()
    # the crash check says so, rather than a database with no commits in it
    out = commits.check(args)
    assert "present" not in out and "malformed" in out["query_error"], out


def test_an_integrity_check_that_stops_is_a_finding_and_the_commits_are_still_read(tmp_path):
    """The accounts table's page damaged: PRAGMA integrity_check stops on it while its rows are fetched; that is the
    database's own check failing, and every commit (its table whole) is still read: damage, not loss."""
    args = damaged(tmp_path, pages=(2,))
    out = commits.check(args)
    assert out["own_check"] == "integrity_check stopped: database disk image is malformed", out
    assert out["present"] == list(range(1, 2001)) and "malformed" in out["query_error"], out
