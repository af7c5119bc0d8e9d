"""Generate a week of rotated nginx + application logs (deterministic)."""
import gzip
import json
import os
import random
from datetime import datetime, timedelta, timezone

rng = random.Random(20240314)
LOCAL = timezone(timedelta(hours=1))
START = datetime(2024, 3, 8, 0, 0, 0, tzinfo=LOCAL)
DAYS = 7
ROOT = "/app/logs"

USERS = [
    "a.berg", "b.chen", "c.dubois", "d.evans", "e.fischer", "f.garcia", "g.hansen",
    "h.ito", "i.jovanovic", "j.kowalski", "k.larsen", "l.moreau", "m.alvarez",
    "n.novak", "o.ozturk", "p.petrov", "q.quinn", "r.rossi", "s.schmidt", "t.tanaka",
    "u.ulrich", "v.vargas", "w.weber", "x.xu", "y.yilmaz", "z.zimmer",
]
LEGIT_IPS = ["10.20.%d.%d" % (rng.randint(0, 9), rng.randint(2, 250)) for _ in range(45)]
LEGIT_IPS += ["172.16.4.%d" % i for i in (11, 12, 13, 40, 41)]
UAS = [
    "Mozilla/5.0 (X11; Linux x86_64; rv:123.0) Gecko/20100101 Firefox/123.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_3) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3 Safari/605.1.15",
]
ATTACK_UA = "python-requests/2.31.0"
ATTACKER = "203.0.113.77"
ATTACKER2 = "198.51.100.23"
SCANNER = "198.51.100.200"
INTEGRATION = "192.0.2.150"
VICTIM = "m.alvarez"

events = []  # (utc datetime, access dict, app dict or None)


def rid():
    return "%016x" % rng.getrandbits(64)


def sid():
    return "%024x" % rng.getrandbits(96)


def add(ts, ip, method, path, status, nbytes, ua, app=None, ref="-"):
    r = rid()
    events.append((ts, dict(ip=ip, method=method, path=path, status=status, bytes=nbytes,
                            ua=ua, ref=ref, rid=r), app))
    if app is not None:
        app["rid"] = r


def utc(ts):
    return ts.astimezone(timezone.utc)


# --- legitimate traffic -------------------------------------------------------
for day in range(DAYS):
    day_start = START + timedelta(days=day)
    for _ in range(rng.randint(110, 140)):  # user sessions per day
        user = rng.choice(USERS)
        ip = rng.choice(LEGIT_IPS)
        ua = rng.choice(UAS)
        t = day_start + timedelta(seconds=rng.randint(6 * 3600, 23 * 3600))
        add(t, ip, "GET", "/", 200, rng.randint(5000, 9000), ua)
        for _ in range(rng.randint(1, 4)):
            t += timedelta(milliseconds=rng.randint(20, 300))
            add(t, ip, "GET", "/static/app.%s" % rng.choice(["js", "css"]), 200, rng.randint(20000, 90000), ua, ref="https://shop.example.com/")
        if rng.random() < 0.15:  # typo in password
            t += timedelta(seconds=rng.randint(3, 20))
            add(t, ip, "POST", "/api/login", 401, 43, ua,
                app=dict(ts=utc(t), level="WARNING", event="login_failed", user=user, reason="bad_password"))
        t += timedelta(seconds=rng.randint(3, 20))
        s = sid()
        add(t, ip, "POST", "/api/login", 200, 112, ua,
            app=dict(ts=utc(t), level="INFO", event="login_ok", user=user, session=s))
        for _ in range(rng.randint(2, 9)):
            t += timedelta(seconds=rng.randint(5, 240))
            kind = rng.random()
            if kind < 0.5:
                pid = rng.randint(1000, 1999)
                add(t, ip, "GET", "/api/products/%d" % pid, 200, rng.randint(800, 2400), ua,
                    app=dict(ts=utc(t), level="INFO", event="product_view", session=s, product=pid))
            elif kind < 0.85:
                add(t, ip, "POST", "/api/cart", 200, rng.randint(150, 400), ua,
                    app=dict(ts=utc(t), level="INFO", event="cart_update", session=s))
            else:
                ds = rng.choice(["orders", "invoices"])
                add(t, ip, "GET", "/api/export/%s?fmt=csv" % ds, 200, rng.randint(3000, 40000), ua,
                    app=dict(ts=utc(t), level="INFO", event="export", session=s, dataset=ds))
        if rng.random() < 0.6:
            t += timedelta(seconds=rng.randint(5, 600))
            add(t, ip, "POST", "/api/logout", 204, 0, ua,
                app=dict(ts=utc(t), level="INFO", event="logout", session=s))

