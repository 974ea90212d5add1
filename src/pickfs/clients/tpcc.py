"""A TPC-C-style client, written once over each database's Python driver, run as its own process.

    python -m pickfs.clients.tpcc load --backend sqlite --db PATH --warehouses 1 --scale-down 10
    python -m pickfs.clients.tpcc run  --backend postgresql --host SOCKDIR --duration 10 --clients 2

The five transactions (New-Order, Payment, Order-Status, Delivery, Stock-Level) at the
standard 45/43/4/4/4 mix, after the TPC-C specification's logic, with the data set scaled
down by --scale-down (items, customers and orders divided by it) so that loading fits a
small machine. Not an audited TPC-C: no keying or think times, and results are not tpmC.
Prints one JSON document: per transaction type the count, errors and a latency histogram,
New-Order transactions per minute, and the client's own CPU time.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any

from pickfs import databases
from pickfs.clients.histogram import add, merged
from pickfs.clients.pacing import Book, Waits, add_rate_options, arrival_times, merged_books, paced, summary
from pickfs.clients.process import name_process, own_io, run_at_once
from pickfs.clients.sql import Tx, add_connection_options, open_tx

DISTRICTS = 10
MIX = (("new_order", 45), ("payment", 43), ("order_status", 4), ("delivery", 4), ("stock_level", 4))
SYLLABLES = ("BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING")

SCHEMA = (
    "CREATE TABLE warehouse (w_id INTEGER NOT NULL PRIMARY KEY, w_name VARCHAR(10), w_tax DOUBLE PRECISION,"
    " w_ytd DOUBLE PRECISION)",
    "CREATE TABLE district (d_w_id INTEGER NOT NULL, d_id INTEGER NOT NULL, d_name VARCHAR(10),"
    " d_tax DOUBLE PRECISION, d_ytd DOUBLE PRECISION, d_next_o_id INTEGER, PRIMARY KEY (d_w_id, d_id))",
    "CREATE TABLE customer (c_w_id INTEGER NOT NULL, c_d_id INTEGER NOT NULL, c_id INTEGER NOT NULL,"
    " c_first VARCHAR(16), c_last VARCHAR(16), c_credit CHAR(2), c_discount DOUBLE PRECISION,"
    " c_balance DOUBLE PRECISION, c_ytd_payment DOUBLE PRECISION, c_payment_cnt INTEGER,"
    " c_delivery_cnt INTEGER, c_data VARCHAR(500), PRIMARY KEY (c_w_id, c_d_id, c_id))",
    "CREATE INDEX customer_last ON customer (c_w_id, c_d_id, c_last, c_first)",
    "CREATE TABLE history (h_c_id INTEGER, h_c_d_id INTEGER, h_c_w_id INTEGER, h_d_id INTEGER, h_w_id INTEGER,"
    " h_date TIMESTAMP, h_amount DOUBLE PRECISION, h_data VARCHAR(24))",
    "CREATE TABLE orders (o_w_id INTEGER NOT NULL, o_d_id INTEGER NOT NULL, o_id INTEGER NOT NULL,"
    " o_c_id INTEGER, o_entry_d TIMESTAMP, o_carrier_id INTEGER, o_ol_cnt INTEGER, o_all_local INTEGER,"
    " PRIMARY KEY (o_w_id, o_d_id, o_id))",
    "CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
    "CREATE TABLE new_order (no_w_id INTEGER NOT NULL, no_d_id INTEGER NOT NULL, no_o_id INTEGER NOT NULL,"
    " PRIMARY KEY (no_w_id, no_d_id, no_o_id))",
    "CREATE TABLE order_line (ol_w_id INTEGER NOT NULL, ol_d_id INTEGER NOT NULL, ol_o_id INTEGER NOT NULL,"
    " ol_number INTEGER NOT NULL, ol_i_id INTEGER, ol_supply_w_id INTEGER, ol_delivery_d TIMESTAMP,"
    " ol_quantity INTEGER, ol_amount DOUBLE PRECISION, ol_dist_info CHAR(24),"
    " PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))",
    "CREATE TABLE item (i_id INTEGER NOT NULL PRIMARY KEY, i_im_id INTEGER, i_name VARCHAR(24),"
    " i_price DOUBLE PRECISION, i_data VARCHAR(50))",
    "CREATE TABLE stock (s_w_id INTEGER NOT NULL, s_i_id INTEGER NOT NULL, s_quantity INTEGER,"
    " s_dist_info CHAR(24), s_ytd INTEGER, s_order_cnt INTEGER, s_remote_cnt INTEGER, s_data VARCHAR(50),"
    " PRIMARY KEY (s_w_id, s_i_id))",
)


def last_name(n: int) -> str:
    return SYLLABLES[n // 100] + SYLLABLES[(n // 10) % 10] + SYLLABLES[n % 10]


class Sizes:
    def __init__(self, scale_down: int) -> None:
        self.items = max(100, 100_000 // scale_down)
        self.customers = max(30, 3_000 // scale_down)  # per district
        self.orders = self.customers  # per district
        self.new_orders = max(9, 900 // scale_down)  # the last orders of each district


def nurand(rng: random.Random, a: int, x: int, y: int, c: int = 42) -> int:
    return (((rng.randint(0, a) | rng.randint(x, y)) + c) % (y - x + 1)) + x


def load(args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    db = databases.get(args.backend)
    db.create(args)
    conn, _ = db.connect(args)
    d = db.dialect
    sizes = Sizes(args.scale_down)
    rng = random.Random(args.seed or 1)
    cur = conn.cursor()
    for stmt in SCHEMA:
        cur.execute(stmt)
    conn.commit()
    now = time.strftime("%Y-%m-%d %H:%M:%S")

    def insert(table: str, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        marks = ", ".join([d.placeholder] * len(rows[0]))
        c = conn.cursor()
        c.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        conn.commit()

    insert("item", [(i, rng.randint(1, 10_000), f"item-{i}", round(rng.uniform(1, 100), 2), "x" * 40)
                    for i in range(1, sizes.items + 1)])
    for w in range(1, args.warehouses + 1):
        insert("warehouse", [(w, f"w{w}", round(rng.uniform(0, 0.2), 4), 300_000.0)])
        insert("stock", [(w, i, rng.randint(10, 100), "d" * 24, 0, 0, 0, "s" * 40) for i in range(1, sizes.items + 1)])
        insert("district", [(w, di, f"d{di}", round(rng.uniform(0, 0.2), 4), 30_000.0, sizes.orders + 1)
                            for di in range(1, DISTRICTS + 1)])
        for di in range(1, DISTRICTS + 1):
            insert("customer", [(w, di, c, f"first{c}", last_name((c - 1) % 1000), "BC" if rng.random() < 0.1 else "GC",
                                 round(rng.uniform(0, 0.5), 4), -10.0, 10.0, 1, 0, "c" * 300)
                                for c in range(1, sizes.customers + 1)])
            insert("history", [(c, di, w, di, w, now, 10.0, "h" * 20) for c in range(1, sizes.customers + 1)])
            customers = list(range(1, sizes.customers + 1))
            rng.shuffle(customers)
            first_new = sizes.orders - sizes.new_orders + 1
            orders, lines, news = [], [], []
            for o in range(1, sizes.orders + 1):
                count = rng.randint(5, 15)
                delivered = o < first_new
                orders.append((w, di, o, customers[o - 1], now, rng.randint(1, 10) if delivered else None, count, 1))
                for n in range(1, count + 1):
                    lines.append((w, di, o, n, rng.randint(1, sizes.items), w, now if delivered else None, 5,
                                  0.0 if delivered else round(rng.uniform(0.01, 9999.99), 2), "l" * 24))
                if not delivered:
                    news.append((w, di, o))
            insert("orders", orders)
            insert("order_line", lines)
            insert("new_order", news)
    conn.close()
    return {"client": "pickfs-tpcc", "step": "load", "backend": args.backend, "warehouses": args.warehouses,
            "scale_down": args.scale_down, "elapsed_s": time.perf_counter() - t0}


class Terminal:
    """One client: its own connection, running the mix until the deadline."""

    def __init__(self, args: argparse.Namespace, index: int, deadline: float, start: float) -> None:
        self.args, self.deadline, self.start, self.index = args, deadline, start, index
        self.book = Book()  # at a fixed rate: what became of every transaction due
        self.realtime = False  # at a fixed rate: waited for due times at real-time priority
        self.rng = random.Random((args.seed or int(time.time())) * 1000 + index)
        self.sizes = Sizes(args.scale_down)
        self.hist: dict[str, dict[int, int]] = {name: {} for name, _ in MIX}
        self.errors: dict[str, int] = {name: 0 for name, _ in MIX}
        self.rollbacks = 0
        self.per_second: dict[int, int] = {}
        self.in_force: dict[Any, Any] = {}
        self.conn: Any = None

    def attempt(self, tx: Tx, retryable: Any, name: str) -> bool:
        """One transaction of type `name`: True when it committed, False when it failed and was rolled back."""
        t0 = time.perf_counter()
        try:
            getattr(self, name)(tx)
        except retryable:
            tx.rollback()
            self.errors[name] += 1
            return False
        t1 = time.perf_counter()
        add(self.hist[name], int((t1 - t0) * 1e6))
        if name == "new_order":
            s = int(t1 - self.start)
            self.per_second[s] = self.per_second.get(s, 0) + 1
        return True

    def run(self) -> None:
        tx, retryable = open_tx(self.args)
        names = [n for n, w in MIX for _ in range(w)]
        clock = time.perf_counter
        if self.args.rate > 0:  # at a fixed rate: this terminal's share of the arrivals, latency from each one's due time
            rate = self.args.rate / self.args.clients
            rng = random.Random((self.args.seed or int(time.time())) * 1000 + 500 + self.index)
            schedule = arrival_times(rate, self.args.arrivals, rng, self.start, phase=self.index / self.args.clients)
            waits = Waits(not self.args.normal_waits)  # this thread's own priority while waiting
            self.realtime = waits.realtime
            try:
                paced(schedule, self.deadline, lambda: self.attempt(tx, retryable, self.rng.choice(names)),
                      self.book, self.args.latency_limit, waits=waits)
            finally:
                waits.working()
        else:
            while clock() < self.deadline:
                self.attempt(tx, retryable, self.rng.choice(names))
        self.conn = tx.conn  # closed after the run's window (terminal 0's first reads the settings in force)

    def _customer(self, tx: Tx, w: int, d: int) -> int:
        """60% by last name (the middle one, as the specification says), else by id."""
        if self.rng.random() < 0.6:
            name = last_name(self.rng.randint(0, min(999, self.sizes.customers - 1)))
            rows = tx.q("SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first",
                        (w, d, name))
            if rows:
                return int(rows[(len(rows) - 1) // 2][0])
        return nurand(self.rng, 1023, 1, self.sizes.customers)

    def new_order(self, tx: Tx) -> None:
        d, rng = tx.d, self.rng
        w = rng.randint(1, self.args.warehouses)
        di = rng.randint(1, DISTRICTS)
        c = nurand(rng, 1023, 1, self.sizes.customers)
        count = rng.randint(5, 15)
        items = [nurand(rng, 8191, 1, self.sizes.items) for _ in range(count)]
        if rng.random() < 0.01:
            items[-1] = self.sizes.items + 1  # an unused item: the transaction rolls back, as specified
        tx.q("SELECT w_tax FROM warehouse WHERE w_id = ?", (w,))
        o_id = tx.q("SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?" + d.for_update,
                    (w, di))[0][1]
        tx.q("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ?", (w, di))
        tx.q("SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
             (w, di, c))
        now = time.strftime("%Y-%m-%d %H:%M:%S")
        tx.q("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (w, di, o_id, c, now, None, count, 1))
        tx.q("INSERT INTO new_order VALUES (?, ?, ?)", (w, di, o_id))
        for n, item in enumerate(items, 1):
            found = tx.q("SELECT i_price, i_name, i_data FROM item WHERE i_id = ?", (item,))
            if not found:
                tx.rollback()
                self.rollbacks += 1
                return
            qty = rng.randint(1, 10)
            stock = tx.q("SELECT s_quantity, s_dist_info FROM stock WHERE s_w_id = ? AND s_i_id = ?" + d.for_update,
                         (w, item))[0]
            left = stock[0] - qty if stock[0] - qty >= 10 else stock[0] - qty + 91
            tx.q("UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1"
                 " WHERE s_w_id = ? AND s_i_id = ?", (left, qty, w, item))
            tx.q("INSERT INTO order_line VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (w, di, o_id, n, item, w, None, qty, round(qty * found[0][0], 2), stock[1]))
        tx.commit()

    def payment(self, tx: Tx) -> None:
        rng = self.rng
        w = rng.randint(1, self.args.warehouses)
        di = rng.randint(1, DISTRICTS)
        amount = round(rng.uniform(1, 5000), 2)
        tx.q("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?", (amount, w))
        tx.q("UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?", (amount, w, di))
        c = self._customer(tx, w, di)
        tx.q("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?,"
             " c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
             (amount, amount, w, di, c))
        tx.q("INSERT INTO history VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
             (c, di, w, di, w, time.strftime("%Y-%m-%d %H:%M:%S"), amount, "payment"))
        tx.commit()

    def order_status(self, tx: Tx) -> None:
        w = self.rng.randint(1, self.args.warehouses)
        di = self.rng.randint(1, DISTRICTS)
        c = self._customer(tx, w, di)
        rows = tx.q("SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ?"
                    " ORDER BY o_id DESC" + tx.d.limit_one, (w, di, c))
        if rows:
            tx.q("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line"
                 " WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?", (w, di, rows[0][0]))
        tx.commit()

    def delivery(self, tx: Tx) -> None:
        w = self.rng.randint(1, self.args.warehouses)
        carrier = self.rng.randint(1, 10)
        now = time.strftime("%Y-%m-%d %H:%M:%S")
        for di in range(1, DISTRICTS + 1):
            rows = tx.q("SELECT MIN(no_o_id) FROM new_order WHERE no_w_id = ? AND no_d_id = ?", (w, di))
            o_id = rows[0][0] if rows else None
            if o_id is None:
                continue
            tx.q("DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?", (w, di, o_id))
            c = tx.q("SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?", (w, di, o_id))[0][0]
            tx.q("UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?",
                 (carrier, w, di, o_id))
            tx.q("UPDATE order_line SET ol_delivery_d = ? WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?",
                 (now, w, di, o_id))
            total = tx.q("SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?",
                         (w, di, o_id))[0][0] or 0
            tx.q("UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1"
                 " WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", (total, w, di, c))
        tx.commit()

    def stock_level(self, tx: Tx) -> None:
        w = self.rng.randint(1, self.args.warehouses)
        di = self.rng.randint(1, DISTRICTS)
        threshold = self.rng.randint(10, 20)
        next_o = tx.q("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?", (w, di))[0][0]
        tx.q("SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = ? AND ol_d_id = ?"
             " AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?",
             (w, di, next_o, next_o - 20, w, threshold))
        tx.commit()


def run(args: argparse.Namespace) -> dict[str, Any]:
    start = time.perf_counter()
    deadline = start + args.duration
    terminals = [Terminal(args, i, deadline, start) for i in range(args.clients)]
    failures, cpu = run_at_once([t.run for t in terminals])
    elapsed = time.perf_counter() - start
    for t in terminals:  # outside the timed window, as is closing
        if t.conn is not None:
            if t is terminals[0]:
                t.in_force = databases.get(args.backend).in_force(t.conn)
            t.conn.close()
    types = {}
    for name in (n for n, _ in MIX):
        hist = merged([t.hist[name] for t in terminals])
        types[name] = {"count": sum(hist.values()), "errors": sum(t.errors[name] for t in terminals),
                       "latency_us": {str(k): v for k, v in sorted(hist.items())}}
    seconds = merged([t.per_second for t in terminals])
    return {"client": "pickfs-tpcc", "step": "run", "mix": args.mix, "backend": args.backend, "clients": args.clients,
            "forced_writes": terminals[0].in_force.get("forced_writes") if terminals else None,
            "elapsed_s": elapsed, "types": types, "rollbacks": sum(t.rollbacks for t in terminals),
            "per_second": [seconds.get(s, 0) for s in range(int(elapsed))], "client_cpu_s": cpu,
            "failures": failures, "io": own_io(),
            **({"fixed_rate": summary(merged_books([t.book for t in terminals]), args.rate, args.arrivals,
                                      args.latency_limit, args.duration,
                                      all(t.realtime for t in terminals))}
               if args.rate > 0 else {})}


def main(argv: list[str] | None = None) -> int:
    name_process("pickfs-tpcc")
    p = argparse.ArgumentParser(prog="pickfs.clients.tpcc")
    p.add_argument("step", choices=("load", "run"))
    add_connection_options(p)
    p.add_argument("--mix", choices=("tpcc",), default="tpcc", help="the TPC-B mix: pickfs.clients.tpcb")
    p.add_argument("--warehouses", type=int, default=1)
    p.add_argument("--scale-down", type=int, default=10, help="divide the data set by this")
    p.add_argument("--clients", type=int, default=2)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=None)
    add_rate_options(p)
    args = p.parse_args(argv)
    result = load(args) if args.step == "load" else run(args)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 1 if result.get("failures") else 0


if __name__ == "__main__":
    sys.exit(main())
