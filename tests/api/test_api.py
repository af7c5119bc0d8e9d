"""The library entry point: every public name imports, the defaults are the CLI's, and `api.verify` runs a task
end to end with containers replaced by a scripted runtime (the oracle scores 1, an empty solution 0)."""

from __future__ import annotations

import asyncio
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

from envevo import api
from envevo.errors import ExitCode, UserError
from envevo.runtime import ErrorKind, TrialOutcome, TrialSpec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_every_public_name_imports() -> None:
    missing = [name for name in api.__all__ if getattr(api, name, None) is None]
    assert not missing and len(set(api.__all__)) == len(api.__all__)


def test_the_library_defaults_are_the_cli_defaults() -> None:
    """The commands read their option defaults from the same models: a library caller meets the CLI's checks."""
    from envevo.cli import _options as o
    from envevo.evolve import EvolveConfig

    cfg, run = api.CheckConfig(), EvolveConfig()
    assert (cfg.sandbox.env, cfg.sandbox.trial_concurrency) == (o.ENV, o.TRIAL_CONCURRENCY) == (run.env, run.trial_concurrency)
    v = cfg.verification
    assert (v.repeats, v.red_team, v.mutation) == (o.REPEATS, o.RED_TEAM, o.MUTATION) == (run.repeats, run.red_team,
                                                                                          run.mutation)
    assert cfg.scale.executor == o.EXECUTOR == "asyncio"


PASSED = "1 of 1 checks passed\n"
FAILED = "FAIL greeting - FileNotFoundError: [Errno 2] No such file or directory\n0 of 1 checks passed\n"


class ScriptedRuntime:
    """Stands in for `envevo.runtime.run_trials`: the reference solution scores `oracle`, anything else 0."""

    def __init__(self, oracle: float) -> None:
        self.oracle = oracle
        self.agents: list[str] = []

    async def __call__(self, specs: list[TrialSpec], *, concurrency: int, retries: int, on_done=None,
                       gate=None) -> list[TrialOutcome]:
        out = []
        for k, s in enumerate(specs):
            self.agents.append(s.agent)
            d = s.trials_dir / (s.trial_name or f"{s.agent}-{len(self.agents)}")
            (d / "verifier").mkdir(parents=True, exist_ok=True)
            (d / "verifier" / "test-stdout.txt").write_text(PASSED if s.agent == "oracle" else FAILED)
            outcome = TrialOutcome(task=s.task_dir.name, agent=s.agent, trial_dir=d, error_kind=ErrorKind.OK,
                                   reward=self.oracle if s.agent == "oracle" else 0.0)
            if on_done is not None:
                on_done(k, outcome)
            out.append(outcome)
        return out


@pytest.fixture
def task(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)  # no engine on the host needed
    return Path(shutil.copytree(FIXTURES / "runtime" / "hello", tmp_path / "hello"))


CONFIG = api.CheckConfig(verification=api.VerificationConfig(repeats=2, red_team="off", mutation="off"))


@pytest.mark.parametrize(("oracle", "status", "code"), [(1.0, "ok", ExitCode.OK), (0.0, "fail", ExitCode.FAIL)])
def test_verify_runs_the_verifiers_and_returns_typed_verdicts(task, tmp_path, monkeypatch, oracle, status, code) -> None:
    runtime = ScriptedRuntime(oracle)
    monkeypatch.setattr("envevo.runtime.run_trials", runtime)
    done: list[str] = []

    @contextmanager
    def progress(description: str, total: int):
        done.append(f"{description}: {total}")
        yield done.append

    result = asyncio.run(api.verify([task], CONFIG, jobs_dir=tmp_path / "jobs", progress=progress))
    assert isinstance(result, api.VerifyResult) and not result.refused
    (verdict,) = result.verdicts
    assert (verdict.task, verdict.status, result.exit_code) == ("hello", status, code)
    assert set(verdict.reports) == {"oracle", "invalid_test"} and verdict.reports["invalid_test"].passed
    assert sorted(runtime.agents) == ["nop", "oracle", "oracle"]  # --repeats 2, and the empty solution once
    assert done[0] == "verifying 1 task(s): 3" and len(done) == 4  # the progress saw every trial
    assert result.jobs == (tmp_path / "jobs").resolve() and result.usage == [] and result.budget_stop is None


def test_verify_refuses_bad_input_before_any_trial(task, tmp_path, monkeypatch) -> None:
    runtime = ScriptedRuntime(1.0)
    monkeypatch.setattr("envevo.runtime.run_trials", runtime)
    with pytest.raises(UserError, match="does not exist"):
        asyncio.run(api.verify([tmp_path / "missing"], CONFIG, jobs_dir=tmp_path / "jobs"))
    with pytest.raises(UserError, match="--max-tokens is used here by the red team"):
        asyncio.run(api.verify([task], CONFIG.model_copy(update={"model": api.ModelConfig(max_tokens=5)}),
                               jobs_dir=tmp_path / "jobs"))
    assert runtime.agents == []


@pytest.mark.parametrize(("failing", "hardenable"), [("red_team", True), ("oracle", False)])
def test_seeds_select_names_the_verifiers_that_rejected_a_seed_by_field(tmp_path, monkeypatch, failing,
                                                                          hardenable) -> None:
    """Which verifiers rejected a seed is a field of the selection (their findings' source), and what `--harden`
    picks is read from it (only verifiers whose findings harden fixes), never from the reasons' wording."""
    import envevo.verify as verify
    from envevo.api._seeds import _only_hardenable
    from tests.rollout.test_rollout_unit import _seed_store

    paths, _, store = _seed_store(tmp_path)
    store.close()

    async def fake_verify(tasks, jobs, **kw):
        bad = verify.VerifierReport(name=failing, passed=False, reasons=["worded any way at all"])
        return [verify.Verdict(task=name, task_dir=d, ok=False, reports={failing: bad}) for name, d in tasks]

    monkeypatch.setattr(verify, "verify_tasks", fake_verify)
    monkeypatch.setattr("envevo.sandbox.preflight", lambda env, notify=None: None)
    config = api.CheckConfig(verification=api.VerificationConfig(red_team="on", mutation="off"))
    doc = asyncio.run(api.select_seeds(paths, config, run_dir=tmp_path / "run", out_dir=tmp_path / "seeds",
                                       min_turns=30)).doc
    verified, easy = doc["tasks"]  # the second is too easy: its rollouts rejected it, no verifier ran
    assert verified["rejected_by"] == [failing] and easy["rejected_by"] == []
    assert _only_hardenable(verified) is hardenable and not _only_hardenable(easy)
