"""Verifier for log-forensics. Exits 0 only if every check passes."""
import gzip
import hashlib
import json
import sys
import traceback

REPORT = "/app/incident/report.json"
EXPECTED = {
    "attacker_ip": "203.0.113.77",
    "failed_logins": 515,
    "compromised_user": "m.alvarez",
    "session_id": "3e6551a72f348c318c724772",
    "first_success_utc": "2024-03-12T23:52:31Z",
    "exfil_requests": 11,
    "exfil_bytes": 17682945,
    "exfil_ips": ["198.51.100.23", "203.0.113.77"],
}
# md5 of the decompressed content of every log file
LOG_MD5 = {
    "/app/logs/app/app.log": "55872cf693e73a26ae12aaf2d780409c",
    "/app/logs/app/app.log.1.gz": "e0cad4079667a70e22401483a6e67fa3",
    "/app/logs/app/app.log.2.gz": "31527a9a8de399bba375c3f37987b979",
    "/app/logs/nginx/access.log": "2f8d78e8dd079f3093d28eff75a8dec4",
    "/app/logs/nginx/access.log.1": "1ce896c7409bedbf27a296d4d648b43c",
    "/app/logs/nginx/access.log.2.gz": "9e44fbc2dc3d8f045809f80a60e6e9d4",
    "/app/logs/nginx/access.log.3.gz": "bbfcb8a0a348db9b57e36e5186f25c3a",
    "/app/logs/nginx/access.log.4.gz": "3bbc1510b270bf69d8c1438cfbe49806",
    "/app/logs/nginx/access.log.5.gz": "d9fc03126115100f854e085889d70130",
    "/app/logs/nginx/access.log.6.gz": "c4c7e55be09601e3d47c7e410c3dabad",
}

failures = []


def check(name, cond, detail=""):
    print(("PASS " if cond else "FAIL ") + name + ("" if cond else ": " + detail))
    if not cond:
        failures.append(name)


def main():
    for path, digest in LOG_MD5.items():
        try:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rb") as f:
                got = hashlib.md5(f.read()).hexdigest()
        except OSError as e:
            got = str(e)
        check("logs untouched: " + path, got == digest, got)

    try:
        with open(REPORT) as f:
            report = json.load(f)
    except Exception as e:  # missing or invalid JSON
        check("report exists and is valid JSON", False, repr(e))
        return
    check("report is a JSON object", isinstance(report, dict), type(report).__name__)
    if not isinstance(report, dict):
        return
    check("report has exactly the required keys", set(report) == set(EXPECTED),
          "got %s" % sorted(report))
    for key, want in EXPECTED.items():
        got = report.get(key)
        ok = got == want and type(got) is type(want)
        check("report[%r]" % key, ok, "got %r, want %r" % (got, want))


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        failures.append("verifier crashed")
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    sys.exit(1 if failures else 0)
