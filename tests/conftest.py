import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The trainer-adapter tests run in their own venv (.venv-rl, see the Makefile): trl, verifiers and verl
# cannot be installed next to Harbor. `make test` runs them there with ENVEVO_RL_TESTS=1.
collect_ignore_glob = [] if os.environ.get("ENVEVO_RL_TESTS") else ["test_adapters_*.py"]
FIXTURES = ROOT / "tests" / "fixtures"
ENVEVO = [sys.executable, "-m", "envevo.cli"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a parallel run, hand out the files that start containers first: they take minutes each, and one left for
    the end would run alone while the other workers idle. The order within a file is kept, and every worker sorts the
    same way (xdist checks that the collections agree)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    containers = {item.path for item in items if item.get_closest_marker("sandbox")}
    items.sort(key=lambda item: item.path not in containers)  # stable: collection order otherwise


_STARTED = time.monotonic()


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's, on the controller; absent without xdist
def pytest_testnodedown(node, error) -> None:
    """Each worker's finishing time, so a CI log shows how evenly the files were spread (a worker that ends minutes
    before the other was idle that long)."""
    reporter = node.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write("\n")  # after the progress dots of -q
        reporter.write_line(f"worker {node.gateway.id} finished at {time.monotonic() - _STARTED:.0f} s")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A `serial` test fails at once in a parallel run (pytest -n N, N > 1): what it counts or sweeps on the shared
    podman would race the other workers' containers. `make test` runs them alone, after the parallel pass."""
    if item.get_closest_marker("serial") and int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        pytest.fail("a `serial` test runs alone: `pytest -m serial` without -n (make test does)", pytrace=False)


@pytest.fixture(autouse=True)
def _no_real_models(monkeypatch):
    """No test reaches a real model: pydantic-ai refuses model requests unless a test against a fake server turns
    them on with `override_allow_model_requests(True)`."""
    try:
        import pydantic_ai.models
    except ImportError:  # the trainer-adapter venv has no pydantic-ai, so nothing there can call a model
        return
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", False)


@pytest.fixture
def procedural_run(tmp_path: Path) -> tuple[Path, list]:
    """A run at tmp_path/run with one procedural lineage of three generations, each a length edit: (run, chains)."""
    import random  # imported here: every test (and the trainer-adapter venv) loads this conftest

    from envevo.catalog import CatalogPrior, random_chain
    from envevo.evolve.engines.procedural import compose, mutate
    from envevo.store import LineageStore
    from envevo.trace import Direction, Effort

    prior, rng = CatalogPrior(), random.Random(0)
    chain = random_chain(None, 2, 5)
    chains = [chain]
    store = LineageStore.open(tmp_path / "run", durable=False)
    lid = store.create_lineage("seed", compose(chain), trace=chain.trace(), difficulty=prior.difficulty(chain.trace()),
                               verified=True)
    for g in (1, 2):
        chain = mutate(chain, Direction.LENGTH, Effort.HIGH, rng, prior)
        chains.append(chain)
        store.commit_generation(lid, g, compose(chain), direction="length", effort="high", trace=chain.trace(),
                                difficulty=prior.difficulty(chain.trace()), verified=True)
    store.close()
    return tmp_path / "run", chains


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
