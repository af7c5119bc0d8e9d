#!/bin/bash
# Reference solution: join rotated nginx access logs with the application's JSON log.
set -euo pipefail
mkdir -p /app/incident
python3 - <<'PY'
import glob, gzip, json, re
from collections import Counter
from datetime import datetime, timezone

def read_lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        yield from f

LINE = re.compile(r'^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) (\S+) [^"]*" (\d{3}) (\d+) "[^"]*" "[^"]*" rid=(\w+)$')
access = []
for p in sorted(glob.glob("/app/logs/nginx/access.log*")):
    for line in read_lines(p):
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        ip, ts, method, path, status, nbytes, rid = m.groups()
        when = datetime.strptime(ts, "%d/%b/%Y:%H:%M:%S %z").astimezone(timezone.utc)
        access.append(dict(ip=ip, ts=when, method=method, path=path, status=int(status),
                           bytes=int(nbytes), rid=rid))
by_rid = {a["rid"]: a for a in access}

app = []
for p in sorted(glob.glob("/app/logs/app/app.log*")):
    for line in read_lines(p):
        line = line.strip()
        if line:
            app.append(json.loads(line))
app_by_rid = {r["rid"]: r for r in app}

# Step 1: attacker = IP with the most failed logins
fails = Counter(a["ip"] for a in access
                if a["method"] == "POST" and a["path"].split("?")[0] == "/api/login" and a["status"] == 401)
attacker, n_fail = fails.most_common(1)[0]

# Step 2: its first successful login -> user + session (from the app log, joined on rid)
ok = sorted((a for a in access if a["ip"] == attacker and a["method"] == "POST"
             and a["path"].split("?")[0] == "/api/login" and a["status"] == 200), key=lambda a: a["ts"])
first = ok[0]
rec = app_by_rid[first["rid"]]
user, session = rec["user"], rec["session"]

# Step 3: every export made with that session, wherever it came from
exports = [by_rid[r["rid"]] for r in app if r.get("event") == "export" and r.get("session") == session]
good = [a for a in exports if a["status"] == 200]
report = {
    "attacker_ip": attacker,
    "failed_logins": n_fail,
    "compromised_user": user,
    "session_id": session,
    "first_success_utc": first["ts"].strftime("%Y-%m-%dT%H:%M:%SZ"),
    "exfil_requests": len(good),
    "exfil_bytes": sum(a["bytes"] for a in good),
    "exfil_ips": sorted({a["ip"] for a in good}),
}
with open("/app/incident/report.json", "w") as f:
    json.dump(report, f, indent=2)
    f.write("\n")
print(json.dumps(report, indent=2))
PY
