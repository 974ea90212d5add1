"""Fleets in the results database: one plan run on many hosts through Ansible, each host's outcome.

A fleet row keeps the plan, the inventory and, per host, its status, the run it made (merged into
the same database as any run) and, for a host that failed, its error. Schema version 4 added the
table; store/results.py applies it as a migration to older files.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from pickfs.errors import NotFound

FLEET_SCHEMA: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS fleets ("
    " id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL, status TEXT NOT NULL,"
    " plan_json TEXT NOT NULL, inventory TEXT NOT NULL, hosts_json TEXT NOT NULL DEFAULT '[]')",
)

FLEET_PREFIX = "fleet-"


@dataclass(frozen=True)
class FleetHost:
    """One host of a fleet run: its inventory name, how it ended, its run and its error."""

    name: str
    status: str = "pending"  # pending | running | complete | failed | unreachable | interrupted
    run_id: str | None = None
    error: str = ""
    wall_s: float | None = None  # from the controller starting the host's job to its results fetched
    job_s: float | None = None  # the pickfs run on the host itself, start to end


@dataclass(frozen=True)
class FleetRecord:
    id: str
    created: float
    updated: float
    status: str
    plan: dict[str, Any]
    inventory: str
    hosts: tuple[FleetHost, ...] = field(default_factory=tuple)

    def host(self, name: str) -> FleetHost | None:
        return next((h for h in self.hosts if h.name == name), None)


def new_fleet_id(now: float | None = None) -> str:
    return FLEET_PREFIX + time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + "-" + uuid.uuid4().hex[:4]


def hosts_to_json(hosts: tuple[FleetHost, ...] | list[FleetHost]) -> str:
    return json.dumps([asdict(h) for h in hosts])


def hosts_from_json(text: str) -> tuple[FleetHost, ...]:
    return tuple(FleetHost(**h) for h in json.loads(text))


class FleetMixin:
    """The fleet methods of a results store (SQLite or PostgreSQL: the SQL here is common to both)."""

    conn: Any
    path: Any

    def _write(self, run_id: str, *statements: tuple[str, tuple[Any, ...]], running: bool = True) -> None:  # pragma: no cover
        raise NotImplementedError

    def create_fleet(self, fleet_id: str, plan: dict[str, Any], inventory: str, hosts: list[FleetHost]) -> None:
        now = time.time()
        self._write(fleet_id, ("INSERT INTO fleets (id, created, updated, status, plan_json, inventory, hosts_json)"
                               " VALUES (?, ?, ?, 'running', ?, ?, ?)",
                               (fleet_id, now, now, json.dumps(plan), inventory, hosts_to_json(hosts))),
                    running=False)  # a fleet, not a run: no run to mark failed, no `pickfs run --resume` to offer

    def update_fleet(self, fleet_id: str, status: str, hosts: tuple[FleetHost, ...] | list[FleetHost]) -> None:
        self._write(fleet_id, ("UPDATE fleets SET status=?, updated=?, hosts_json=? WHERE id=?",
                               (status, time.time(), hosts_to_json(hosts), fleet_id)), running=False)

    def resolve_fleet(self, ref: str) -> str:
        ids = [r[0] for r in self.conn.execute("SELECT id FROM fleets ORDER BY created").fetchall()]
        if ref == "latest" and ids:
            return str(ids[-1])
        matches = [i for i in ids if i.startswith(ref) or i.startswith(FLEET_PREFIX + ref)]
        if len(matches) == 1:
            return str(matches[0])
        if not matches:
            raise NotFound(f"no fleet run {ref!r} in {self.path}", "list them with: pickfs fleet list")
        raise NotFound(f"{ref!r} matches {len(matches)} fleet runs", "give more of the fleet id")

    def is_fleet(self, ref: str) -> bool:
        """Does `ref` name exactly one fleet run (an id or a unique prefix starting with 'fleet-')?"""
        if not ref.startswith(FLEET_PREFIX):
            return False
        try:
            self.resolve_fleet(ref)
        except NotFound:
            return False
        return True

    def load_fleet(self, ref: str) -> FleetRecord:
        fleet_id = self.resolve_fleet(ref)
        row = self.conn.execute("SELECT id, created, updated, status, plan_json, inventory, hosts_json"
                                " FROM fleets WHERE id=?", (fleet_id,)).fetchone()
        return FleetRecord(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], hosts_from_json(row[6]))

    def list_fleets(self) -> list[FleetRecord]:
        return [self.load_fleet(r[0]) for r in self.conn.execute("SELECT id FROM fleets ORDER BY created").fetchall()]
