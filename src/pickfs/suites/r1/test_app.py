"""An application's integration tests: each creates its tables, commits row by row as an ORM's
session does (one INSERT or UPDATE, then COMMIT), reads back, and drops its tables."""

from __future__ import annotations

from pickfs.suites.r1.conftest import ROWS, Db


def create_users(db: Db, p: str) -> None:
    with db.conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {p}users (id {db.autoincrement}, name VARCHAR(64) NOT NULL, "
                    "email VARCHAR(128) NOT NULL, balance INT NOT NULL DEFAULT 0)")
    db.conn.commit()


def create_orders(db: Db, p: str) -> None:
    with db.conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {p}orders (id {db.autoincrement}, user_id INT NOT NULL, "
                    "status VARCHAR(16) NOT NULL, total INT NOT NULL)")
        cur.execute(f"CREATE TABLE {p}order_lines (id {db.autoincrement}, order_id INT NOT NULL, "
                    "sku VARCHAR(32) NOT NULL, qty INT NOT NULL, price INT NOT NULL)")
        cur.execute(f"CREATE INDEX {p}orders_user ON {p}orders (user_id)")
    db.conn.commit()


def add_users(db: Db, p: str, n: int) -> list[int]:
    ids = []
    for i in range(n):
        with db.conn.cursor() as cur:
            cur.execute(db.sql(f"INSERT INTO {p}users (name, email) VALUES (?, ?)"), (f"user{i}", f"u{i}@example.org"))
            cur.execute("SELECT LAST_INSERT_ID()" if db.kind == "mariadb" else "SELECT lastval()")
            ids.append(int(cur.fetchone()[0]))
        db.conn.commit()  # the ORM's session.commit() after each object
    return ids


def test_signup_and_lookup(db: Db, schema: str, round_no: int) -> None:
    create_users(db, schema)
    ids = add_users(db, schema, ROWS)
    with db.conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*), COUNT(DISTINCT email) FROM {schema}users")
        assert cur.fetchone() == (ROWS, ROWS)
        cur.execute(db.sql(f"SELECT name FROM {schema}users WHERE id = ?"), (ids[-1],))
        assert cur.fetchone()[0] == f"user{ROWS - 1}"


def test_balance_updates(db: Db, schema: str, round_no: int) -> None:
    create_users(db, schema)
    ids = add_users(db, schema, ROWS // 2)
    for i, uid in enumerate(ids):
        with db.conn.cursor() as cur:
            cur.execute(db.sql(f"UPDATE {schema}users SET balance = balance + ? WHERE id = ?"), (i, uid))
        db.conn.commit()
    with db.conn.cursor() as cur:
        cur.execute(f"SELECT SUM(balance) FROM {schema}users")
        assert int(cur.fetchone()[0]) == sum(range(len(ids)))


def test_orders_with_lines(db: Db, schema: str, round_no: int) -> None:
    create_users(db, schema)
    create_orders(db, schema)
    users = add_users(db, schema, 10)
    expected = 0
    for i in range(ROWS // 3):
        with db.conn.cursor() as cur:
            cur.execute(db.sql(f"INSERT INTO {schema}orders (user_id, status, total) VALUES (?, 'new', 0)"),
                        (users[i % len(users)],))
            cur.execute("SELECT LAST_INSERT_ID()" if db.kind == "mariadb" else "SELECT lastval()")
            order = int(cur.fetchone()[0])
            total = 0
            for line in range(2):
                price = 100 + i + line
                cur.execute(db.sql(f"INSERT INTO {schema}order_lines (order_id, sku, qty, price) VALUES (?, ?, 1, ?)"),
                            (order, f"sku{line}", price))
                total += price
            cur.execute(db.sql(f"UPDATE {schema}orders SET total = ?, status = 'paid' WHERE id = ?"), (total, order))
            expected += total
        db.conn.commit()
    with db.conn.cursor() as cur:
        cur.execute(f"SELECT SUM(total), COUNT(*) FROM {schema}orders WHERE status = 'paid'")
        got_total, count = cur.fetchone()
        assert (int(got_total), count) == (expected, ROWS // 3)
        cur.execute(f"SELECT COUNT(*) FROM {schema}order_lines")
        assert cur.fetchone()[0] == 2 * (ROWS // 3)


def test_delete_and_cascade_by_hand(db: Db, schema: str, round_no: int) -> None:
    create_users(db, schema)
    ids = add_users(db, schema, ROWS // 2)
    for uid in ids[::2]:
        with db.conn.cursor() as cur:
            cur.execute(db.sql(f"DELETE FROM {schema}users WHERE id = ?"), (uid,))
        db.conn.commit()
    with db.conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM {schema}users")
        assert cur.fetchone()[0] == len(ids) - len(ids[::2])


def test_rollback_leaves_nothing(db: Db, schema: str, round_no: int) -> None:
    create_users(db, schema)
    with db.conn.cursor() as cur:
        for i in range(20):
            cur.execute(db.sql(f"INSERT INTO {schema}users (name, email) VALUES (?, ?)"), (f"x{i}", f"x{i}@e.org"))
    db.conn.rollback()
    add_users(db, schema, 5)
    with db.conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM {schema}users")
        assert cur.fetchone()[0] == 5
