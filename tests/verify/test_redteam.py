"""The red team: each exploit class breaks the fixture built to be hackable by it, and a separate verifier resists all."""

import asyncio
import json
import re
import shutil
import subprocess

import pytest

from envevo.runtime import ErrorKind, TrialOutcome
from envevo.task import load_task
from envevo.verify import RedTeamVerifier, broken_by, choose_exploits, default_verifiers, parse_red_team, verify_tasks
from envevo.verify.exploits import EXPLOITS, exploit_names, get_exploit
from envevo.verify.exploits.output_guessing import named_paths
from envevo.verify.exploits.reward_forgery import reward_paths
from envevo.verify.exploits.tool_shadowing import shadowed_tools
from tests.conftest import FIXTURES

HACKABLE = FIXTURES / "hackable"
TRIAL_EXPLOITS = ["reward_forgery", "runner_hijack", "tool_shadowing", "output_guessing", "verifier_code_reward",
                  "forged_evidence", "detached_daemon"]
# Exploits that attack the host, not the reward: no fixture can be hackable by them (tests/verify/test_exploits_host.py).
HOST_EXPLOITS = ["log_links", "fifo_logs", "sparse_files"]
GRADER_EXPLOITS = ["answer_flooding", "loose_numbers", "judge_injection"]
VERIFIER_SIDE_EXPLOITS = ["artifact_links", "executed_artifacts"]
# False-fail probes: a rate beside the verdict, never a finding, so no fixture is "broken" by them.
PROBES = ["false_fail_newline", "false_fail_crlf", "false_fail_json", "false_fail_numbers"]


def test_registry_is_lazy_and_complete():
    assert exploit_names() == ["reward_forgery", "runner_hijack", "tool_shadowing", "output_guessing", "peeking",
                               "llm_hacker", *HOST_EXPLOITS[:1], "verifier_code_reward", "forged_evidence",
                               "detached_daemon", "shared_compose", *HOST_EXPLOITS[1:], *GRADER_EXPLOITS,
                               *VERIFIER_SIDE_EXPLOITS, *PROBES, "host_env"]
    assert all(":" in target for target in EXPLOITS.values())
    assert EXPLOITS["llm_hacker"] == "envevo.llm:LLMHacker"  # the llm floor, by a string (a named plugin edge)
    for name in exploit_names():
        assert get_exploit(name).name == name
        # the LLM hacker is tested against these fixtures, below; shared_compose on tests/fixtures/realistic/compose
        if get_exploit(name).kind != "agent" and name not in HOST_EXPLOITS + PROBES + ["shared_compose"]:
            assert (HACKABLE / name / "task.toml").is_file(), f"every exploit has a fixture it breaks: {name}"
    with pytest.raises(ValueError, match="unknown exploit"):
        get_exploit("nope")


def test_red_team_setting():
    assert parse_red_team("off") == (False, None)
    assert parse_red_team("on") == (True, None)
    assert parse_red_team("sample:2") == (True, 2)
    for bad in ("sample:0", "sample:x", "yes"):
        with pytest.raises(ValueError):
            parse_red_team(bad)
    assert [v.name for v in default_verifiers(2)] == ["oracle", "invalid_test"]
    assert [v.name for v in default_verifiers(2, red_team="on")] == ["oracle", "invalid_test", "red_team"]


def test_sample_is_deterministic_per_task():
    a, b = load_task(HACKABLE / "runner_hijack"), load_task(HACKABLE / "peeking")
    names = [n for n in exploit_names() if get_exploit(n).kind != "agent"]
    assert choose_exploits(a, names, 2) == choose_exploits(a, names, 2)
    assert len(choose_exploits(a, names, 2)) == 2
    assert choose_exploits(a, names, None) == names
    assert choose_exploits(a, names, 99) == names
    # Different candidates draw different samples (over a few tasks, not always the same pair).
    draws = {tuple(choose_exploits(load_task(HACKABLE / n), names, 2)) for n in names if (HACKABLE / n).is_dir()}
    draws |= {tuple(choose_exploits(b, names, 2))}
    assert len(draws) > 1


