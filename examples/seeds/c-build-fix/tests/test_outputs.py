"""Verifier for c-build-fix. Exits 0 only if every check passes."""
import hashlib
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import traceback

PROJECT = "/app/statcalc"  # the agent's project, copied from its container (task.toml: artifacts)
NOBODY = 65534
CLEAN_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/nonexistent", "LC_ALL": "C.UTF-8"}
PROTECTED_MD5 = {
    "tests/run_tests.sh": "2a74d0226a8b5455c0c7454cfa860c99",
    "tests/cases/basic.expected": "553e582fcf7855b5e9b9da233a88c656",
    "tests/cases/basic.in": "3b0332e02daabf31651a5a0d81ba830a",
    "tests/cases/comments_and_blanks.expected": "09b90999b0754444c6cc242cc762149b",
    "tests/cases/comments_and_blanks.in": "c5a390cad04e3b658ce07b682e1f622f",
    "tests/cases/fractional.expected": "98693b4abcae2dd1623b6ca25fc0e9d8",
    "tests/cases/fractional.in": "3da738f28faf41ca4f81c1bb00e07594",
    "tests/cases/negative.expected": "da4b8485f45a95d40b4fd7b22e65683c",
    "tests/cases/negative.in": "0f55a763a55a682210e900386662aa2e",
    "tests/cases/not_a_number.in": "135395e97b6f8b47105b03544c90e876",
    "tests/cases/not_a_number.status": "767abe6119a018446bcd7627ff8a4f2d",
    "tests/cases/single.expected": "94ef3f4c9fa2827e250e8e59db2269be",
    "tests/cases/single.in": "f4ac87efd8212ed795ae35d080835371",
    "data/latency_ms.txt": "92611c3b6161c36425d55b73578eb2b6",
}
failures = []


def check(name, cond, detail=""):
    print(("PASS " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[-1500:]))
    if not cond:
        failures.append(name)


