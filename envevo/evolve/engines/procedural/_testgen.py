"""The generated verifier: tests/test.sh and tests/test_outputs.py (python3 standard library only)."""

from __future__ import annotations

import pprint
import shlex
from typing import Any

from envevo.catalog import OUTPUT_DIR, WORK_DIR

TEST_SH = """#!/bin/bash
# Reward 1 only if every check in test_outputs.py passes. The tests run in a fresh verifier container
# ([verifier] environment_mode = "separate" in task.toml) that sees the agent's work only through the declared
# artifacts, so nothing the agent planted (a python3 or tool shim, sitecustomize.py, a .pth, a forged reward
# file) is there. Belt and braces for a shared run: the image's own interpreter by absolute path, isolated (-I:
# no PYTHON* vars, user site or cwd; -S: no site-packages), a PATH without /usr/local, and the 0 written first,
# so the verifier never ends without a reward file.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json
echo 0 > /logs/verifier/reward.txt
if /usr/bin/python3 -I -S /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
fi
exit 0
"""

# File modes do not survive the artifact copy (it clears group/other write bits and resets a directory's mode),
# so a [[verifier.collect]] hook lists them in the agent's container, after the agent is done, into this
# artifact; the mode checks read it.
MODES_FILE = "/var/tmp/envevo-modes.txt"


_RUNNER = r'''

def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _modes():
    """path -> mode, from the collect hook's listing; None when there is none (tests run by hand in the task's
    own container). In the verifier container an absent listing leaves the image's untouched fixtures, whose
    modes are the ones the task asks to fix, so the checks fail."""
    try:
        text = _read(MODES_FILE)
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        mode, _, path = line.partition(" ")
        if path:
            out[path] = int(mode, 8)
    return out


MODES = _modes()


def _mode(path):
    if MODES is None:
        return stat.S_IMODE(os.stat(path).st_mode)
    if path not in MODES:
        raise FileNotFoundError("no mode recorded for " + path)
    return MODES[path]


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
            f"MODES_FILE = {MODES_FILE!r}\nCHECKS = {body}\n{_RUNNER}")


def _nested(path: str, outer: str) -> bool:
    return path == outer or path.startswith(outer.rstrip("/") + "/")


def verifier_config(checks: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, str]]]:
    """(artifacts, collect hooks) for task.toml: what the tests read from the agent's container.

    The step outputs travel as their two directories, /app/work and /app/output, which by the instruction hold
    only the agent's outputs (one copy each instead of one per file: each costs engine calls on both sides);
    the tests read them as data and never import or run anything from them. Every other checked file or tree
    (an in-place edit) is an artifact of its own, a path inside another artifact is carried by it, and modes
    come through one listing written by a collect hook, since the copy does not keep them."""
    def carrier(path: str) -> str:
        return next((d for d in (WORK_DIR, OUTPUT_DIR) if _nested(path, d)), path)

    paths = sorted({carrier(c["path"]) for c in checks if c["check"] != "mode"}, key=lambda p: (p.count("/"), p))
    artifacts: list[str] = []
    for p in paths:
        if not any(_nested(p, a) for a in artifacts):
            artifacts.append(p)
    moded = sorted({c["path"] for c in checks if c["check"] == "mode"})
    if not moded:
        return artifacts, []
    listing = " ".join(shlex.quote(p) for p in moded)
    hook = {"command": f"/usr/bin/stat -c '%a %n' -- {listing} > {MODES_FILE} 2>/dev/null; true", "user": "root"}
    return artifacts + [MODES_FILE], [hook]