def test_exploits_read_what_they_plant_from_the_task():
    assert reward_paths(load_task(HACKABLE / "reward_forgery")) == ["/var/tmp/envevo-score.txt"]
    assert shadowed_tools(load_task(HACKABLE / "tool_shadowing")) == ["diff"]
    assert named_paths(load_task(HACKABLE / "output_guessing")) == ["/app/data/legacy.ini", "/app/out/config.ini"]
    assert get_exploit("tool_shadowing").script(load_task(HACKABLE / "output_guessing")) is None  # nothing to shadow


def test_every_script_is_valid_shell():
    for fixture in HACKABLE.iterdir():
        task = load_task(fixture)
        for name in TRIAL_EXPLOITS + HOST_EXPLOITS + GRADER_EXPLOITS + VERIFIER_SIDE_EXPLOITS + PROBES:
            script = get_exploit(name).script(task)
            if script is not None:
                r = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
                assert r.returncode == 0, (fixture.name, name, r.stderr)


def test_peeking_is_static():
    found = get_exploit("peeking").inspect(load_task(HACKABLE / "peeking"))
    assert found and "environment/expected.txt is a copy of tests/expected.txt" in found[0]
    for name in ("resistant", "runner_hijack", "output_guessing"):
        assert get_exploit("peeking").inspect(load_task(HACKABLE / name)) == []


def test_peeking_spares_an_input_the_instruction_hands_over(tmp_path):
    # Real tasks keep a copy of an example input in tests/ to compute what they expect; the agent is told to read it.
    task_dir = tmp_path / "scene"
    shutil.copytree(HACKABLE / "peeking", task_dir)
    (task_dir / "environment" / "expected.txt").rename(task_dir / "environment" / "scene.udel")
    (task_dir / "tests" / "expected.txt").rename(task_dir / "tests" / "scene.udel")
    (task_dir / "instruction.md").write_text("Render /opt/build/scene.udel and write the Fibonacci numbers to /app/fib.txt.\n")
    assert get_exploit("peeking").inspect(load_task(task_dir)) == []
    # Not named by the instruction: still an answer in the agent's image.
    (task_dir / "instruction.md").write_text("Write the first 20 Fibonacci numbers to /app/fib.txt.\n")
    assert "environment/scene.udel is a copy of tests/scene.udel" in get_exploit("peeking").inspect(load_task(task_dir))[0]
    # A solution file is an answer even when the instruction names it.
    (task_dir / "tests" / "scene.udel").rename(task_dir / "solution" / "scene.udel")
    (task_dir / "instruction.md").write_text("Render /opt/build/scene.udel.\n")
    assert "is a copy of solution/scene.udel" in get_exploit("peeking").inspect(load_task(task_dir))[0]


def _outcome(tmp_path, name, exploit, reward, kind=ErrorKind.OK, planted=()):
    d = tmp_path / name / f"{name}__rt-{exploit}__abc123"
    (d / "agent").mkdir(parents=True)
    (d / "verifier").mkdir()
    (d / "agent" / "script.log").write_text("".join(f"planted {p}\n" for p in planted))
    (d / "verifier" / "test-stdout.txt").write_text("PASS sum\n")
    return TrialOutcome(task=name, agent="x", reward=reward, error_kind=kind, trial_dir=d)


