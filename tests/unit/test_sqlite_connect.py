"""A SQLite database that cannot be opened is let go at once: a crash check's client stays up for many states, and a
damaged database's file still open kept the state's filesystem busy after its unmount (10 s lost a state)."""

import argparse
import gc
import os
import sqlite3
from pathlib import Path

import pytest

from pickfs import databases


def held(path: Path) -> bool:
    """Whether this process has `path` open."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass  # the descriptor of the listing itself
    return str(path) in found


def test_a_database_that_will_not_open_is_closed_before_the_error_is_raised(tmp_path):
    db = tmp_path / "damaged.db"
    made = sqlite3.connect(db)
    made.execute("CREATE TABLE t (x)")
    made.commit()
    made.close()
    with open(db, "r+b") as f:  # the header's page-1 b-tree and schema overwritten: "file is not a database"
        f.seek(100)
        f.write(b"\xff" * 3000)
    args = argparse.Namespace(db=str(db), page_size=0, journal_mode="WAL", synchronous="FULL")
    gc.disable()  # the error's traceback holds the connection in a cycle: only an explicit close lets go of it now
    try:
        with pytest.raises(sqlite3.DatabaseError):
            databases.get("sqlite").connect(args)
        assert not held(db)
    finally:
        gc.enable()
