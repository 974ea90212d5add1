"""Database servers started by pickfs with their data on the filesystem under test.

A database that has a server names it (`Database.service`, databases/); the server is the module of that
name here, which exports its Service class as SERVICE. So a new server is one module here and no line
in this file: the database's registration in databases/ brings it in.
"""

from __future__ import annotations

from importlib import import_module

from pickfs import databases
from pickfs.errors import PlanError
from pickfs.services.base import Endpoint, Service


def _servers() -> dict[str, type[Service]]:
    """Every registered database's server, by service name, in the databases' order."""
    out: dict[str, type[Service]] = {}
    for db in databases.DATABASES.values():
        if db.service and db.service not in out:
            server: type[Service] = import_module(f"pickfs.services.{db.service}").SERVICE
            if server.name != db.service:
                raise ValueError(f"services/{db.service}.py serves {server.name!r}, not {db.service!r}")
            out[db.service] = server
    return out


REGISTRY: dict[str, type[Service]] = _servers()


def service_class(name: str) -> type[Service]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise PlanError(f"unknown service {name!r}", f"valid services: {', '.join(sorted(REGISTRY))}") from None


__all__ = ["Endpoint", "Service", "REGISTRY", "service_class"]