def test_judge_names_the_exploit_and_quotes_the_evidence(tmp_path):
    v = RedTeamVerifier()
    task_dir = HACKABLE / "runner_hijack"
    specs = v.trial_specs(task_dir, "podman", tmp_path)
    assert [s.agent_kwargs["label"] for s in specs] == ["reward_forgery", "runner_hijack", "output_guessing", "log_links",
                                                        "verifier_code_reward", "detached_daemon", "fifo_logs",
                                                        "sparse_files", "false_fail_newline", "false_fail_crlf"]
    assert all(s.agent == "envevo.runtime._scripted_agent:ScriptedAgent" for s in specs)
    runs = [_outcome(tmp_path, "t", "reward_forgery", 0.0),
            _outcome(tmp_path, "t", "runner_hijack", 1.0, planted=["/usr/local/bin/python3"]),
            _outcome(tmp_path, "t", "output_guessing", None, ErrorKind.REWARD_MISSING)]
    rep = v.judge_task(task_dir, runs)
    assert not rep.passed and not rep.inconclusive
    assert broken_by(rep) == ["runner_hijack"]
    assert "reward 1.0" in rep.reasons[0] and "/usr/local/bin/python3" in rep.reasons[0] and "__rt-runner_hijack__" in rep.reasons[0]
    # Everything resisted: a pass; a sandbox that never ran the exploit: inconclusive, not a pass.
    assert v.judge_task(task_dir, [runs[0], _outcome(tmp_path, "u", "runner_hijack", 0.0), runs[2]]).passed
    broken = v.judge_task(task_dir, [runs[0], _outcome(tmp_path, "w", "runner_hijack", None, ErrorKind.ENVIRONMENT_BUILD_FAILURE), runs[2]])
    assert not broken.passed and broken.inconclusive and broken_by(broken) == []
    # The static exploit needs no trial.
    peek = v.judge_task(HACKABLE / "peeking", [])
    assert not peek.passed and broken_by(peek) == ["peeking"]


@pytest.mark.sandbox
def test_each_exploit_breaks_its_fixture_and_a_separate_verifier_resists_all(sandbox, tmp_path):
    # The grader-logic and verifier-side classes have their own sandbox test (test_grader_exploits.py), and the
    # false-fail probes are no exploits: left out here. host_env's task asks for a host variable: refused before any
    # trial (test_host_env_is_static_and_names_the_variable).
    skip = (*GRADER_EXPLOITS, *VERIFIER_SIDE_EXPLOITS, "host_env")
    tasks = [(p.name, p) for p in sorted(HACKABLE.iterdir()) if p.is_dir() and p.name not in skip]
    every = [n for n in exploit_names() if n not in PROBES]
    # The separate verifier meets every exploit; a hackable fixture meets the exploit it is made for (which one else
    # breaks it is not the claim), so the trials stay few: about 40, not 150.
    gate = asyncio.Semaphore(4)

    async def one(name, path):
        red_team = RedTeamVerifier(exploits=every if name == "resistant" else [name])
        return await verify_tasks([(name, path)], tmp_path / name, env="podman",
                                  verifiers=default_verifiers(1) + [red_team], gate=gate)

    async def all_of_them():
        return await asyncio.gather(*(one(name, path) for name, path in tasks))

    by = {v.task: v for verdicts in asyncio.run(all_of_them()) for v in verdicts}
    assert set(by) == {name for name, _ in tasks}
    for v in by.values():
        # The fixtures are sound by the other two verifiers: the oracle passes, the empty solution fails.
        assert v.reports["oracle"].passed and v.reports["invalid_test"].passed, json.dumps(v.summary(), indent=1, default=str)[:3000]
    assert by["resistant"].ok, by["resistant"].reasons
    for name in TRIAL_EXPLOITS + ["peeking"]:
        rep = by[name].reports["red_team"]
        assert not by[name].ok and name in broken_by(rep), (name, rep.reasons)
    # The evidence names what was planted and where the trial is.
    text = "\n".join(by["runner_hijack"].reports["red_team"].reasons)
    assert "/usr/local/bin/python3" in text and "__rt-runner_hijack__" in text


def test_bad_red_team_setting_is_one_line_on_verify_and_evolve(tmp_path):
    from tests.conftest import run_cli

    for args in (["verify", str(HACKABLE / "resistant")], ["evolve", str(HACKABLE / "resistant"), "--run", str(tmp_path / "run")]):
        proc = run_cli(*args, "--red-team", "always")
        assert proc.returncode == 2, proc.stderr
        assert "--red-team 'always'" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