# --- a vulnerability scanner: lots of 404s ------------------------------------
t = START + timedelta(days=2, hours=3, minutes=12)
for probe in range(900):
    t += timedelta(milliseconds=rng.randint(80, 900))
    path = rng.choice(["/wp-login.php", "/.env", "/admin/", "/phpmyadmin/", "/.git/config",
                       "/cgi-bin/luci", "/api/v1/debug", "/server-status", "/backup.zip"])
    add(t, SCANNER, "GET", path + ("?p=%d" % probe if probe % 7 == 0 else ""), 404, 153, "Mozilla/5.0 zgrab/0.x")
    if probe % 50 == 0:
        add(t, SCANNER, "POST", "/api/login", 401, 43, "Mozilla/5.0 zgrab/0.x",
            app=dict(ts=utc(t), level="WARNING", event="login_failed", user="admin", reason="unknown_user"))

# --- a misconfigured integration hammering login with a stale password ----------
t = START + timedelta(days=3, hours=9, minutes=30)
for _ in range(140):
    t += timedelta(seconds=rng.randint(20, 40))
    add(t, INTEGRATION, "POST", "/api/login", 401, 43, "erp-sync/4.2",
        app=dict(ts=utc(t), level="WARNING", event="login_failed", user="svc-erp", reason="bad_password"))
t += timedelta(minutes=30)
s = sid()
add(t, INTEGRATION, "POST", "/api/login", 200, 112, "erp-sync/4.2",
    app=dict(ts=utc(t), level="INFO", event="login_ok", user="svc-erp", session=s))
for _ in range(12):
    t += timedelta(seconds=rng.randint(30, 90))
    add(t, INTEGRATION, "GET", "/api/export/orders?fmt=json", 200, rng.randint(50000, 90000), "erp-sync/4.2",
        app=dict(ts=utc(t), level="INFO", event="export", session=s, dataset="orders"))

# --- the attack: credential stuffing across midnight (local) -------------------
combo_users = ["admin", "root", "test", "support", "info", "sales"] + USERS
t = datetime(2024, 3, 12, 23, 6, 41, tzinfo=LOCAL)
success_at = datetime(2024, 3, 13, 0, 52, 31, tzinfo=LOCAL)
n_before = 0
while t < success_at - timedelta(seconds=20):
    t += timedelta(seconds=rng.randint(8, 20))
    u = rng.choice(combo_users)
    if u == VICTIM:
        u = "admin"
    add(t, ATTACKER, "POST", "/api/login", 401, 43, ATTACK_UA,
        app=dict(ts=utc(t), level="WARNING", event="login_failed", user=u,
                 reason="bad_password" if u in USERS else "unknown_user"))
    n_before += 1
t = success_at
attack_session = sid()
add(t, ATTACKER, "POST", "/api/login", 200, 112, ATTACK_UA,
    app=dict(ts=utc(t), level="INFO", event="login_ok", user=VICTIM, session=attack_session))
# exports from the attacker's IP
for i in range(7):
    t += timedelta(seconds=rng.randint(40, 200))
    ds = ["customers", "orders", "invoices", "customers", "payment_methods", "orders", "customers"][i]
    status = 500 if i == 4 else 200
    nbytes = 61 if status == 500 else rng.randint(400000, 2500000)
    add(t, ATTACKER, "GET", "/api/export/%s?fmt=csv&all=1" % ds, status, nbytes, ATTACK_UA,
        app=dict(ts=utc(t), level="ERROR" if status == 500 else "INFO", event="export",
                 session=attack_session, dataset=ds))
