"""The databases pickfs drives, one module each: how to connect, their server, durability settings and risks,
their own consistency check and the crash test's write-back requests. Adding a database is one module here
(plus its server in services/ if it has one: the module named by its `service`) and its name in
DATABASES below, which also brings in the shapes of its settings (values.py) and its server (services/).

Cheap to import (client processes do): no driver is imported until a connection is made.
"""

from __future__ import annotations

from pickfs.databases import firebird, mariadb, postgresql, sqlite
from pickfs.databases.base import Database, Dialect, WriteBack
from pickfs.databases.values import register_shapes
from pickfs.errors import PlanError

DATABASES: dict[str, Database] = {db.name: db for db in (
    sqlite.DATABASE, postgresql.DATABASE, mariadb.DATABASE, firebird.DATABASE, firebird.SERVER)}
for _db in DATABASES.values():
    register_shapes(_db.name, _db.setting_shapes)


def names() -> tuple[str, ...]:
    """Every backend name a workload may set, in registration order."""
    return tuple(DATABASES)


def get(name: str) -> Database:
    """The adapter of backend `name`; PlanError naming the valid ones when there is none."""
    try:
        return DATABASES[name]
    except KeyError:
        raise PlanError(f"unknown database {name!r}", f"use one of {', '.join(DATABASES)}") from None


def known(name: str | None) -> Database | None:
    """The adapter of `name`, or None (a workload without a database, or the user's own program)."""
    return DATABASES.get(name) if name else None


__all__ = ["DATABASES", "Database", "Dialect", "WriteBack", "get", "known", "names"]
