import json
import os
import sqlite3

import pytest

from pickfs.analysis.run import build_views
from pickfs.errors import NotFound, PickfsError
from pickfs.report.json_export import SCHEMA, run_to_dict
from pickfs.report.terminal import render_run
from pickfs.store import ResultStore
from tests.records import fill, make_plan


def test_trials_round_trip_with_raw_output(store):
    run_id = fill(store, make_plan())
    rec = store.load(run_id)
    assert rec.status == "complete" and rec.host["hostname"] == "box"
    assert len(rec.trials) == 19
    m = [t for t in rec.trials if t.phase == "measured" and t.ok]
    assert m[0].raw_output == "raw-m" and m[0].mount == {"device": "/dev/loop0"} and m[0].notes == ("a note",)


def test_resolve_by_prefix_and_latest(store):
    run_id = fill(store, make_plan())
    assert store.resolve("20260101") == run_id
    assert store.resolve("latest") == run_id
    with pytest.raises(NotFound):
        store.resolve("1999")


def test_list_runs_counts(store):
    fill(store, make_plan())
    [row] = store.list_runs()
    assert (row.configs, row.trials_ok, row.trials_failed) == (4, 9, 1)


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "r.db"
    ResultStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(PickfsError, match="newer pickfs"):
        ResultStore(path)


def test_views_relative_to_first_config_and_flags(store):
    run_id = fill(store, make_plan())
    [view] = build_views(store.load(run_id))
    rows = {r.cell.config.name: r for r in view.rows}
    assert view.baseline == "ext4"
    assert rows["ext4"].relative == pytest.approx(100)
    assert rows["ext4-nobarrier"].relative == pytest.approx(200)
    assert rows["xfs"].relative == pytest.approx(50)
    assert rows["ext4-nobarrier"].flags == ("nobarrier",)
    assert rows["ext4"].flags == ()
    assert rows["jfs"].status == "unavailable" and "kernel has no jfs" in rows["jfs"].notes[0]
    assert rows["ext4"].primary.summary.median == 1000
    assert rows["ext4"].metric("lat_p99").summary.median == pytest.approx(0.001)


def test_named_baseline(store):
    run_id = fill(store, make_plan(baseline="xfs"))
    [view] = build_views(store.load(run_id))
    assert {r.cell.config.name: r.relative for r in view.rows}["ext4"] == pytest.approx(200)


def test_json_export_schema(store):
    run_id = fill(store, make_plan())
    doc = run_to_dict(store.load(run_id))
    json.dumps(doc)  # serialisable
    assert doc["schema"] == SCHEMA and doc["run_id"] == run_id and doc["host"]["kernel"] == "6.1"
    cell = doc["cells"][1]
    assert cell["config"] == "ext4-nobarrier" and cell["workload"] == "sqlite-tpcb"
    assert cell["metric"] == "tps" and cell["unit"] == "tx/s"
    assert cell["values"] == [2000, 2100, 1900]
    assert cell["summary"]["median"] == 2000 and cell["relative_to_baseline"] == pytest.approx(200)
    assert cell["metrics"]["lat_p99"]["values"] == [0.002, 0.002, 0.002]
    assert doc["cells"][3]["status"] == "unavailable" and doc["cells"][3]["values"] == []


def test_terminal_render_mentions_every_config(store):
    from rich.console import Console

    run_id = fill(store, make_plan())
    with open(os.devnull, "w") as sink:
        console = Console(width=200, record=True, file=sink)
        console.print(render_run(store.load(run_id)))
        text = console.export_text()
    for name in ("ext4", "ext4-nobarrier", "xfs", "jfs", "unavailable", "2.01x [1.52x", "nobarrier: the disk"):
        assert name in text
