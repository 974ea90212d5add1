"""Database servers started by pickfs with their data on the filesystem under test."""

from __future__ import annotations

from pickfs.errors import PlanError
from pickfs.services.base import Endpoint, Service
from pickfs.services.firebird import FirebirdServer
from pickfs.services.mariadb import MariaDB
from pickfs.services.postgres import PostgreSQL

REGISTRY: dict[str, type[Service]] = {cls.name: cls for cls in (PostgreSQL, MariaDB, FirebirdServer)}


def service_class(name: str) -> type[Service]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise PlanError(f"unknown service {name!r}", f"valid services: {', '.join(sorted(REGISTRY))}") from None


__all__ = ["Endpoint", "Service", "REGISTRY", "service_class"]
