"""Verifier for git-recovery. Exits 0 only if every check passes."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

ARTIFACT = "/app/ratelimiter"  # only its .git comes from the agent's container (task.toml: artifacts)
GIT = "/usr/bin/git"
PY = "/usr/bin/python3"
NOBODY = 65534
CLEAN_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/nonexistent", "LC_ALL": "C.UTF-8",
             "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
REPO = None  # a bare copy of the artifact, made by main(): its config, hooks and attributes are not the agent's
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


def git(*args, cwd=None):
    r = subprocess.run([GIT, "-c", "safe.directory=*", *args], cwd=cwd or REPO, capture_output=True, text=True,
                       env=CLEAN_ENV)
    return r.returncode, r.stdout.strip(), r.stderr.strip()


def as_nobody():
    """Keyword arguments that run a command as nobody (when the tests run as root, as they do by default)."""
    return dict(user=NOBODY, group=NOBODY, extra_groups=[]) if os.geteuid() == 0 else {}


def reap():
    """Kill whatever the agent's code left running as nobody, so nothing outlives the check that ran it."""
    if os.geteuid() == 0:
        subprocess.run([PY, "-I", "-S", "-c", "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass"],
                       capture_output=True, **as_nobody())


def untrusted(cmd, cwd):
    """Run the recovered code (the agent's commit) as nobody, in a clean environment: it cannot write the reward
    file, read these tests (/tests is made private) or leave a process behind."""
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120, env=CLEAN_ENV,
                              start_new_session=True, **as_nobody())
    finally:
        reap()


# Run against the recovered code in a child process that only reports what it observes; the expected values stay
# here, where that code cannot read them.
RATES = {"10/s": 10.0, "5/sec": 5.0, "120/m": 2.0, "90/min": 1.5, "30/minute": 0.5,
         "7200/h": 2.0, "1800/hour": 0.5, " 3600 / h ": 1.0, "2/second": 2.0}
BAD_RATES = ("", "10", "10/d", "0/s", "-5/min", "abc/s", "1/s/s")
HIDDEN_PROBE = r'''
import json
from ratelimiter import TokenBucket, FixedWindow, parse_rate
from ratelimiter import config


def outcome(f, *args):
    try:
        v = f(*args)
    except ValueError:
        return "ValueError"
    except Exception as e:
        return "raised " + type(e).__name__
    return v if type(v) in (int, float, str, list) else repr(v)


class Clock:
    t = 0.0
    def __call__(self):
        return self.t


def bucket():
    c = Clock()
    b = TokenBucket.from_config("120/min", 4, c)
    first = sum(bool(b.allow()) for _ in range(6))
    c.t = 1.0
    return [first, sum(bool(b.allow()) for _ in range(6))]


print(json.dumps({"rates": [outcome(parse_rate, s) for s in %r],
                  "bad": [outcome(parse_rate, s) for s in %r],
                  "defaults": [config.DEFAULT_RATE, config.DEFAULT_BURST],
                  "burst": [outcome(config.parse_burst, "7"), outcome(config.parse_burst, 0)],
                  "bucket": outcome(bucket)}))
''' % (list(RATES), list(BAD_RATES))


def hidden_behaviour_ok(stdout):
    """Whether the probe's report matches the behaviour the hidden tests want, and what differs."""
    try:
        got = json.loads(stdout.strip().splitlines()[-1])
        rates, bad = got["rates"], got["bad"]
        wrong = [s for s, r in zip(RATES, rates) if not (type(r) in (int, float) and round(r - RATES[s], 7) == 0)]
        wrong += [s for s, r in zip(BAD_RATES, bad) if r != "ValueError"]
        if len(rates) != len(RATES) or len(bad) != len(BAD_RATES):
            wrong.append("probe output incomplete")
        if got["defaults"] != ["10/s", 20] or type(got["defaults"][1]) is not int:
            wrong.append("defaults %r" % (got["defaults"],))
        if got["burst"] != [7, "ValueError"] or type(got["burst"][0]) is not int:
            wrong.append("parse_burst %r" % (got["burst"],))
        if got["bucket"] != [4, 2]:
            wrong.append("bucket %r" % (got["bucket"],))
    except Exception as e:
        return False, "no report from the probe: %r" % e
    return not wrong, "wrong: %s" % wrong


def main():
    global REPO
    os.chmod("/tests", 0o700)  # the recovered code runs as nobody below; it must not read what it is tested against
    work = tempfile.mkdtemp()
    try:
        os.chmod(work, 0o755)
        REPO = os.path.join(work, "verify.git")
        # A bare copy through git's own transport: nothing of the artifact's config, hooks or attributes comes
        # along, and no git command below runs inside the agent's repository.
        rc, _, err = git("clone", "-q", "--mirror", "--no-local", os.path.join(ARTIFACT, ".git"), REPO, cwd=work)
        check("repository readable", rc == 0, err)
        if rc == 0:
            checks(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    recovered_shas()


def checks(tmp):
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

    clone = os.path.join(tmp, "clone")
    rc, _, err = git("clone", "-q", "-b", "feature/token-bucket", REPO, clone, cwd=tmp)
    check("branch can be cloned", rc == 0, err)
    if rc == 0:
        r = untrusted([PY, "-B", "-E", "-s", "-S", "-m", "unittest", "discover", "-s", "tests", "-t", "."], clone)
        check("repository test suite passes", r.returncode == 0 and "Ran 9 tests" in r.stderr, r.stderr[-1500:])
        with open(os.path.join(clone, "hidden_check.py"), "w") as f:
            f.write(HIDDEN_PROBE)
        r = untrusted([PY, "-B", "-E", "-s", "-S", "hidden_check.py"], clone)
        ok, detail = hidden_behaviour_ok(r.stdout)
        check("behaviour of recovered code", r.returncode == 0 and ok, detail + "\n" + r.stderr[-1500:])


def recovered_shas():
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
