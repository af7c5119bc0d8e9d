"""Verifier for sqlite-repair. Exits 0 only if every check passes."""
import csv
import hashlib
import json
import sqlite3
import sys
import traceback

DB = "/app/data/shop_recovered.db"
DAMAGED = "/app/data/shop.db"
REPORT = "/app/data/recovery_report.json"
ORPHANS = "/app/data/orphaned_items.csv"

EXPECTED_SCHEMA = {
    "customers": "CREATE TABLE customers ( id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE, country TEXT NOT NULL, created_at TEXT NOT NULL )",
    "orders": "CREATE TABLE orders ( id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id), created_at TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('pending','paid','shipped','delivered','cancelled','refunded')), total_cents INTEGER NOT NULL CHECK (total_cents >= 0) )",
    "order_items": "CREATE TABLE order_items ( id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL REFERENCES orders(id), sku TEXT NOT NULL, qty INTEGER NOT NULL CHECK (qty > 0), unit_cents INTEGER NOT NULL )",
    "idx_orders_customer": "CREATE INDEX idx_orders_customer ON orders(customer_id)",
    "idx_orders_created": "CREATE INDEX idx_orders_created ON orders(created_at)",
    "idx_items_order": "CREATE INDEX idx_items_order ON order_items(order_id)",
    "sqlite_autoindex_customers_1": None,
}
# sha256 over "col|col|..." lines (ordered by id) of the expected table contents
EXPECTED_ROWS = {
    "customers": (260, "b628f70dc20cf64c437c26c8fe568a43b8e021066dfc525cd408a8e3a21ae260"),
    "orders": (2167, "f3df0dbc5092874f92e06256c49653073256855d856c9e9a528cf16be5b93468"),
    "order_items": (4764, "a42dad6a6b3d726f84bac04d8960c725bcf9d957c10ebb9c8e6983111dedf760"),
}
ORPHANS_EXPECTED = (72, "c25dd2d56754882c4621b5f05db2b30bed1e8bc7c22ac351a3988e7f2cc3b62f")
EXPECTED_REPORT = {
    "orders_salvaged": 2100,
    "orders_restored_from_snapshot": 67,
    "orders_unrecoverable": list(range(1776, 1809)),
    "orphaned_items": 72,
    "revenue_cents": 5488964,
}
DAMAGED_SHA256 = "fa181d80429668bd90b67f9de469bb6e54d71cac3b26edfe84eb04697ba6d4b9"

failures = []


def check(name, cond, detail=""):
    print(("PASS " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[:500]))
    if not cond:
        failures.append(name)


def digest(rows):
    return hashlib.sha256("\n".join("|".join(map(str, r)) for r in rows).encode()).hexdigest()


def norm(sql):
    return None if sql is None else " ".join(sql.replace("(", "( ").replace(")", " )").split()).replace("( ", "(").replace(" )", ")")


def main():
    try:
        with open(DAMAGED, "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        got = repr(e)
    check("damaged shop.db left untouched", got == DAMAGED_SHA256, got)

    try:
        con = sqlite3.connect("file:%s?mode=ro" % DB, uri=True)
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except Exception as e:
        check("repaired database opens", False, repr(e))
        con = None
    if con is not None:
        try:
            check("integrity_check ok", con.execute("PRAGMA integrity_check").fetchall() == [("ok",)],
                  con.execute("PRAGMA integrity_check").fetchall()[:5])
            check("foreign_key_check clean", con.execute("PRAGMA foreign_key_check").fetchall() == [])
            schema = {name: sql for name, sql in con.execute("SELECT name, sql FROM sqlite_master")}
            check("schema objects", set(schema) == set(EXPECTED_SCHEMA), sorted(schema))
            for name, sql in EXPECTED_SCHEMA.items():
                if name in schema:
                    check("schema of " + name, norm(schema[name]) == norm(sql), schema[name])
            for table, (n, want) in EXPECTED_ROWS.items():
                rows = con.execute("SELECT * FROM %s ORDER BY id" % table).fetchall()
                check("row count of " + table, len(rows) == n, "got %d want %d" % (len(rows), n))
                check("contents of " + table, digest(rows) == want)
            types = con.execute("SELECT DISTINCT typeof(total_cents) FROM orders").fetchall()
            check("total_cents stored as integers", types == [("integer",)], types)
            # the indexes must actually be usable
            plan = " ".join(str(r) for r in con.execute(
                "EXPLAIN QUERY PLAN SELECT * FROM order_items WHERE order_id = 1700"))
            check("idx_items_order used", "idx_items_order" in plan, plan)
            n_idx = con.execute("SELECT count(*) FROM order_items INDEXED BY idx_items_order WHERE order_id > 0").fetchone()[0]
            check("idx_items_order complete", n_idx == EXPECTED_ROWS["order_items"][0], n_idx)
        except Exception as e:
            check("querying repaired database", False, repr(e))

    try:
        with open(ORPHANS, newline="") as f:
            text = f.read()
        lines = text.splitlines()
        check("orphaned_items.csv header", lines[:1] == ["id,order_id,sku,qty,unit_cents"], lines[:1])
        rows = [tuple(int(v) if v.isdigit() else v for v in l.split(",")) for l in lines[1:] if l]
        check("orphaned_items.csv rows", (len(rows), digest(rows)) == ORPHANS_EXPECTED, "%d rows" % len(rows))
    except Exception as e:
        check("orphaned_items.csv readable", False, repr(e))

    try:
        with open(REPORT) as f:
            report = json.load(f)
        check("report keys", isinstance(report, dict) and set(report) == set(EXPECTED_REPORT),
              sorted(report) if isinstance(report, dict) else report)
        for k, want in EXPECTED_REPORT.items():
            got = report.get(k) if isinstance(report, dict) else None
            check("report[%r]" % k, got == want and type(got) is type(want), "got %r want %r" % (got, want))
    except Exception as e:
        check("recovery_report.json readable", False, repr(e))


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        failures.append("verifier crashed")
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    sys.exit(1 if failures else 0)
