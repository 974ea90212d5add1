"""Merging runs from other results databases, fleets in the store, and the machines-compared report (pure)."""

import json

from pickfs.model import Trial
from pickfs.report.fleet import build_fleet_view, render_fleet, render_fleet_html, render_fleet_json
from pickfs.store import ResultStore
from pickfs.store.fleets import FleetHost
from pickfs.store.merge import merge_runs, plan_merge
from pickfs.store.postgres import masked, pg_dialect
from pickfs.store.results import SCHEMA_VERSION
from tests.records import fill, make_plan


def host(name, fstype):
    return {"hostname": "same-box", "name": name, "fingerprint": {"mount.fstype": fstype, "host.kernel": "6.1",
                                                                   "device.0.scheduler": "none"}}


def test_merging_twice_adds_nothing_and_a_longer_copy_adds_only_its_new_trials(tmp_path):
    src, dest = ResultStore(tmp_path / "src.db"), ResultStore(tmp_path / "dest.db")
    run_id = fill(src, make_plan(), host=host("a", "ext4"))
    first = merge_runs(dest, src)
    assert first.runs_added == [run_id] and first.trials_added == len(src.load(run_id).trials)
    assert merge_runs(dest, src).nothing
    src.save_trial(Trial(run_id=run_id, cell_index=0, repetition=9, phase="measured", started=99.0, elapsed_s=1.0, ok=True, metrics={"tps": 1.0}))
    third = merge_runs(dest, src)
    assert third.runs_extended == [run_id] and third.trials_added == 1
    assert len(dest.load(run_id).trials) == len(src.load(run_id).trials)
    assert dest.load(run_id).host["name"] == "a"


def test_a_run_that_only_shares_an_id_is_not_merged(tmp_path):
    a, b = ResultStore(tmp_path / "a.db"), ResultStore(tmp_path / "b.db")
    fill(a, make_plan(), host=host("a", "ext4"))
    fill(b, make_plan(), host=host("b", "ext3"))
    incoming, existing = a.load("latest"), b.load("latest")
    assert plan_merge(incoming, existing).clash
    result = merge_runs(b, a)
    assert result.clashes and result.nothing
    assert b.load("latest").host["name"] == "b"


def test_an_older_results_file_is_migrated_to_the_fleet_schema(tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    fill(ResultStore(path), make_plan())
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE fleets")
    conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    store = ResultStore(path)
    assert store.list_fleets() == []
    assert store.conn.execute("SELECT value FROM meta").fetchone()[0] == str(SCHEMA_VERSION)


def fleet_store(tmp_path, values_b):
    store = ResultStore(tmp_path / "results.db")
    fill(store, make_plan(), run_id="r-a", host=host("a", "ext3"),
         values={0: [1000, 1010, 990], 1: [2000, 2020, 1980], 2: [500, 505, 495]})
    fill(store, make_plan(), run_id="r-b", host=host("b", "ext4"), values=values_b)
    hosts = [FleetHost("a", "complete", "r-a"), FleetHost("b", "complete", "r-b"),
             FleetHost("c", "failed", error="missing Debian packages: fio")]
    store.create_fleet("fleet-x", {"workloads": []}, "hosts.ini", hosts)
    store.update_fleet("fleet-x", "partial", hosts)
    return store


def test_machines_compared_names_the_slower_host_and_the_storage_difference(tmp_path):
    store = fleet_store(tmp_path, {0: [125, 126, 124], 1: [1990, 2000, 2010], 2: [60, 61, 62]})
    fleet = store.load_fleet("fleet-x")
    assert store.is_fleet("fleet-x") and not store.is_fleet("r-a")
    view = build_fleet_view(fleet, {"a": store.load("r-a"), "b": store.load("r-b")})
    (w,) = view.workloads
    assert w.hosts == ("a", "b") and w.cells[("ext4", "b")].median == 125
    assert w.rankings["a"] == ("ext4-nobarrier", "ext4", "xfs")
    assert w.rankings["b"] == ("ext4-nobarrier", "ext4", "xfs") and w.agree
    significant = {(d.config, d.host_b) for d in w.differences if d.significant}
    assert ("ext4", "b") in significant and ("ext4-nobarrier", "b") not in significant
    assert view.storage_diffs("a", "b")[0].key == "mount.fstype"
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(render_fleet(view))
    text = console.export_text()
    assert "ext4: b is x0.13" in text and "mount.fstype ext3 -> ext4" in text
    assert "missing Debian packages: fio" in text
    page = render_fleet_html(view)
    assert page.count('class="plotly-graph-div"') == 2 and '"type":"heatmap"' in page and "mount.fstype" in page
    doc = json.loads(render_fleet_json(view))
    assert doc["workloads"][0]["hosts_agree"] is True


def test_hosts_that_order_the_configurations_differently_are_called_out(tmp_path):
    store = fleet_store(tmp_path, {0: [3000, 3010, 2990], 1: [2000, 2020, 1980], 2: [500, 505, 495]})
    view = build_fleet_view(store.load_fleet("fleet-x"), {"a": store.load("r-a"), "b": store.load("r-b")})
    (w,) = view.workloads
    assert not w.agree and not w.same_winner


def test_postgres_dialect_and_a_url_without_its_password():
    assert pg_dialect("SELECT id FROM runs WHERE id=? AND x LIKE 'a%'") == \
        "SELECT id FROM runs WHERE id=%s AND x LIKE 'a%%'"
    assert "DOUBLE PRECISION" in pg_dialect("CREATE TABLE t (created REAL NOT NULL)")
    assert "BIGSERIAL PRIMARY KEY" in pg_dialect("id INTEGER PRIMARY KEY AUTOINCREMENT")
    assert masked("postgresql://team:s3cret@db.example/pickfs") == "postgresql://team:***@db.example/pickfs"
    assert masked("postgresql:///pickfs?host=/run/pg") == "postgresql:///pickfs?host=/run/pg"