def reference(text):
    """The README's specification, in Python."""
    vals = []
    for i, line in enumerate(text.split("\n"), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        vals.append(float(s))
    v = sorted(vals)
    n = len(v)
    total = 0.0
    for x in v:
        total += x
    mean = total / n
    med = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    ss = 0.0
    for x in v:
        ss += (x - mean) * (x - mean)
    sd = math.sqrt(ss / (n - 1)) if n > 1 else 0.0
    p95 = v[(95 * n + 99) // 100 - 1]
    return "count=%d\nmin=%.3f\nmax=%.3f\nmean=%.3f\nmedian=%.3f\nstddev=%.3f\np95=%.3f\n" % (
        n, v[0], v[-1], mean, med, sd, p95)


def hidden_cases():
    rng = random.Random(2024)
    ints = list(range(1, 21))
    rng.shuffle(ints)
    cases = {
        "twenty_ints": "".join("%d\n" % i for i in ints),
        "close_fractions": "".join("%.3f\n" % rng.uniform(10.0, 10.9) for _ in range(37)),
        "messy_whitespace": "# header\r\n\t 3.25\t\r\n   \r\n\t# tabbed comment\r\n-1.5\r\n\r\n1e1\r\n 0.125 \r\n",
        "one_value": "  -7.5\n",
        "many_values": "".join("%.4f\n" % rng.gauss(100, 15) for _ in range(5000)),
        "even_mixed": "5\n-2.5\n0.75\n3\n",
        "hundred": "".join("%d\n" % (i * 7 % 101) for i in range(1, 101)),
    }
    return cases


def as_nobody():
    """Keyword arguments that run a command as nobody (when the tests run as root, as they do by default)."""
    return dict(user=NOBODY, group=NOBODY, extra_groups=[]) if os.geteuid() == 0 else {}


def reap():
    """Kill whatever the agent's build or binary left running as nobody, so nothing outlives the check."""
    if os.geteuid() == 0:
        subprocess.run(["/usr/bin/python3", "-I", "-S", "-c",
                        "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass"],
                       capture_output=True, **as_nobody())


def run(cmd, cwd, stdin=None, timeout=120):
    """Run the agent's build or binary as nobody, in a clean environment: it cannot write the reward file, read
    these tests (/tests is made private) or leave a process behind."""
    try:
        return subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=timeout,
                              env=CLEAN_ENV, start_new_session=True, **as_nobody())
    finally:
        reap()


def give_to_nobody(top):
    if os.geteuid() != 0:
        return
    for d, dirs, files in os.walk(top):
        for n in [d] + [os.path.join(d, x) for x in dirs + files]:
            os.lchown(n, NOBODY, NOBODY)


def main():
    os.chmod("/tests", 0o700)  # the agent's build and binary run as nobody below; they must not read these tests
    for rel, digest in PROTECTED_MD5.items():
        try:
            with open(os.path.join(PROJECT, rel), "rb") as f:
                got = hashlib.md5(f.read()).hexdigest()
        except OSError as e:
            got = repr(e)
        check("unchanged: " + rel, got == digest, got)
    for rel in ("src/main.c", "src/stats.c", "src/parse.c", "src/stats.h", "src/parse.h", "Makefile"):
        check("source file present: " + rel, os.path.isfile(os.path.join(PROJECT, rel)))

    tmp = tempfile.mkdtemp()
    try:
        work = os.path.join(tmp, "statcalc")
        shutil.copytree(PROJECT, work, symlinks=True)
        os.chmod(tmp, 0o755)
        give_to_nobody(work)
        r = run(["make", "clean"], work)
        check("make clean", r.returncode == 0, r.stdout + r.stderr)
        for leftover in ("statcalc", "src/main.o", "src/stats.o", "src/parse.o"):
            if os.path.exists(os.path.join(work, leftover)):
                os.remove(os.path.join(work, leftover))
        r = run(["make"], work)
        check("make builds from clean", r.returncode == 0 and os.path.isfile(os.path.join(work, "statcalc")),
              r.stdout + r.stderr)
        if r.returncode != 0:
            return
        r = run(["make", "test"], work)
        check("make test passes", r.returncode == 0 and "0 failed" in r.stdout, r.stdout + r.stderr)

        binary = os.path.join(work, "statcalc")
        for name, text in hidden_cases().items():
            path = os.path.join(tmp, name + ".txt")
            with open(path, "w", newline="") as f:
                f.write(text)
            r = run([binary, path], tmp)
            want = reference(text)
            check("hidden case %s" % name, r.returncode == 0 and r.stdout == want,
                  "exit %d\ngot:\n%s\nwant:\n%s" % (r.returncode, r.stdout, want))
        text = hidden_cases()["twenty_ints"]
        r = run([binary, "-"], tmp, stdin=text)
        check("reads standard input with -", r.returncode == 0 and r.stdout == reference(text), r.stdout + r.stderr)

        bad = os.path.join(tmp, "bad.txt")
        with open(bad, "w") as f:
            f.write("# probe\n1.0\n\n2.0\n12.5ms\n3.0\n")
        r = run([binary, bad], tmp)
        check("invalid line -> exit 65", r.returncode == 65, "exit %d" % r.returncode)
        check("invalid line -> FILE:LINE message", (bad + ":5: not a number") in r.stderr, r.stderr)
        with open(bad, "w") as f:
            f.write("1\n2\n  \t\nNaN-ish\n")
        r = run([binary, bad], tmp)
        check("invalid word -> exit 65 with line 4", r.returncode == 65 and ":4: not a number" in r.stderr,
              "exit %d %s" % (r.returncode, r.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    try:
        with open(os.path.join(PROJECT, "data/latency_ms.txt"), newline="") as f:
            want = reference(f.read())
        with open(os.path.join(PROJECT, "report.txt")) as f:
            got = f.read()
        check("report.txt", got == want, "got:\n%s\nwant:\n%s" % (got, want))
    except Exception as e:
        check("report.txt readable", False, repr(e))


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        failures.append("verifier crashed")
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    sys.exit(1 if failures else 0)
