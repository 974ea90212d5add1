"""What the SQL clients share: the connection options, and SQL written once with '?' over each database's dialect."""

from __future__ import annotations

import argparse
from typing import Any

from pickfs import databases
from pickfs.databases.base import Connection, Dialect


class Tx:
    """One client's view: SQL written with '?' and the dialect's clauses."""

    def __init__(self, conn: Connection, dialect: Dialect) -> None:
        self.conn, self.d = conn, dialect
        self.cur: Any = None  # the driver's DB-API cursor (sqlite3, psycopg, pymysql, firebird-driver)

    def q(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """The statement's rows; [] for a statement that returns none. An error while fetching them (a damaged
        page met past the first row) is raised, with the engine's own message."""
        if self.cur is None:
            self.cur = self.conn.cursor()
        self.cur.execute(sql.replace("?", self.d.placeholder), params)
        try:
            return list(self.cur.fetchall())
        except Exception:
            # psycopg refuses to fetch from a statement without a result set (the others return []); such a
            # statement has no description (None; firebird-driver's is empty)
            if not self.cur.description:
                return []
            raise

    def commit(self) -> None:
        self.conn.commit()
        self.cur = None

    def rollback(self) -> None:
        self.conn.rollback()
        self.cur = None


def open_tx(args: argparse.Namespace, for_check: bool = False) -> tuple[Tx, tuple[type[BaseException], ...]]:
    """A transaction view on a new connection to --backend, and the exceptions that mean 'retry'. `for_check`: the
    connection of a crash state's check (`Database.connect_for_check`)."""
    db = databases.get(args.backend)
    conn, retryable = db.connect_for_check(args) if for_check else db.connect(args)
    return Tx(conn, db.dialect), retryable


def add_connection_options(p: argparse.ArgumentParser) -> None:
    """The options the databases' `connect` read: which database, and how to reach it."""
    p.add_argument("--backend", choices=databases.names(), required=True)
    p.add_argument("--db", help="database file (sqlite, firebird)")
    p.add_argument("--host"), p.add_argument("--port", type=int, default=5432)
    p.add_argument("--socket"), p.add_argument("--user", default="postgres"), p.add_argument("--database")
    p.add_argument("--fb-client", help="path of libfbclient (firebird)")
    p.add_argument("--journal-mode", default="WAL"), p.add_argument("--synchronous", default="FULL")
    p.add_argument("--page-size", type=int, default=0, help="sqlite: the page size of a new database [the library's]")
