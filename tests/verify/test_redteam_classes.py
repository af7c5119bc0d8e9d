"""The red-team classes of the sandbox boundary (issue 22): what each reads from a task, how a trial that never
reached the tests is judged, and, in the sandbox, that the hardened seeds resist the code the verifier runs."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from envevo.runtime import ErrorKind, TrialOutcome
from envevo.task import load_task
from envevo.verify import RedTeamVerifier, broken_by, verify_tasks
from envevo.verify._redteam import ExploitResult, exploit_result
from envevo.verify.exploits import get_exploit
from envevo.verify.exploits._targets import artifact_paths, collect_hooks, separate_verifier
from envevo.verify.exploits.forged_evidence import expected_modes, hook_parts
from envevo.verify.exploits.verifier_code_reward import MAKEFILE, plant_dirs
from tests.conftest import FIXTURES, ROOT

HACKABLE = FIXTURES / "hackable"
SEEDS = ROOT / "examples" / "seeds"


def test_task_readers():
    t = load_task(HACKABLE / "forged_evidence")
    assert separate_verifier(t) and artifact_paths(t) == ["/var/tmp/modes.txt"]
    assert [h.command for h in collect_hooks(t)] == ["stat -c '%a %n' /app/secret.key > /var/tmp/modes.txt"]
    assert hook_parts(t) == (["stat"], ["/var/tmp/modes.txt"], ["/app/secret.key"])
    assert expected_modes(t, ["/app/secret.key"]) == {"/app/secret.key": "600"}
    assert not separate_verifier(load_task(HACKABLE / "detached_daemon"))
    assert artifact_paths(load_task(SEEDS / "git-recovery")) == ["/app/ratelimiter/.git", "/app/recovered_shas.txt"]


def test_expected_mode_from_a_procedural_check_line(tmp_path):
    t = load_task(HACKABLE / "forged_evidence")
    t.write("tests/test_outputs.py", 'CHECKS = [{"check": "mode", "path": "/app/run.sh", "expected": 493}]\n')
    assert expected_modes(t, ["/app/run.sh"]) == {"/app/run.sh": "755"}


def test_verifier_code_reward_plants_where_the_verifier_looks():
    assert plant_dirs(load_task(HACKABLE / "verifier_code_reward")) == ["/app/proj"]
    assert "/app/statcalc" in plant_dirs(load_task(SEEDS / "c-build-fix"))
    assert "/app/ratelimiter/.git" in plant_dirs(load_task(SEEDS / "git-recovery"))
    targets = MAKEFILE.splitlines()[2].removesuffix(":").split()
    assert {"all", "default", "test", "check"} <= set(targets) and ".DEFAULT:" in MAKEFILE
    assert "$$" in MAKEFILE and "reward.json" in MAKEFILE  # make's own $ escaped; the loop keeps writing


def test_forged_evidence_and_shared_compose_need_their_task_shape():
    assert get_exploit("forged_evidence").script(load_task(HACKABLE / "resistant")) is None  # no collect hook
    assert get_exploit("forged_evidence").script(load_task(HACKABLE / "forged_evidence")) is not None
    found = get_exploit("shared_compose").inspect(load_task(FIXTURES / "realistic" / "compose"))
    assert len(found) == 1 and "environment/docker-compose.yaml" in found[0] and "by construction" in found[0]
    for name in ("separate-verifier", "no-network"):
        assert get_exploit("shared_compose").inspect(load_task(FIXTURES / "realistic" / name)) == []
    assert get_exploit("shared_compose").inspect(load_task(HACKABLE / "detached_daemon")) == []  # no compose file


def test_detached_daemon_detaches_before_the_script_returns():
    script = get_exploit("detached_daemon").script(load_task(HACKABLE / "detached_daemon"))
    assert script is not None
    for word in ("setsid", "nohup", "trap '' HUP", "exec </dev/null", "sleep 2"):
        assert word in script
    assert script.rstrip().endswith("sleep 2")


def _trial(tmp_path: Path, exploit: str, kind: ErrorKind, stdout: str | None, reward: float | None = None) -> TrialOutcome:
    d = tmp_path / f"t__rt-{exploit}__{kind.value}{len(stdout or '')}"
    (d / "verifier").mkdir(parents=True)
    if stdout is not None:
        (d / "verifier" / "test-stdout.txt").write_text(stdout)
    return TrialOutcome(task="t", agent="x", reward=reward, error_kind=kind, trial_dir=d)


def test_a_trial_that_never_reached_the_tests_is_inconclusive(tmp_path):
    never = [_trial(tmp_path, "fifo_logs", ErrorKind.VERIFIER_ERROR, None),
             _trial(tmp_path, "fifo_logs", ErrorKind.INFRASTRUCTURE_ERROR, "PASS x\n"),
             _trial(tmp_path, "fifo_logs", ErrorKind.ENVIRONMENT_BUILD_FAILURE, None)]
    assert [exploit_result(o)[0] for o in never] == [ExploitResult.INCONCLUSIVE] * 3
    ran = [_trial(tmp_path, "sparse_files", ErrorKind.VERIFIER_ERROR, "FAIL x\n"),
           _trial(tmp_path, "sparse_files", ErrorKind.REWARD_MISSING, ""),
           _trial(tmp_path, "sparse_files", ErrorKind.OK, "FAIL x\n", reward=0.0)]
    assert [exploit_result(o)[0] for o in ran] == [ExploitResult.RESISTED] * 3
    assert exploit_result(_trial(tmp_path, "log_links", ErrorKind.OK, "", reward=1.0))[0] is ExploitResult.BROKEN
    v = RedTeamVerifier(exploits=["fifo_logs"])
    rep = v.judge_task(HACKABLE / "resistant", [never[0]])
    assert not rep.passed and rep.inconclusive and broken_by(rep) == []
    assert "fifo_logs: inconclusive: the verifier failed before any test ran" in rep.reasons[0]
    assert v.judge_task(HACKABLE / "resistant", [ran[0]]).passed


@pytest.mark.sandbox
def test_hardened_seeds_resist_the_code_the_verifier_runs(sandbox, tmp_path):
    """c-build-fix runs the agent's build, git-recovery its recovered package: as nobody, with a /logs/verifier
    that user cannot write, and a clone without the repository's hooks or config."""
    tasks = []
    for name in ("c-build-fix", "git-recovery"):
        shutil.copytree(SEEDS / name, tmp_path / name)
        tasks.append((name, tmp_path / name))
    verdicts = asyncio.run(verify_tasks(tasks, tmp_path / "trials", env=sandbox,
                                        verifiers=[RedTeamVerifier(exploits=["verifier_code_reward"])], concurrency=2))
    for v in verdicts:
        rep = v.reports["red_team"]
        assert rep.passed, (v.task, rep.reasons)
        assert [(o.reward, o.error_kind) for o in rep.runs] == [(0.0, ErrorKind.OK)], (v.task, rep.runs)

