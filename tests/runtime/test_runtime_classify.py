"""How a Harbor trial result maps to one error kind: what rollouts count as the agent's fail, and what is retried."""

import asyncio
from types import SimpleNamespace as NS

import pytest

from envevo.runtime._outcome import ErrorKind
from envevo.runtime._trial import classify

STARTED = NS(started_at="2026-01-01T00:00:00Z")


def _result(exc_type=None, message="boom", rewards=None, agent_started=True, verifier_started=False):
    return NS(exception_info=NS(exception_type=exc_type, exception_message=message) if exc_type else None,
              verifier_result=NS(rewards=rewards) if rewards is not None else None,
              agent_execution=STARTED if agent_started else None, verifier=STARTED if verifier_started else None)


def test_clean_and_rewardless_trials() -> None:
    assert classify(_result(rewards={"reward": 1.0}))[0] is ErrorKind.OK
    assert classify(_result())[0] is ErrorKind.REWARD_MISSING


def test_an_agent_crash_the_verifier_scored_is_the_agents_fail() -> None:
    # A command of the agent timed out; Harbor still ran the verifier, which scored 0.
    r = _result("RuntimeError", "Command timed out after 120 seconds", rewards={"reward": 0.0}, verifier_started=True)
    assert classify(r)[0] is ErrorKind.AGENT_ERROR
    assert classify(_result("RuntimeError", verifier_started=True))[0] is ErrorKind.VERIFIER_ERROR


def test_endpoint_failures_are_infrastructure_and_get_retried() -> None:
    for name in ("APIConnectionError", "RateLimitError", "AuthenticationError", "ServiceUnavailableError"):
        kind = classify(_result(name, rewards={"reward": 0.0}, verifier_started=True))[0]
        assert kind is ErrorKind.INFRASTRUCTURE_ERROR and kind.is_infrastructure
    assert classify(_result("ValueError", agent_started=False))[0] is ErrorKind.INFRASTRUCTURE_ERROR


def test_a_trial_scored_without_an_artifact_the_engine_failed_to_copy_is_infrastructure(tmp_path) -> None:
    """The oracle's outputs never reached the separate verifier (the engine failed copying them out): its 0.0 says
    nothing of the task, so the trial is an infrastructure error (retried, then inconclusive), never a fail."""
    from envevo.runtime import TrialSpec
    from envevo.runtime._archive import COPY_FAILED
    from envevo.runtime._local_env import NOTES_FILE
    from envevo.runtime._trial import to_outcome

    def outcome(notes: list[str]):
        trial = tmp_path / "trials" / f"t__{len(list(tmp_path.glob('trials/*')))}"
        (trial / "environment" / "env").mkdir(parents=True)
        (trial / "environment" / "env" / NOTES_FILE).write_text("".join(f"{n}\n" for n in notes))
        r = _result(rewards={"reward": 0.0})
        r.task_name, r.trial_name, r.started_at, r.finished_at = "t", trial.name, None, None
        r.agent_result = r.environment_setup = r.agent_setup = r.agent_execution = r.verifier = None
        r.compute_token_cost_totals = lambda: (None, None, None, None)
        return to_outcome(TrialSpec(task_dir=tmp_path, agent="oracle", trials_dir=tmp_path / "trials"), r)

    broken = outcome(["agent processes ended", f"{COPY_FAILED} /app/project: Error: layer not known"])
    assert broken.error_kind is ErrorKind.INFRASTRUCTURE_ERROR and "/app/project" in (broken.error_message or "")
    assert not broken.passed
    clean = outcome(["agent processes ended"])
    assert clean.error_kind is ErrorKind.OK and clean.reward == 0.0


def test_an_interrupted_trial_is_not_retried_or_recorded(monkeypatch, tmp_path) -> None:
    """Harbor tears a cancelled trial down and may return it as a failed result rather than re-raise; run_trials
    must then stop (the CLI exits 130), not retry it as an infrastructure failure and run the task again."""
    from envevo.runtime import TrialSpec, _trial

    calls = []

    class SwallowingTrial:
        @classmethod
        async def create(cls, config):
            return cls()

        async def run(self):
            calls.append(1)
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:  # what Harbor does on a cancel in some phases
                return _result("CancelledError", rewards=None)
            raise AssertionError("the trial was not cancelled")

    monkeypatch.setattr(_trial, "Trial", SwallowingTrial)
    monkeypatch.setattr(_trial, "trial_config", lambda spec: None)
    recorded = []

    async def main():
        spec = TrialSpec(task_dir=tmp_path, agent="oracle", env="docker-none", trials_dir=tmp_path)
        job = asyncio.ensure_future(_trial.run_trials([spec], retries=3, on_done=lambda i, o: recorded.append(o)))
        await asyncio.sleep(0.2)
        job.cancel()
        await job

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    assert calls == [1] and recorded == []


def test_a_programming_error_in_envevos_trial_setup_fails_loudly(monkeypatch, tmp_path) -> None:
    """A bug in envevo's own trial code must crash the run, not read as an inconclusive verdict."""
    import envevo.runtime._trial as trial_mod
    from envevo.runtime import TrialSpec

    task = tmp_path / "task"
    task.mkdir()
    spec = TrialSpec(task_dir=task, agent="oracle", trials_dir=tmp_path / "trials")
    monkeypatch.setattr(trial_mod, "resolve_env", None)  # _environment_config then calls None: a TypeError in envevo
    with pytest.raises(trial_mod.EnvevoBug, match="TypeError.*a bug in envevo"):
        asyncio.run(trial_mod.run_trial(spec))


def test_what_harbor_rejects_stays_an_outcome_with_its_exception_type(tmp_path) -> None:
    import envevo.runtime._trial as trial_mod
    from envevo.runtime import TrialSpec

    spec = TrialSpec(task_dir=tmp_path / "missing", agent="oracle", trials_dir=tmp_path / "trials")
    outcome = asyncio.run(trial_mod.run_trial(spec))
    assert outcome.error_kind is ErrorKind.INFRASTRUCTURE_ERROR and outcome.exception_type
    assert outcome.error_message and outcome.error_message.startswith(outcome.exception_type)


def test_only_a_bug_type_raised_from_envevos_own_frame_is_a_bug() -> None:
    from envevo.runtime._trial import EnvevoBug, _raise_if_bug

    ours = 'Traceback:\n  File "/x/harbor/trial/trial.py", line 3\n  File "/x/envevo/runtime/_local_env.py", line 9\n'
    theirs = 'Traceback:\n  File "/x/envevo/runtime/_local_env.py", line 9\n  File "/x/harbor/env.py", line 3\n'
    with pytest.raises(EnvevoBug):
        _raise_if_bug("AttributeError", "no attribute", ours, "a trial")
    _raise_if_bug("AttributeError", "no attribute", theirs, "a trial")  # Harbor's own frame: stays an outcome
    _raise_if_bug("ValueError", "bad", ours, "a trial")  # not a programming-error type
