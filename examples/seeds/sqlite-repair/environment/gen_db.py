"""Build the shop database, its nightly CSV export, then damage the database.

Deterministic: fixed RNG seed, fixed timestamps, VACUUMed layout.
Usage: gen_db.py OUT_DIR [--keep-clean PATH]
"""
import csv
import gzip
import io
import os
import random
import shutil
import sqlite3
import struct
import sys
from datetime import datetime, timedelta

out_dir = sys.argv[1]
keep_clean = sys.argv[sys.argv.index("--keep-clean") + 1] if "--keep-clean" in sys.argv else None
rng = random.Random(4242)
os.makedirs(out_dir + "/data", exist_ok=True)
os.makedirs(out_dir + "/backup", exist_ok=True)
db_path = out_dir + "/data/shop.db"
if os.path.exists(db_path):
    os.remove(db_path)

SCHEMA = """
CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    country TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    created_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending','paid','shipped','delivered','cancelled','refunded')),
    total_cents INTEGER NOT NULL CHECK (total_cents >= 0)
);
CREATE TABLE order_items (
    id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL REFERENCES orders(id),
    sku TEXT NOT NULL,
    qty INTEGER NOT NULL CHECK (qty > 0),
    unit_cents INTEGER NOT NULL
);
CREATE INDEX idx_orders_customer ON orders(customer_id);
CREATE INDEX idx_orders_created ON orders(created_at);
CREATE INDEX idx_items_order ON order_items(order_id);
"""

FIRST = ["Ana", "Ben", "Chloe", "Dmitri", "Elif", "Farah", "Goran", "Hana", "Ivo", "Jana", "Kofi",
         "Lena", "Marek", "Nora", "Omar", "Pia", "Quentin", "Rosa", "Sven", "Tomas", "Ute", "Vera"]
LAST = ["Novak", "Berg", "Costa", "Dahl", "Eriksen", "Fontaine", "Gruber", "Horvat", "Ivanova",
        "Jensen", "Kaya", "Lindqvist", "Moreno", "Nagy", "Olsen", "Popescu", "Rahman", "Silva"]
COUNTRIES = ["DE", "FR", "NL", "PL", "SE", "ES", "IT", "AT", "CZ", "PT"]
SKUS = ["SKU-%04d" % i for i in range(1, 121)]
PRICES = {s: rng.choice([199, 249, 329, 399, 457, 529, 699, 829, 999, 1129, 1457, 1999, 2429, 3157]) for s in SKUS}
LIFECYCLE = ["pending", "paid", "shipped", "delivered"]

customers = []
t0 = datetime(2023, 9, 1, 8, 0, 0)
for cid in range(1, 261):
    fn, ln = rng.choice(FIRST), rng.choice(LAST)
    t0 += timedelta(minutes=rng.randint(30, 1500))
    customers.append((cid, "%s %s" % (fn, ln), "%s.%s%d@example.org" % (fn.lower(), ln.lower(), cid),
                      rng.choice(COUNTRIES), t0.strftime("%Y-%m-%d %H:%M:%S")))

orders, items, backup_status = [], [], {}
t = datetime(2024, 3, 1, 0, 0, 0)
iid = 0
for oid in range(1, 2201):
    t += timedelta(seconds=rng.randint(300, 5400))
    total = 0
    for _ in range(rng.choice([1, 1, 2, 2, 3, 4])):
        iid += 1
        sku = rng.choice(SKUS)
        qty = rng.choice([1, 1, 1, 2, 3])
        items.append((iid, oid, sku, qty, PRICES[sku]))
        total += qty * PRICES[sku]
    r = rng.random()
    if r < 0.06:
        status = "cancelled"
    elif r < 0.09:
        status = "refunded"
    else:
        status = LIFECYCLE[min(3, int(rng.random() * 4 + (oid / 2200) * -1.5 + 1.2))]
    # status as of the reporting snapshot: sometimes an earlier lifecycle stage
    bstat = status
    if status in LIFECYCLE and LIFECYCLE.index(status) > 0 and rng.random() < 0.25:
        bstat = LIFECYCLE[LIFECYCLE.index(status) - 1]
    backup_status[oid] = bstat
    orders.append((oid, rng.randint(1, 260), t.strftime("%Y-%m-%d %H:%M:%S"), status, total))

con = sqlite3.connect(db_path)
con.executescript("PRAGMA page_size=4096; PRAGMA journal_mode=DELETE;" + SCHEMA)
con.executemany("INSERT INTO customers VALUES (?,?,?,?,?)", customers)
con.executemany("INSERT INTO orders VALUES (?,?,?,?,?)", orders)
con.executemany("INSERT INTO order_items VALUES (?,?,?,?,?)", items)
con.commit()
con.execute("VACUUM")
con.close()
if keep_clean:
    shutil.copy(db_path, keep_clean)

# ---- find the table-leaf pages of `orders` and the rowids on each ---------------
con = sqlite3.connect(db_path)
leaves = [p for (p,) in con.execute(
    "SELECT pageno FROM dbstat WHERE name='orders' AND pagetype='leaf' ORDER BY path")]
idx_root = con.execute("SELECT rootpage FROM sqlite_master WHERE name='idx_items_order'").fetchone()[0]
con.close()
with open(db_path, "rb") as f:
    raw = bytearray(f.read())
PS = 4096


def varint(buf, pos):
    v = 0
    for i in range(9):
        b = buf[pos + i]
        if i == 8:
            return (v << 8) | b, pos + 9
        v = (v << 7) | (b & 0x7F)
        if not b & 0x80:
            return v, pos + i + 1


def rowids(pageno):
    base = (pageno - 1) * PS
    hdr = base + (100 if pageno == 1 else 0)
    assert raw[hdr] == 0x0D
    ncells = struct.unpack(">H", raw[hdr + 3:hdr + 5])[0]
    ids = []
    for i in range(ncells):
        off = struct.unpack(">H", raw[hdr + 8 + 2 * i:hdr + 10 + 2 * i])[0]
        _, p = varint(raw, base + off)
        rid, _ = varint(raw, p)
        ids.append(rid)
    return ids


victim = leaves[int(len(leaves) * 0.8)]
lost = rowids(victim)
# the reporting snapshot ran while the orders on the victim page were being created
cut = lost[len(lost) * 2 // 3]
cut_time = datetime.strptime(orders[cut - 1][2], "%Y-%m-%d %H:%M:%S")
export_time = cut_time + timedelta(seconds=(datetime.strptime(orders[cut][2], "%Y-%m-%d %H:%M:%S") - cut_time).seconds // 2)

buf = io.StringIO()
w = csv.writer(buf, lineterminator="\n")
w.writerow(["order_id", "customer_id", "created_at", "status", "total_eur"])
for oid, cid, created, status, total in orders[:cut]:
    w.writerow([oid, cid, created, backup_status[oid], "%d.%02d" % divmod(total, 100)])
name = out_dir + "/backup/orders-snapshot-%s.csv.gz" % export_time.strftime("%Y%m%dT%H%M%S")
with gzip.GzipFile(name, "wb", mtime=0) as f:
    f.write(buf.getvalue().encode())

# ---- damage: zero one orders leaf page, scribble over the idx_items_order root --
raw[(victim - 1) * PS:victim * PS] = bytes(PS)
junk = random.Random(99)
for i in range(64, PS, 7):
    raw[(idx_root - 1) * PS + i] = junk.randrange(256)
with open(db_path, "wb") as f:
    f.write(raw)
