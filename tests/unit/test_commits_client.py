"""The crash test's commits client on a real SQLite database: commits acknowledged, write-backs asked and logged."""

import json
import sqlite3
import subprocess
import sys


def client(*args):
    r = subprocess.run([sys.executable, "-m", "pickfs.clients.commits", *args], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r


def test_sqlite_wal_checkpoints_are_asked_and_logged_while_commits_go_on(tmp_path):
    db, acks, events = tmp_path / "c.db", tmp_path / "acks", tmp_path / "events"
    common = ("--backend", "sqlite", "--db", str(db), "--journal-mode", "WAL", "--synchronous", "FULL")
    client("load", *common)
    r = client("run", *common, "--acks", str(acks), "--events", str(events), "--duration", "1.0",
               "--checkpoint-every", "0.1")
    assert "write-back request failed" not in r.stderr, r.stderr
    logged = events.read_text().splitlines()
    assert len(logged) >= 3 and all("a WAL checkpoint" in line for line in logged)
    acked = [int(line.split()[0]) for line in acks.read_text().splitlines()]
    assert acked == list(range(1, len(acked) + 1)) and len(acked) > 10
    # every acknowledged commit is in the database
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM pickfs_commits").fetchone()[0] == len(acked)
    check = json.loads(client("check", *common).stdout)
    assert check["own_check"] == "ok" and check["invariant"] == "ok" and check["present"] == acked


def test_a_commit_row_without_an_id_is_damage_and_the_other_rows_still_count(tmp_path):
    """A damaged page can hand a row back with a NULL id (Firebird, a torn page): the check said every commit lost
    (a TypeError sorting the ids); it now counts the rows that have one and calls the database damaged."""
    db = tmp_path / "c.db"
    with sqlite3.connect(db) as conn:  # the client's tables, but an id that may be NULL, as a broken page can give
        conn.execute("CREATE TABLE pickfs_accounts (id INTEGER NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)")
        conn.execute("CREATE TABLE pickfs_commits (id INTEGER, delta INTEGER NOT NULL, filler VARCHAR(250))")
        conn.execute("INSERT INTO pickfs_accounts VALUES (1, 5)")
        conn.executemany("INSERT INTO pickfs_commits VALUES (?, ?, 'x')", [(1, 2), (None, 0), (2, 3)])
    check = json.loads(client("check", "--backend", "sqlite", "--db", str(db)).stdout)
    assert "query_error" not in check, check
    assert check["present"] == [1, 2] and check["own_check"] == "1 commit rows without an id"


def test_commits_read_before_a_later_query_fails_are_present_not_lost(tmp_path):
    """A damaged accounts table fails the invariant's query after every commit was read (embedded Firebird, a torn
    page): the state is damaged, its commits present; the check had counted every one of them lost."""
    from pickfs.crash.runner import DB_STEM, Commits

    with sqlite3.connect(tmp_path / f"{DB_STEM}.db") as conn:  # the commits table only: the accounts' query fails
        conn.execute("CREATE TABLE pickfs_commits (id INTEGER NOT NULL PRIMARY KEY, delta INTEGER, filler TEXT)")
        conn.executemany("INSERT INTO pickfs_commits VALUES (?, 0, 'x')", [(1,), (2,), (3,)])
    opened, consistent, present, problem = Commits("sqlite", {}).check(tmp_path, None, tmp_path, {}, 0)
    assert opened and consistent is False and present == {1, 2, 3}
    assert "pickfs_accounts" in problem