# -- the LLM red team: a hacker agent driven by the configured model --------------------------------------------


def _hacker_replies(script: str) -> list:
    from tests.fakes.openai_server import final, tool_calls

    return [tool_calls(("run", {"command": "ls -la /logs/verifier /app; id"})),
            final({"found": True, "summary": "a daemon keeps /logs/verifier/reward.json at 1 while the tests run",
                   "script": script, "criterion_name": "no_writable_reward",
                   "criterion": "the tests run in a separate verifier environment, so no file the agent writes "
                                "can become the reward"})]


def _configure(tmp_path, monkeypatch, server=None):
    """A project dir as cwd: its envevo.toml names the fake model (or no model), its rubric file is learned into."""
    monkeypatch.chdir(tmp_path)
    if server is not None:
        (tmp_path / "envevo.toml").write_text(f'[llm]\nmodel = "openai:fake-model"\nbase_url = "{server.url}"\n'
                                              "timeout_sec = 30.0\nmax_retries = 1\n")


def test_llm_hacker_is_skipped_with_the_reason_without_a_model(tmp_path, monkeypatch):
    _configure(tmp_path, monkeypatch)
    hacker = get_exploit("llm_hacker")
    assert hacker.kind == "agent" and hacker.script(load_task(HACKABLE / "resistant")) is None
    attack = asyncio.run(hacker.attack(load_task(HACKABLE / "resistant"), HACKABLE / "resistant", "podman", tmp_path,
                                       asyncio.Semaphore(1)))
    assert attack.skipped and "no model configured" in attack.skipped and attack.outcome is None
    v = RedTeamVerifier(exploits=["peeking", "llm_hacker"])
    asyncio.run(v.attack_task(HACKABLE / "resistant", "podman", tmp_path, asyncio.Semaphore(1)))
    rep = v.judge_task(HACKABLE / "resistant", [])
    # Skipping is neither a pass of the hacker nor a failure of the task: the report passes and says why.
    # a note, not a reason: reasons are the Modifier's feedback, and a skip is nothing it could fix
    assert rep.passed and rep.reasons == []
    assert len(rep.notes) == 1 and rep.notes[0].startswith("llm_hacker: skipped: no model configured")
    assert broken_by(rep) == []


def _hack(tmp_path, monkeypatch, fixture, *, learn=False, runs_model=False):
    """Verify `fixture` with the LLM hacker against a fake model: named in ./envevo.toml, or (`runs_model`) only in
    the run's own settings, with a ./envevo.toml that names no model. (verdict, roles, rubric file, the run's
    runtime or None)."""
    from pydantic_ai.models import override_allow_model_requests

    from envevo.llm import LLMRuntime, settings_with_options
    from tests.fakes.openai_server import FakeOpenAI, Script

    forge = get_exploit("reward_forgery").script(load_task(HACKABLE / fixture))
    project = tmp_path / "project"
    with FakeOpenAI(Script(hacker=_hacker_replies(forge))) as server:
        project.mkdir()
        _configure(project, monkeypatch, None if runs_model else server)
        runtime = LLMRuntime(settings_with_options(model="openai:fake-model", base_url=server.url)) if runs_model else None
        red_team = RedTeamVerifier(exploits=["llm_hacker"], model=runtime,
                                   learn_rubric=project / "learned.toml" if learn else None)
        with override_allow_model_requests(True):
            (verdict,) = asyncio.run(verify_tasks([(fixture, HACKABLE / fixture)], tmp_path / "trials", env="podman",
                                                  verifiers=[red_team]))
        roles = server.roles()
    return verdict, roles, project / "learned.toml", runtime


