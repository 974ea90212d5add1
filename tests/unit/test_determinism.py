"""The same stored run renders to the same bytes in every process: no figure may depend on the order in which a
set or dict of names happens to be iterated (Python salts the hashes of strings per process, PYTHONHASHSEED)."""

from __future__ import annotations

import gzip
import itertools
import os
import subprocess
import sys
from pathlib import Path

from pickfs.stats.weather import _Parts, _pooled

DATA = Path(__file__).resolve().parents[1] / "data" / "real-runs.db.gz"

# Renders every run of a results database in every format and prints one digest per run and format. HTML without
# plotly.js (the same file every time) and with plotly's random div ids taken out.
RENDER_ALL = """
import hashlib, re, sys
from pickfs.report.csv_export import render_csv, render_table_csv
from pickfs.report.html import render_html
from pickfs.report.json_export import render_json
from pickfs.report.markdown import render_markdown
from pickfs.report.terminal import render_run
from pickfs.store import ResultStore
from rich.console import Console

uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
store = ResultStore.read_only(sys.argv[1])  # as report reads it: two at once never race for the file
for summary in store.list_runs():
    record = store.load(summary.id)
    console = Console(width=80, record=True, file=open("/dev/null", "w"))
    console.print(render_run(record, explain=True))
    outputs = {"terminal": console.export_text(), "json": render_json(record), "markdown": render_markdown(record),
               "csv": render_csv(record), "table-csv": render_table_csv(record),
               "html": uuid.sub("UUID", render_html(record, plotly=None))}
    for name, text in outputs.items():
        print(summary.id, name, hashlib.sha256(text.encode()).hexdigest())
"""


def _render_all(db: Path, seeds: tuple[str, ...]) -> list[list[str]]:
    """The digests, one process per hash seed (run side by side)."""
    procs = [subprocess.Popen([sys.executable, "-c", RENDER_ALL, str(db)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}) for seed in seeds]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * len(seeds)
    return [out.splitlines() for out in outs]


def test_a_stored_run_renders_to_the_same_bytes_whatever_the_hash_seed(tmp_path):
    db = tmp_path / "results.db"
    db.write_bytes(gzip.decompress(DATA.read_bytes()))
    first, second = _render_all(db, ("1", "2"))
    assert len(first) == 6 * 5, first  # every format of every stored run was rendered
    assert first == second


def test_the_pooled_spread_from_one_mkfs_to_the_next_is_the_same_in_any_order_of_the_configurations():
    """The weather model pools every configuration's image-to-image spread; the informers come as a set of names,
    whose order differs from one process to the next. The pooled figure (it becomes the share of the variance
    between blocks in the JSON) must not move in its last digits with that order."""
    levels = {"ext4": (0.1, 0.7, 0.23), "xfs": (1.3, 0.2), "btrfs": (0.05, 0.61, 0.3, 0.9), "ext3": (2.2, 1.1)}
    parts = {name: _Parts(lv, tuple(1 / 7 for _ in lv), 0.0, 0.0, 1.0, 0.013, 9.0) for name, lv in levels.items()}
    results = {_pooled(parts, order) for order in itertools.permutations(levels)}
    assert len(results) == 1, results


def test_a_journal_that_ends_while_the_file_is_being_read_is_looked_at_again(tmp_path, monkeypatch):
    """Two renders of one results file at once: one saw the other's -journal, which was gone when it copied it,
    and refused the file as damaged (No such file or directory: results.db-journal)."""
    import shutil

    from pickfs.store import sqlitefile

    db = tmp_path / "results.db"
    db.write_bytes(gzip.decompress(DATA.read_bytes()))
    journal = Path(f"{db}-journal")
    journal.write_bytes(b"")  # a writer's transaction, under way when the reader looks
    real = shutil.copyfile

    def copyfile(src, dst, **kw):
        if str(src).endswith("-journal"):
            journal.unlink()  # ... and over when it copies
            raise FileNotFoundError(2, "No such file or directory", str(src))
        return real(src, dst, **kw)

    monkeypatch.setattr(sqlitefile.shutil, "copyfile", copyfile)
    conn = sqlitefile.read_only_connection(db)
    try:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] > 0
    finally:
        conn.close()
