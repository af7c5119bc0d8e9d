"""Verifier for git-recovery. Exits 0 only if every check passes."""
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

REPO = "/app/ratelimiter"
MAIN = "f7d2ac0567c8b0cf3f898d0ff6782539e173a286"
LOST_TIP = "7be3e4260e16474a0e22592e25ac5b8007ee44b0"
STASH = "9d19f3d2e9037e2502d98eab03a55ef4f672d145"
# blob of tests/test_window.py in the stash (that file merges cleanly)
STASH_TEST_WINDOW_BLOB = "d584d1fd3aa556c17780ac2762c599cd19fbf525"
BRANCH = "refs/heads/feature/token-bucket"

failures = []


def check(name, cond, detail=""):
    print(("PASS " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[:800]))
    if not cond:
        failures.append(name)


def git(*args, cwd=REPO):
    r = subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=cwd, capture_output=True, text=True)
    return r.returncode, r.stdout.strip(), r.stderr.strip()


HIDDEN_TESTS = r'''
import unittest
from ratelimiter import TokenBucket, FixedWindow, parse_rate
from ratelimiter import config

class Clock:
    t = 0.0
    def __call__(self):
        return self.t

class Hidden(unittest.TestCase):
    def test_rates(self):
        cases = {"10/s": 10.0, "5/sec": 5.0, "120/m": 2.0, "90/min": 1.5, "30/minute": 0.5,
                 "7200/h": 2.0, "1800/hour": 0.5, " 3600 / h ": 1.0, "2/second": 2.0}
        for spec, want in cases.items():
            self.assertAlmostEqual(parse_rate(spec), want, msg=spec)

    def test_bad_rates(self):
        for bad in ("", "10", "10/d", "0/s", "-5/min", "abc/s", "1/s/s"):
            with self.assertRaises(ValueError, msg=bad):
                parse_rate(bad)

    def test_defaults_untouched(self):
        self.assertEqual(config.DEFAULT_RATE, "10/s")
        self.assertEqual(config.DEFAULT_BURST, 20)

    def test_burst(self):
        self.assertEqual(config.parse_burst("7"), 7)
        with self.assertRaises(ValueError):
            config.parse_burst(0)

    def test_bucket_from_config(self):
        c = Clock()
        b = TokenBucket.from_config("120/min", 4, c)
        self.assertEqual(sum(b.allow() for _ in range(6)), 4)
        c.t = 1.0
        self.assertEqual(sum(b.allow() for _ in range(6)), 2)

if __name__ == "__main__":
    unittest.main()
'''


def main():
    rc, out, err = git("rev-parse", "refs/heads/main")
    check("main unchanged", out == MAIN, out or err)

    rc, tip, err = git("rev-parse", "--verify", "-q", BRANCH)
    check("branch feature/token-bucket exists", rc == 0 and len(tip) == 40, err)
    if rc != 0:
        return
    rc, parents, _ = git("log", "-1", "--format=%P", tip)
    check("new commit has exactly one parent, the lost tip", parents == LOST_TIP, parents)
    rc, subject, _ = git("log", "-1", "--format=%s", tip)
    check("commit subject", subject == "Apply recovered rate parser fix", subject)
    rc, changed, _ = git("diff", "--name-only", LOST_TIP, tip)
    check("only the stash's files changed",
          sorted(changed.split()) == ["ratelimiter/config.py", "tests/test_window.py"], changed)
    rc, blob, _ = git("rev-parse", tip + ":tests/test_window.py")
    check("tests/test_window.py matches the stash", blob == STASH_TEST_WINDOW_BLOB, blob)
    rc, cfg, _ = git("show", tip + ":ratelimiter/config.py")
    check("no conflict markers", not any(m in cfg for m in ("<<<<<<<", ">>>>>>>", "=======")), cfg)
    rc, _, _ = git("cat-file", "-e", tip + ":ratelimiter/leaky.py")
    check("abandoned leaky-bucket experiment not resurrected", rc != 0)
    rc, _, _ = git("merge-base", "--is-ancestor", "634bb52ae9c7e4ce023dff5a7e91aa179c3c1714", tip)
    check("leaky-bucket commit not in branch history", rc != 0)

    tmp = tempfile.mkdtemp()
    try:
        clone = os.path.join(tmp, "clone")
        rc, _, err = git("clone", "-q", "-b", "feature/token-bucket", REPO, clone, cwd=tmp)
        check("branch can be cloned", rc == 0, err)
        if rc == 0:
            r = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests", "-t", "."],
                               cwd=clone, capture_output=True, text=True, timeout=120)
            check("repository test suite passes", r.returncode == 0 and "Ran 9 tests" in r.stderr, r.stderr[-1500:])
            with open(os.path.join(clone, "hidden_check.py"), "w") as f:
                f.write(HIDDEN_TESTS)
            r = subprocess.run([sys.executable, "hidden_check.py"], cwd=clone, capture_output=True,
                               text=True, timeout=120)
            check("behaviour of recovered code", r.returncode == 0, r.stderr[-1500:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    try:
        with open("/app/recovered_shas.txt") as f:
            lines = [l.strip() for l in f.read().strip().splitlines()]
    except OSError as e:
        lines = [repr(e)]
    check("recovered_shas.txt", lines == ["branch_tip=" + LOST_TIP, "stash=" + STASH], lines)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        failures.append("verifier crashed")
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    sys.exit(1 if failures else 0)