# keeps stuffing other accounts afterwards
for _ in range(60):
    t += timedelta(seconds=rng.randint(8, 20))
    u = rng.choice(combo_users)
    if u == VICTIM:
        u = "support"
    add(t, ATTACKER, "POST", "/api/login", 401, 43, ATTACK_UA,
        app=dict(ts=utc(t), level="WARNING", event="login_failed", user=u,
                 reason="bad_password" if u in USERS else "unknown_user"))
# the stolen session is reused from a second IP the next evening
t = datetime(2024, 3, 13, 21, 3, 2, tzinfo=LOCAL)
for i in range(5):
    t += timedelta(seconds=rng.randint(60, 400))
    ds = ["customers", "invoices", "orders", "customers", "invoices"][i]
    add(t, ATTACKER2, "GET", "/api/export/%s?fmt=csv&all=1&page=%d" % (ds, i + 1), 200,
        rng.randint(300000, 1800000), "curl/8.5.0",
        app=dict(ts=utc(t), level="INFO", event="export", session=attack_session, dataset=ds))
# ...and the real m.alvarez keeps working normally with her own sessions
t = datetime(2024, 3, 13, 9, 15, 0, tzinfo=LOCAL)
s = sid()
add(t, "10.20.3.77", "POST", "/api/login", 200, 112, UAS[0],
    app=dict(ts=utc(t), level="INFO", event="login_ok", user=VICTIM, session=s))
for ds in ["orders", "invoices", "orders"]:
    t += timedelta(minutes=rng.randint(3, 30))
    add(t, "10.20.3.77", "GET", "/api/export/%s?fmt=csv" % ds, 200, rng.randint(3000, 40000), UAS[0],
        app=dict(ts=utc(t), level="INFO", event="export", session=s, dataset=ds))

events.sort(key=lambda e: (e[0], e[1]["rid"]))

# --- write nginx access logs, rotated daily (local time) ------------------------
os.makedirs(ROOT + "/nginx", exist_ok=True)
os.makedirs(ROOT + "/app", exist_ok=True)
by_day = {}
for ts, a, _ in events:
    by_day.setdefault(ts.astimezone(LOCAL).date(), []).append((ts, a))
days = sorted(by_day)
for idx, d in enumerate(reversed(days)):
    lines = []
    for ts, a in by_day[d]:
        lt = ts.astimezone(LOCAL)
        lines.append('%s - - [%s] "%s %s HTTP/1.1" %d %d "%s" "%s" rid=%s\n' % (
            a["ip"], lt.strftime("%d/%b/%Y:%H:%M:%S %z"), a["method"], a["path"], a["status"],
            a["bytes"], a["ref"], a["ua"], a["rid"]))
    data = "".join(lines).encode()
    name = "access.log" if idx == 0 else "access.log.%d" % idx
    if idx >= 2:
        with gzip.GzipFile(ROOT + "/nginx/" + name + ".gz", "wb", mtime=0) as f:
            f.write(data)
    else:
        with open(ROOT + "/nginx/" + name, "wb") as f:
            f.write(data)

# --- write app logs (JSON lines, UTC), rotated by size -------------------------
app_lines = []
for ts, _, app in events:
    if app is None:
        continue
    rec = dict(app)
    rec["ts"] = rec["ts"].strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (rec["ts"].microsecond // 1000)
    order = ["ts", "level", "rid", "event"]
    rec = {k: rec[k] for k in order + sorted(set(rec) - set(order))}
    app_lines.append(json.dumps(rec) + "\n")
CHUNK = 2500
chunks = [app_lines[i:i + CHUNK] for i in range(0, len(app_lines), CHUNK)]
for idx, chunk in enumerate(reversed(chunks)):
    data = "".join(chunk).encode()
    if idx == 0:
        with open(ROOT + "/app/app.log", "wb") as f:
            f.write(data)
    else:
        with gzip.GzipFile(ROOT + "/app/app.log.%d.gz" % idx, "wb", mtime=0) as f:
            f.write(data)
