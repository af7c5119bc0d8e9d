import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The trainer-adapter tests run in their own venv (.venv-rl, see the Makefile): trl, verifiers and verl
# cannot be installed next to Harbor. `make test` runs them there with ENVEVO_RL_TESTS=1.
collect_ignore_glob = [] if os.environ.get("ENVEVO_RL_TESTS") else ["test_adapters_*.py"]
FIXTURES = ROOT / "tests" / "fixtures"
ENVEVO = [sys.executable, "-m", "envevo.cli"]


@pytest.fixture(scope="session")
def sandbox():
    """The local engine, prepared. Sandbox tests fail (not skip) without it: `make test` runs doctor first."""
    from envevo.sandbox import activate

    activate()
    if shutil.which("podman") is None:
        pytest.fail("podman is missing: run `envevo doctor --fix` (make test does) or `make test-fast`")
    return "podman"


def run_cli(*args: str, timeout: float = 1800, **kw) -> subprocess.CompletedProcess:
    """Run the envevo CLI as a user would, in a child process."""
    return subprocess.run([*ENVEVO, *args], capture_output=True, text=True, timeout=timeout, cwd=kw.pop("cwd", ROOT), **kw)
