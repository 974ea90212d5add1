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


def damaged(tmp_path):
    """A commits database whose last pages (the commits table's last leaves) are garbage: its first rows read."""
    args = sqlite_args(tmp_path / "c.db")
    commits.load(args)
    commits.run(argparse.Namespace(**vars(args), acks=str(tmp_path / "acks.log"), transactions=2000, duration=60.0,
                                   seed=1, events=None, checkpoint_every=0.0))
    size = os.path.getsize(args.db)
    assert not os.path.exists(args.db + "-wal") or os.path.getsize(args.db + "-wal") == 0  # all in the file
    with open(args.db, "r+b") as f:
        f.seek(size - 8 * PAGE)
        f.write(os.urandom(8 * PAGE))
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
