"""Two bugs seen in use: a run whose whole id is also the start of another's could not be loaded; a fleet's merge
opened each host's fetched results file for writing (it migrated an older one in place)."""

from __future__ import annotations

import sqlite3

from pickfs.fleet.controller import FleetController
from pickfs.store import ResultStore
from pickfs.store.fleets import FleetHost
from pickfs.store.sqlitefile import OPEN_HERE
from tests.records import fill, make_plan


def test_a_whole_id_that_starts_another_loads_its_own_run(tmp_path):
    store = ResultStore(tmp_path / "r.db")
    fill(store, make_plan(), run_id="20260101-000000-abcd")
    fill(store, make_plan(), run_id="20260101-000000-abcd2")
    assert store.load("20260101-000000-abcd").id == "20260101-000000-abcd"
    assert store.load("20260101-000000-abcd2").id == "20260101-000000-abcd2"
    store.close()


class Quiet:
    def host(self, name: str, text: str) -> None:
        pass

    def note(self, text: str) -> None:
        pass


def test_a_fleets_merge_reads_the_fetched_file_and_never_writes_it(tmp_path):
    work = tmp_path / "work"
    fetched = work / "hosts" / "h1" / "results.db"
    fetched.parent.mkdir(parents=True)
    source = ResultStore(fetched)
    fill(source, make_plan(), run_id="20260101-000000-abcd", host={"hostname": "h1", "fleet": "fleet-x"})
    source.close()
    conn = sqlite3.connect(fetched)  # a host of an older pickfs: an older schema, no side files
    conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    conn.commit()
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    OPEN_HERE.discard(str(fetched.resolve()))
    before = fetched.read_bytes()
    controller = FleetController.__new__(FleetController)
    controller.store = ResultStore(tmp_path / "mine.db")
    controller.work, controller.fleet_id, controller.observer = work, "fleet-x", Quiet()
    controller.hosts = {"h1": FleetHost("h1")}
    controller._merge(["h1"])
    assert [r.id for r in controller.store.list_runs()] == ["20260101-000000-abcd"]
    assert fetched.read_bytes() == before  # not migrated in place, not written
    assert sorted(p.name for p in fetched.parent.iterdir()) == ["results.db"]
    controller.store.close()
