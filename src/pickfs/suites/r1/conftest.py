"""The suite's database connection, found through the command workload's environment."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass(frozen=True)
class Db:
    """A DB-API connection with what differs between the two dialects."""

    conn: Any
    kind: str  # "mariadb" or "postgresql"
    param: str  # the driver's placeholder

    @property
    def autoincrement(self) -> str:
        return "INT AUTO_INCREMENT PRIMARY KEY" if self.kind == "mariadb" else "SERIAL PRIMARY KEY"

    def sql(self, text: str) -> str:
        return text.replace("?", self.param)


def connect() -> Db:
    if os.environ.get("MYSQL_UNIX_PORT"):
        import pymysql  # deferred: the driver pymysql, for the MariaDB tests only

        conn = pymysql.connect(unix_socket=os.environ["MYSQL_UNIX_PORT"], user=os.environ.get("MYSQL_USER", "root"),
                               database=os.environ.get("MYSQL_DATABASE", "sbtest"), autocommit=False)
        return Db(conn, "mariadb", "%s")
    if os.environ.get("PGHOST"):
        import psycopg  # deferred: the driver psycopg, for the PostgreSQL tests only

        return Db(psycopg.connect(autocommit=False), "postgresql", "%s")
    raise pytest.UsageError("no database server: run this suite through pickfs's command workload with "
                            "server = \"mariadb\" or \"postgresql\" (it sets MYSQL_UNIX_PORT or PGHOST)")


ROWS = int(os.environ.get("PICKFS_SUITE_ROWS", "200"))
ROUNDS = int(os.environ.get("PICKFS_SUITE_ROUNDS", "24"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "round_no" in metafunc.fixturenames:
        metafunc.parametrize("round_no", range(ROUNDS))


@pytest.fixture(scope="session")
def db() -> Iterator[Db]:
    d = connect()
    yield d
    d.conn.close()


@pytest.fixture
def schema(db: Db) -> Iterator[str]:
    """A table-name prefix private to one test; its tables are dropped when it ends, as a test
    framework's per-test schema is."""
    prefix = f"t{uuid.uuid4().hex[:10]}_"
    yield prefix
    db.conn.rollback()
    with db.conn.cursor() as cur:
        for table in ("order_lines", "orders", "users"):
            cur.execute(f"DROP TABLE IF EXISTS {prefix}{table}")
    db.conn.commit()
