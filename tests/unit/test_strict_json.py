"""Every JSON export parses with a strict parser (JavaScript's, Go's, Rust's): no NaN, no Infinity. A spread or a
ratio that is not a number is written as null, and the encoder refuses any other token outside the standard."""

import gzip
import json
import math
from pathlib import Path

import pytest

from pickfs.report.json_export import render_json
from pickfs.report.json_text import strict_json
from pickfs.report.search_json import render_json as render_search_json
from pickfs.store import ResultStore
from tests.records import fill, make_plan

DATA = Path(__file__).resolve().parents[1] / "data"


def refuse(token: str) -> None:
    raise ValueError(f"not JSON: {token}")


def strict(text: str):
    return json.loads(text, parse_constant=refuse)


def test_every_stored_run_exports_strict_json(tmp_path):
    path = tmp_path / "results.db"
    path.write_bytes(gzip.decompress((DATA / "real-runs.db.gz").read_bytes()))
    store = ResultStore(path)
    runs = [store.load(r.id) for r in store.list_runs()]
    store.close()
    assert runs
    for run in runs:
        doc = strict(render_json(run))
        assert doc["run_id"] == run.id


def test_a_workload_that_writes_nothing_has_a_null_spread(store):
    # a workload whose every slice measures 0 (tmpfs writing 0 bytes): its spread is 0/0, not a number
    values = {0: [0, 0, 0], 1: [2000, 2100, 1900], 2: [500, 500, 500]}
    doc = strict(render_json(store.load(fill(store, make_plan(), values=values))))
    [cell] = [c for c in doc["cells"] if c["config"] == "ext4"]
    assert cell["values"] == [0.0, 0.0, 0.0]
    assert cell["summary"]["cv"] is None


def test_the_search_json_is_strict():
    doc = strict(render_search_json({"best": {"ratio": math.inf, "cv": math.nan, "ok": [1.5, -math.inf]}}))
    assert doc["best"] == {"ratio": None, "cv": None, "ok": [1.5, None]}


def test_what_cannot_be_json_fails_loudly_rather_than_writing_a_bad_file():
    assert strict(strict_json({"a": (1.0, float("nan"))})) == {"a": [1.0, None]}
    with pytest.raises(TypeError):
        strict_json({"a": {1.0, 2.0}})  # a set is no JSON: an error here, never a file no parser takes


def test_the_fleet_json_is_strict_when_a_host_measured_nothing(tmp_path):
    from pickfs.report.fleet import build_fleet_view, render_fleet_json
    from tests.unit.test_merge import fleet_store

    store = fleet_store(tmp_path, {0: [0, 0, 0], 1: [2000, 2020, 1980], 2: [500, 505, 495]})
    view = build_fleet_view(store.load_fleet("fleet-x"), {"a": store.load("r-a"), "b": store.load("r-b")})
    doc = strict(render_fleet_json(view))
    assert doc["schema"] == "pickfs.fleet/1" and doc["workloads"]


def test_the_env_json_is_strict(tmp_path, capsys):
    from pickfs.cli.main import main

    try:
        main(["env", str(tmp_path), "--json", "-", "--workdir", str(tmp_path / "work")])
    except SystemExit as exc:
        assert not exc.code
    assert strict(capsys.readouterr().out)
