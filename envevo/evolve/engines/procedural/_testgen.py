"""The generated verifier: tests/test.sh and tests/test_outputs.py (python3 standard library only)."""

from __future__ import annotations

import pprint
from typing import Any

from envevo.catalog import OUTPUT_DIR, WORK_DIR

TEST_SH = """#!/bin/bash
# Reward 1 only if every check in test_outputs.py passes. The tests run in a fresh verifier container
# ([verifier] environment_mode = "separate" in task.toml) that sees the agent's work only through the declared
# artifacts, so nothing the agent planted (a python3 or tool shim, sitecustomize.py, a .pth, a forged reward
# file) is there. Belt and braces for a shared run: the image's own interpreter by absolute path, isolated (-I:
# no PYTHON* vars, user site or cwd; -S: no site-packages), and a PATH without /usr/local.
# The reward is written once, last, after every check has ended: whatever of the agent's the checks ran (a build,
# as nobody) cannot write /logs/verifier, which belongs to root, and anything it wrote before is removed here.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
# Harbor's own environments open /logs/verifier to every user (777); close it to the agent's code first.
mkdir -p /logs/verifier && chmod 755 /logs/verifier 2>/dev/null
reward=0
if /usr/bin/python3 -I -S /tests/test_outputs.py; then
  reward=1
fi
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json /logs/verifier/reward.txt
echo "$reward" > /logs/verifier/reward.txt
exit 0
"""

_RUNNER = r'''

def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _mode(path):
    # The artifact copy keeps permission bits (envevo's runtime reads them from the archive's headers).
    return stat.S_IMODE(os.stat(path).st_mode)


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
        got = _mode(path)
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


def test_outputs(checks: list[dict[str, Any]]) -> str:
    body = pprint.pformat(checks, width=120, sort_dicts=False)
    return ('"""Checks every output this task asks for: each intermediate file and the final result, exactly."""\n\n'
            "import json\nimport os\nimport stat\nimport sys\n\n"
            f"CHECKS = {body}\n{_RUNNER}")


def _nested(path: str, outer: str) -> bool:
    return path == outer or path.startswith(outer.rstrip("/") + "/")


def verifier_config(checks: list[dict[str, Any]]) -> list[str]:
    """The artifacts for task.toml: what the tests read from the agent's container.

    The step outputs travel as their two directories, /app/work and /app/output, which by the instruction hold
    only the agent's outputs (one copy each instead of one per file: each costs engine calls on both sides);
    the tests read them as data and never import or run anything from them. Every other checked file or tree
    (an in-place edit) is an artifact of its own, and a path inside another artifact is carried by it. A path
    whose mode is checked travels inside its parent directory: the copy keeps the modes of what it carries, while
    the verifier makes an artifact's own root afresh. No collect hook: a hook would run in the agent's container,
    with the agent's binaries, and its listing would be the agent's to forge."""
    def carrier(check: dict[str, Any]) -> str:
        path = check["path"]
        if check["check"] == "mode":
            path = path.rstrip("/").rsplit("/", 1)[0] or "/"
        return next((d for d in (WORK_DIR, OUTPUT_DIR) if _nested(path, d)), path)

    paths = sorted({carrier(c) for c in checks}, key=lambda p: (p.count("/"), p))
    artifacts: list[str] = []
    for p in paths:
        if not any(_nested(p, a) for a in artifacts):
            artifacts.append(p)
    return artifacts
