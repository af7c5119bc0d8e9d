#!/bin/bash
# Reference solution: merge the INI layers with configparser, convert per MIGRATION.md,
# move the legacy files aside and validate with the 2.0 checker.
set -euo pipefail
python3 - <<'PY'
import configparser, glob, json, re

files = ["/etc/mailrelay/relay.ini"] + sorted(glob.glob("/etc/mailrelay/relay.d/*.ini"))
cp = configparser.ConfigParser()
read = cp.read(files)
assert read == files, read

BOOL = {"yes": True, "on": True, "true": True, "1": True, "no": False, "off": False, "false": False, "0": False}

def boolean(v):
    return BOOL[v.strip().lower()]

def size(v):
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)\s*", v, re.I)
    return int(m.group(1)) * 1024 ** " KMG".index((m.group(2) or " ").upper())

def duration(v):
    v = v.strip()
    if v.isdigit():
        return int(v)
    parts = re.findall(r"(\d+)([hms])", v)
    assert "".join(a + b for a, b in parts) == v, v
    return sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)

def lst(v):
    return [x.strip() for x in v.split(",") if x.strip()]

def address(name, v):
    host, _, port = v.strip().rpartition(":")
    return {"name": name, "address": host.strip("[]"), "port": int(port)}

def secret(v):
    m = re.fullmatch(r"\$\{(\w+)\}", v.strip())
    return {"env": m.group(1)} if m else {"value": v}

s, t, r, lg = cp["server"], cp["tls"], cp["relay"], cp["logging"]
listeners = [address("smtp", s["listen"])]
if "listen_submission" in s:
    listeners.append(address("submission", s["listen_submission"]))
ups = []
for sec in cp.sections():
    if not sec.startswith("upstream:"):
        continue
    u = cp[sec]
    if "enabled" in u and not boolean(u["enabled"]):
        continue
    security = "none"
    if "starttls" in u and boolean(u["starttls"]):
        security = "starttls"
    elif "use_ssl" in u and boolean(u["use_ssl"]):
        security = "tls"
    ups.append({
        "name": sec.split(":", 1)[1],
        "host": u["host"],
        "port": int(u["port"]),
        "priority": int(u["priority"]),
        "security": security,
        "username": u["username"],
        "password": secret(u.get("password", raw=True)),
        "connect_timeout_seconds": duration(u["connect_timeout"]) if "connect_timeout" in u else 30,
    })
ups.sort(key=lambda u: (u["priority"], u["name"]))
cfg = {
    "version": 2,
    "server": {
        "hostname": s["hostname"],
        "listeners": listeners,
        "max_message_bytes": size(s["max_message_size"]),
        "idle_timeout_seconds": duration(s["timeout"]),
        "max_connections": int(s["max_connections"]),
        "queue_dir": s["queue_dir"],
    },
    "tls": {
        "enabled": boolean(t["enabled"]),
        "certificate": t["cert"],
        "private_key": t["key"],
        "min_version": t["min_version"].replace("TLSv", ""),
    },
    "relay": {
        "domains": lst(r["domains"]),
        "allowed_networks": lst(r["networks"]),
        "require_auth": boolean(r["require_auth"]),
    },
    "upstreams": ups,
    "logging": {"level": lg["level"].lower(), "access_log": lg["access_log"], "error_log": lg["error_log"]},
}
with open("/etc/mailrelay/relay.json.new", "w") as f:
    json.dump(cfg, f, indent=2)
    f.write("\n")
PY
mailrelay check --config /etc/mailrelay/relay.json.new
mv /etc/mailrelay/relay.json.new /etc/mailrelay/relay.json
mkdir -p /etc/mailrelay/legacy
mv /etc/mailrelay/relay.ini /etc/mailrelay/relay.d /etc/mailrelay/legacy/
mailrelay check
cat /etc/mailrelay/relay.json