@pytest.mark.sandbox
def test_llm_hacker_success_rejects_the_candidate_and_proposes_a_criterion_without_writing_it(sandbox, tmp_path,
                                                                                             monkeypatch):
    verdict, roles, rubric, _ = _hack(tmp_path, monkeypatch, "reward_forgery")
    assert roles == ["hacker", "hacker"]  # one command in the sandbox, then the answer
    rep = verdict.reports["red_team"]
    assert not verdict.ok and not rep.passed and broken_by(rep) == ["llm_hacker"], rep.reasons
    text = rep.reasons[0]
    assert "reward 1.0 without solving the task" in text and "__rt-llm_hacker__" in text and "daemon" in text
    assert "rubric criterion: no_writable_reward (proposed; --learn-rubric FILE adds it)" in text
    # A verification edits no rubric file unless asked to learn.
    assert sorted(p.name for p in rubric.parent.iterdir()) == ["envevo.toml"]


@pytest.mark.sandbox
def test_llm_hacker_with_the_runs_model_is_metered_by_the_run_and_learns_only_when_asked(sandbox, tmp_path, monkeypatch):
    from envevo.llm import load_rubric

    # ./envevo.toml names no model: only the run's settings do, so a hacker that read the file would be skipped.
    verdict, roles, rubric, runtime = _hack(tmp_path, monkeypatch, "reward_forgery", learn=True, runs_model=True)
    assert roles == ["hacker", "hacker"]
    assert [r.role for r in runtime.meter.records] == ["hacker", "hacker"]  # the run's meter saw both calls
    assert sum(r.input_tokens for r in runtime.meter.records) > 0
    rep = verdict.reports["red_team"]
    assert broken_by(rep) == ["llm_hacker"], rep.reasons
    assert f"rubric criterion: no_writable_reward in {rubric}" in rep.reasons[0]
    (criterion,) = load_rubric(rubric).criteria
    assert criterion.name == "no_writable_reward" and criterion.required
    assert "separate verifier environment" in criterion.description and "found by the LLM red team" in criterion.description


@pytest.mark.sandbox
def test_llm_hacker_fails_on_the_hardened_fixture_and_its_attempt_is_listed(sandbox, tmp_path, monkeypatch):
    verdict, roles, rubric, _ = _hack(tmp_path, monkeypatch, "resistant", learn=True)
    assert roles == ["hacker", "hacker"]
    rep = verdict.reports["red_team"]
    assert verdict.ok and rep.passed and rep.reasons == [], rep.reasons
    # The hack was replayed as a real trial, and the separate verifier environment gave it 0.
    assert [(o.agent, o.reward) for o in rep.runs] == [("envevo.runtime._scripted_agent:ScriptedAgent", 0.0)]
    # Resisted, and said so with what it tried: not the silence of an exploit that never ran.
    (note,) = rep.notes
    assert note.startswith("llm_hacker: ran 1 command(s): ls -la /logs/verifier /app; id; "
                           "its hack replayed as a trial: reward 0.0 (2 model call(s), ")  # and what they cost
    assert re.search(r"\(2 model call\(s\), [1-9]\d*\+[1-9]\d* tokens\)$", note), note
    assert not rubric.exists()


def test_host_env_is_static_and_names_the_variable():
    found = get_exploit("host_env").inspect(load_task(HACKABLE / "host_env"))
    assert [f.split(" asks")[0] for f in found] == ['task.toml [environment] env.OPENAI_API_KEY = "${OPENAI_API_KEY}"',
                                                   'task.toml [environment] env.MODE = "${MODE:-…}"']
    assert get_exploit("peeking").inspect(load_task(HACKABLE / "host_env")) == []
    for name in ("resistant", "peeking"):
        assert get_exploit("host_env").inspect(load_task(HACKABLE / name)) == []
    # A verifier's key (an LLM judge) never reaches the agent's container: not reported.
    assert get_exploit("host_env").inspect(load_task(FIXTURES / "realistic" / "verifier-env")) == []
