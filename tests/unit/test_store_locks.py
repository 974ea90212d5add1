"""Opening the results database again in a process that has it open must not drop SQLite's locks:
another pickfs writing meanwhile would take the database for unused and delete its log (it did:
"database disk image is malformed" within two rounds, before the fix)."""

import sqlite3
import subprocess
import sys

from pickfs.store import ResultStore

WRITER = """
import sys
from pathlib import Path
from pickfs.store import ResultStore
s = ResultStore(Path(sys.argv[1]))
for j in range(100):
    s.create_run(f"{sys.argv[2]}-{j}", "x", {"configs": [], "workloads": []}, {})
"""


def test_reopening_while_another_process_writes_keeps_the_database_whole(tmp_path):
    path = tmp_path / "results.db"
    first = ResultStore(path)
    first.create_run("r0", "x", {"configs": [], "workloads": []}, {})
    kept = [first]
    for i in range(4):
        kept.append(ResultStore(path))  # as a report or a benchmark opens it again
        subprocess.run([sys.executable, "-c", WRITER, str(path), f"w{i}"], check=True)
        assert len(ResultStore(path).list_runs()) == 1 + 100 * (i + 1)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
