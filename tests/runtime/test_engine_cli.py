"""Engine commands run from asyncio survive the way a Ctrl-C ends a command: asyncio.run cancels every task left."""

import subprocess
import sys
import textwrap

from tests.conftest import ROOT


def _run_script(body: str) -> subprocess.CompletedProcess:
    script = "import asyncio\nfrom envevo.runtime._engine_cli import _run\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_a_command_starting_when_asyncio_run_ends_does_not_hang_the_exit():
    # The main task returns while a command is being started, at each step of its start: asyncio.run then cancels
    # every task left in one sweep. With asyncio's subprocess machinery, the sweep could cancel asyncio's own
    # setup task of the child before it ran: the killed child's exit was never delivered and the interpreter never
    # exited (1 Ctrl-C in 12 during red-team trials).
    r = _run_script("""
        async def main(steps):
            asyncio.create_task(_run("sleep", "30"))
            for _ in range(steps):
                await asyncio.sleep(0)
        for steps in range(8):
            asyncio.run(main(steps))
        print("exited")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "exited"
    assert "Traceback" not in r.stderr


def test_output_beyond_the_limit_is_dropped_with_a_note_and_the_exit_code_kept():
    r = _run_script("""
        code, out, err = asyncio.run(_run("sh", "-c", "head -c 300000 /dev/zero; echo oops >&2; exit 3", limit=1000))
        print(code, out.count(chr(0)), "299000 more bytes dropped" in out, err.strip())
    """)
    assert r.stdout.split() == ["3", "1000", "True", "oops"], r.stderr


def test_a_timeout_kills_the_command():
    r = _run_script("""
        import time
        t0 = time.monotonic()
        try:
            asyncio.run(_run("sleep", "30", timeout=0.5))
        except TimeoutError:
            print("timeout", round(time.monotonic() - t0) < 10)
    """)
    assert r.stdout.split() == ["timeout", "True"], r.stderr
