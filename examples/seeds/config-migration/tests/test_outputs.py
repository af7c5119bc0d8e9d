"""Verifier for config-migration. Exits 0 only if every check passes."""
import hashlib
import json
import os
import subprocess
import sys
import traceback

EXPECTED = {
    "version": 2,
    "server": {
        "hostname": "mx1.corp.example",
        "listeners": [
            {"name": "smtp", "address": "0.0.0.0", "port": 25},
            {"name": "submission", "address": "::", "port": 587},
        ],
        "max_message_bytes": 36700160,
        "idle_timeout_seconds": 150,
        "max_connections": 350,
        "queue_dir": "/var/lib/mailrelay/queue",
    },
    "tls": {
        "enabled": True,
        "certificate": "/etc/ssl/certs/mx1.corp.example.pem",
        "private_key": "/etc/ssl/private/mx1.corp.example.key",
        "min_version": "1.2",
    },
    "relay": {
        "domains": ["corp.example", "mail.corp.example", "lists.corp.example"],
        "allowed_networks": ["10.0.0.0/8", "192.168.0.0/16", "172.20.0.0/14"],
        "require_auth": True,
    },
    "upstreams": [
        {"name": "eu", "host": "smtp-eu.provider.example", "port": 2525, "priority": 5,
         "security": "starttls", "username": "relay-eu@corp.example",
         "password": {"env": "RELAY_EU_PASSWORD"}, "connect_timeout_seconds": 75},
        {"name": "primary", "host": "smtp1.provider.example", "port": 587, "priority": 10,
         "security": "starttls", "username": "relay@corp.example",
         "password": {"env": "RELAY_PRIMARY_PASSWORD"}, "connect_timeout_seconds": 30},
        {"name": "archive", "host": "archive.corp.example", "port": 25, "priority": 50,
         "security": "none", "username": "archiver",
         "password": {"value": "s3cr3t-archive"}, "connect_timeout_seconds": 30},
    ],
    "logging": {
        "level": "debug",
        "access_log": "/srv/log/mailrelay/access.log",
        "error_log": "/srv/log/mailrelay/error.log",
    },
}
LEGACY_MD5 = {
    "relay.ini": "9b857f112f5b943a1eff0617989945a7",
    "relay.d/10-limits.ini": "323fbf3ec34a985b86ef6ca2ccfb1793",
    "relay.d/20-upstreams.ini": "6d94b1446c93b31c771f379e04814ee6",
    "relay.d/30-logging.ini": "cbf4329162c7f480a28a16f18e15d250",
    "relay.d/40-relay.ini": "a39fd08d98abdadf0c33271b3b8a6a19",
    "relay.d/99-trace.ini.disabled": "993b1be711732fb6ddbd1b40fdff192b",
}

failures = []


def check(name, cond, detail=""):
    print(("PASS " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[:800]))
    if not cond:
        failures.append(name)


def same(a, b):
    """Deep equality that also distinguishes bool from int."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def main():
    try:
        with open("/etc/mailrelay/relay.json") as f:
            cfg = json.load(f)
    except Exception as e:
        check("relay.json exists and parses", False, repr(e))
        cfg = None
    if cfg is not None:
        check("relay.json is an object with the 2.0 top-level keys",
              isinstance(cfg, dict) and set(cfg) == set(EXPECTED), list(cfg) if isinstance(cfg, dict) else cfg)
        if isinstance(cfg, dict):
            for key in EXPECTED:
                check("relay.json: " + key, same(cfg.get(key), EXPECTED[key]),
                      "got %s\nwant %s" % (json.dumps(cfg.get(key)), json.dumps(EXPECTED[key])))

    for rel, digest in LEGACY_MD5.items():
        path = os.path.join("/etc/mailrelay/legacy", rel)
        try:
            with open(path, "rb") as f:
                got = hashlib.md5(f.read()).hexdigest()
        except OSError as e:
            got = repr(e)
        check("legacy file preserved: " + rel, got == digest, got)
    check("relay.ini removed from /etc/mailrelay", not os.path.lexists("/etc/mailrelay/relay.ini"))
    check("relay.d removed from /etc/mailrelay", not os.path.lexists("/etc/mailrelay/relay.d"))

    # The checker is the verifier image's own copy (not an artifact), run by the image's own interpreter.
    r = subprocess.run(["/usr/bin/python3", "-I", "-S", "/usr/local/bin/mailrelay", "check"], capture_output=True, text=True, timeout=60)
    check("mailrelay check passes", r.returncode == 0 and "configuration OK" in r.stdout, r.stdout + r.stderr)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        failures.append("verifier crashed")
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    sys.exit(1 if failures else 0)
