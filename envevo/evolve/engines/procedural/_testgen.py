"""The generated verifier: tests/test.sh and tests/test_outputs.py (python3 standard library only)."""

from __future__ import annotations

import pprint

TEST_SH = """#!/bin/bash
# Reward 1 only if every check in test_outputs.py passes. The 0 is written first, so the verifier
# never ends without a reward file.
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
if python3 /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
fi
exit 0
"""

_RUNNER = r'''

def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def check(c):
    kind, path, want = c["check"], c["path"], c["expected"]
    if kind == "lines":
        got = _read(path).splitlines()
    elif kind == "records":
        got = [json.loads(line) for line in _read(path).splitlines() if line.strip()]
    elif kind == "number":
        got = int(_read(path).strip())
    elif kind == "text":
        got = _read(path)
    elif kind == "mode":
        got = stat.S_IMODE(os.stat(path).st_mode)
    elif kind == "tree":
        got = {}
        for d, _, names in os.walk(path):
            for n in names:
                full = os.path.join(d, n)
                got[os.path.relpath(full, path)] = _read(full)
    else:
        raise ValueError("unknown check " + kind)
    if got != want:
        shown = oct(got) if kind == "mode" else repr(got)[:300]
        raise AssertionError("expected " + (oct(want) if kind == "mode" else repr(want)[:300]) + ", got " + shown)


def main():
    failed = 0
    for c in CHECKS:
        try:
            check(c)
            print("PASS", c["check"], c["path"])
        except Exception as e:  # a missing or malformed file is a failed check, not a crash
            failed += 1
            print("FAIL", c["check"], c["path"], "-", type(e).__name__, e)
    print(len(CHECKS) - failed, "of", len(CHECKS), "checks passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
'''


def test_outputs(checks: list[dict]) -> str:
    body = pprint.pformat(checks, width=120, sort_dicts=False)
    return ('"""Checks every output this task asks for: each intermediate file and the final result, exactly."""\n\n'
            "import json\nimport os\nimport stat\nimport sys\n\n"
            f"CHECKS = {body}\n{_RUNNER}")
