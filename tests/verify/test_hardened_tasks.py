"""envevo's own tasks resist an agent that does no work and hacks the verifier instead.

Every seed and every procedural task runs its tests in a separate verifier container that sees only declared
artifacts. The exploit agent (tests/fakes/exploit_agent.py) plants a python3 shim and tool stand-ins in
/usr/local/bin, sitecustomize/.pth/conftest files, empty output files, and a forged reward file kept rewritten by a
detached loop; before the hardening any one of those scored 1 on every one of these tasks. It must score 0, and the
reference solution must still score 1 (here for the procedural tasks; the seeds' oracle: tests/cli/test_cli_verify.py).
"""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

import pytest

from envevo.catalog import random_chain
from envevo.evolve.engines.procedural import write_task
from envevo.evolve.engines.procedural._testgen import TEST_SH
from tests.conftest import ROOT

SEEDS = sorted(p for p in (ROOT / "examples" / "seeds").iterdir() if (p / "task.toml").is_file())
EXPLOIT = "tests.fakes.exploit_agent:ExploitAgent"
# (length, seed) of procedural chains: 7 carries a file tree, 34 a permission repair (modes kept by the artifact
# copy) and an in-place patch.
PROCEDURAL = [(3, 7), (3, 34)]


def _verifier_layout(task_dir: Path, test_sh: str) -> None:
    cfg = tomllib.loads((task_dir / "task.toml").read_text())
    assert cfg["verifier"]["environment_mode"] == "separate"
    assert cfg["artifacts"], "a separate verifier sees only artifacts: the checked outputs must be declared"
    assert all(not a.rstrip("/").endswith(("/app", "/tests")) for a in cfg["artifacts"])
    assert cfg["environment"]["network_mode"] == "no-network"
    assert "/usr/bin/python3 -I -S /tests/test_outputs.py" in test_sh
    # /logs/verifier closed to the agent's code first; the reward written once, last, after every check ended.
    tests = test_sh.index("/usr/bin/python3 -I -S /tests/test_outputs.py")
    assert test_sh.index("chmod 755 /logs/verifier") < tests
    assert test_sh.count("> /logs/verifier/reward.txt") == 1
    assert tests < test_sh.index("rm -f /logs/verifier/reward.json") < test_sh.index("> /logs/verifier/reward.txt")


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.name)
def test_seed_verifier_is_separate_and_isolated(seed: Path) -> None:
    _verifier_layout(seed, (seed / "tests" / "test.sh").read_text())


def test_procedural_verifier_is_separate_and_isolated(tmp_path: Path) -> None:
    for length, seed in PROCEDURAL:
        path = write_task(random_chain(None, length, seed), tmp_path / f"p{seed}")
        _verifier_layout(path, (path / "tests" / "test.sh").read_text())
    assert (path / "tests" / "test.sh").read_text() == TEST_SH
    cfg = tomllib.loads((path / "task.toml").read_text())
    # No collect hook (it would run the agent's binaries); a moded path travels inside its parent directory.
    assert "collect" not in cfg["verifier"]
    assert "/app/data" in cfg["artifacts"]


@pytest.mark.sandbox
def test_exploit_agent_scores_zero_and_oracle_one(sandbox, tmp_path: Path) -> None:
    from envevo.runtime import TrialSpec, run_trials

    procedural = [write_task(random_chain(None, length, seed), tmp_path / f"procedural-{seed}")
                  for length, seed in PROCEDURAL]
    tasks = list(SEEDS) + procedural
    # The exploit on every task; the oracle on the procedural ones only: every seed's oracle scores 1 (twice, with
    # the same runtime) in tests/cli/test_cli_verify.py::test_every_seed_is_sound, which also runs the red team's
    # classes on each seed. Running it here too cost 6 of this test's 16 trials.
    specs = [TrialSpec(task_dir=task, agent=EXPLOIT, env=sandbox, trials_dir=tmp_path / "trials",
                       trial_name=f"{task.name}-exploit") for task in tasks]
    specs += [TrialSpec(task_dir=task, agent="oracle", env=sandbox, trials_dir=tmp_path / "trials",
                        trial_name=f"{task.name}-oracle") for task in procedural]
    outcomes = asyncio.run(run_trials(specs, concurrency=4))
    exploits, oracles = outcomes[:len(tasks)], outcomes[len(tasks):]
    for task, oracle in zip(procedural, oracles, strict=True):
        assert oracle.error_kind == "ok" and oracle.reward == 1.0, (task.name, oracle.error_message, oracle.trial_dir)
    for task, exploit in zip(tasks, exploits, strict=True):
        assert exploit.error_kind == "ok" and exploit.reward == 0.0, (task.name, exploit.error_message,
                                                                       exploit.trial_dir)
        log = (exploit.trial_dir / "agent" / "exploit.log").read_text()
        assert "planted-site" in log and "forged" in log and "/usr/local/bin/python3" in log
        # the forged 1 never reached the verifier's reward file: the tests wrote their own 0 there
        assert (exploit.trial_dir / "verifier" / "reward.txt").read_text().strip() == "0"
        stdout = (exploit.trial_dir / "verifier" / "test-stdout.txt").read_text()
        assert "FAIL" in stdout, stdout[-2000:]
