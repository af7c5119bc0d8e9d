"""The LLM engine against a real model: Gemma 3 270M (Q4_K_M) served by llama.cpp's `llama-server` on loopback, both
built from PyPI by `scripts/realmodel-setup` (`make test-realmodel` runs these).

The model is far too weak to produce an accepted generation; that is not what is tested. What is: envevo's real HTTP
path reaches the server for each role a run uses, every call ends within its bounds, the tokens envevo meters equal
the server's own counters, the run ends in one line (no traceback), and the store stays consistent and resumable.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from envevo._process import die_with_parent
from tests.conftest import ENVEVO, ROOT

pytestmark = pytest.mark.realmodel

SETUP_DIR = Path(os.environ.get("ENVEVO_REALMODEL_DIR") or Path.home() / ".cache" / "envevo" / "realmodel")
SERVER, GGUF = SETUP_DIR / "bin" / "llama-server", SETUP_DIR / "gemma-3-270m-q4_k_m.gguf"
TEMPLATE = SETUP_DIR / "Qwen-Qwen2.5-7B-Instruct.jinja"
SERVED = "gemma3-270m"
LOGS: dict[str, Path] = {}  # a server's log, by base URL: one line per request it started (`launch_slot_`)

if not os.environ.get("ENVEVO_REALMODEL_TESTS"):
    pytest.skip("the real-model tests run with `make test-realmodel` (they need scripts/realmodel-setup's build)",
                allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except OSError:
        return 0, ""


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A llama-server on a free loopback port; yields its /v1 base URL. 2 slots of 16k, tool calls on (--jinja with
    a Hermes-style template), Prometheus counters on (--metrics)."""
    missing = [p for p in (SERVER, GGUF, TEMPLATE) if not p.is_file()]
    assert not missing, f"run scripts/realmodel-setup first: missing {missing}"
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(SERVER), "-m", str(GGUF), "--alias", SERVED, "--host", "127.0.0.1",
                                 "--port", str(port), "--jinja", "--chat-template-file", str(TEMPLATE), "-c", "32768",
                                 "-np", "2", "--metrics", "-t", "2"], stdout=out, stderr=subprocess.STDOUT,
                                # The lowest CPU priority (the machine is shared), and gone with pytest, however it ends.
                                preexec_fn=lambda: die_with_parent(nice=19))
    base = f"http://127.0.0.1:{port}"
    LOGS[base] = log
    try:
        deadline = time.monotonic() + 180
        while _get(base + "/health")[0] != 200:
            assert proc.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, "llama-server did not become healthy in 180 s"
            time.sleep(1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def metrics(base: str) -> dict[str, float]:
    """The server's Prometheus counters (llamacpp:*), by name."""
    _, text = _get(base + "/metrics")
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^llamacpp:(\w+) ([0-9.e+]+)$", text, re.M)}


def _chat(base: str, body: dict) -> dict:
    req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)


def test_the_server_constrains_output_to_a_json_schema_and_honours_max_tokens(llama):
    """What the structured roles and the estimator rely on. (Tool calls are on through the template, but this base
    model does not reliably make one even with tool_choice=required: not asserted.)"""
    schema = {"type": "object", "properties": {"label": {"type": "string", "maxLength": 12}}, "required": ["label"]}
    out = _chat(llama, {"model": SERVED, "max_tokens": 48, "messages": [{"role": "user", "content": "Name a color."}],
                        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}})
    assert out["usage"]["completion_tokens"] <= 48
    # The grammar lets whitespace in between tokens, and this weak model sometimes pads with it until the cap
    # (2026-12-03: `Expecting ',' delimiter` at char 47): an answer the cap cut is honest; any other must parse.
    if out["choices"][0]["finish_reason"] != "length":
        assert "label" in json.loads(out["choices"][0]["message"]["content"])


def _envevo(*args: str, timeout: float, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OPENAI_API_KEY="EMPTY", PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([*ENVEVO, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


@pytest.mark.sandbox
@pytest.mark.timeout(3600)
def test_one_llm_generation_ends_honestly_and_its_tokens_match_the_servers(llama, tmp_path):
    """One generation of a seed with the LLM engine: whatever the weak model answers, the run ends in bounded time
    with a one-line reason per lineage, and the tokens envevo stored equal what the server counted."""
    before = metrics(llama)
    seed = ROOT / "examples" / "seeds" / "csv-etl"
    run = tmp_path / "run"
    started = time.monotonic()
    r = _envevo("evolve", str(seed), "--run", str(run), "--engine", "llm", "--model", SERVED, "--base-url",
                llama + "/v1", "--generations", "1", "--plan-budget", "1", "--env-budget", "1", "--repeats", "1",
                "--red-team", "off", "--mutation", "off", "--price", f"openai:{SERVED}=0,0", "--json",
                timeout=3000, cwd=tmp_path)
    wall = time.monotonic() - started
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode in (0, 1), r.stderr[-3000:]
    result = json.loads(r.stdout)
    after = metrics(llama)
    show = json.loads(_envevo("lineage", "show", str(run), "--json", timeout=120, cwd=tmp_path).stdout)
    rows = [u for lin in show["lineages"] for u in lin["usage"]] + show["usage_outside_lineages"]
    usage = {k: sum(u[k] or 0 for u in rows) for k in ("calls", "input_tokens", "output_tokens")}
    roles = {u["role"] for u in rows}
    served_in = after.get("prompt_tokens_total", 0) - before.get("prompt_tokens_total", 0)
    served_out = after.get("tokens_predicted_total", 0) - before.get("tokens_predicted_total", 0)
    print(f"wall {wall:.0f} s; roles {sorted(roles)}; usage {usage}; server in/out {served_in}/{served_out}; "
          f"result {json.dumps(result)[:400]}")
    assert served_out > 0 and roles  # the server was reached, and envevo metered it
    assert usage["output_tokens"] == served_out
    # A resumed run finds the lineage finished or resumable, and does not crash.
    again = _envevo("evolve", str(seed), "--run", str(run), "--engine", "llm", "--model", SERVED, "--base-url",
                    llama + "/v1", "--generations", "1", "--resume", "--red-team", "off", "--mutation", "off",
                    "--price", f"openai:{SERVED}=0,0", timeout=3000, cwd=tmp_path)
    assert "Traceback" not in again.stderr, again.stderr[-3000:]


PUBLIC_SEED = ROOT / "tests" / "fixtures" / "public" / "tb2-pypi"  # tests/fixtures/public.md: TB2's shape, shared


@pytest.mark.sandbox
@pytest.mark.timeout(5400)
def test_a_shared_verifier_seed_is_hardened_at_the_gate_and_tried_with_the_real_model(llama, tmp_path):
    """The main job from a public-style task with envevo's defaults (red team on with the model as its hacker,
    mutation verifier, harden on): the seed gate finds the shared-verifier seed hackable, harden proves a separate-
    verifier copy, ξ is extracted from that copy, and the lineage opens on it and makes one try. The weak model's try
    may fail: that it ends in one line, within its bounds, with every request and token metered, is what is asserted;
    the gate and harden are not the model's.

    The seed is a small Terminal-Bench 2 style task (palindromes; pytest installed from PyPI while grading, in the
    agent's container): Gemma 3 270M cannot quote log-forensics' files verbatim for ξ (6 of 6 tries, 2026-12-07),
    and a task that small keeps the run within the hour on 2 shared cores. The model's answers are capped as in the
    role tests below (`CAPS`, `ANSWER_SEC`); the verification settings are evolve's defaults."""
    from envevo.store import LineageStore
    from envevo.task import load_task

    seed = shutil.copytree(PUBLIC_SEED, tmp_path / "palindromes")
    # The hacker must finish an answer for harden's proof: a longer time cap than the role tests' (2 shared cores).
    caps = "".join(f"[llm.roles.{role}]\nmax_output_tokens = {n}\n" for role, n in CAPS.items())
    (tmp_path / "envevo.toml").write_text(f"[llm]\nanswer_timeout_sec = {3 * ANSWER_SEC}\nretry_budget_sec = 60\n{caps}")
    run = tmp_path / "run"
    before, requests0 = _settle(llama), _requests(llama)
    started = time.monotonic()
    r = _envevo("evolve", str(seed), "--run", str(run), "--engine", "llm", "--model", SERVED, "--base-url",
                llama + "/v1", "--generations", "1", "--plan-budget", "1", "--env-budget", "1",
                "--price", f"openai:{SERVED}=0,0", "--json", timeout=5000, cwd=tmp_path)
    wall = time.monotonic() - started
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    (lineage,) = json.loads(r.stdout)["lineages"]
    print(f"\nwall {wall:.0f} s; exit {r.returncode}; {lineage['status']}: {lineage['reason']}\n"
          + "\n".join(r.stderr.strip().splitlines()[-60:]))
    _one_line(lineage["reason"] or "done")
    # Every request the server started is one metered call; the tokens agree (at most the server's where an answer
    # was abandoned at its time cap, metered from what had arrived).
    show = json.loads(_envevo("lineage", "show", str(run), "--json", timeout=120, cwd=tmp_path).stdout)
    rows = [u for lin in show["lineages"] for u in lin["usage"]] + show["usage_outside_lineages"]
    after, requests = _settle(llama), _requests(llama) - requests0
    served_in, served_out = _served(before, after)
    calls = sum(u["calls"] for u in rows)
    used_in, used_out = (sum(u[k] or 0 for u in rows) for k in ("input_tokens", "output_tokens"))
    abandoned = sum(u.get("estimated_calls") or 0 for u in rows)
    by_role: dict[str, int] = {}
    for u in rows:
        by_role[u["role"]] = by_role.get(u["role"], 0) + u["calls"]
    print(f"calls by role {by_role}; {requests} requests, {abandoned} abandoned at the time cap; envevo in/out "
          f"{used_in}/{used_out}; server in/out {served_in}/{served_out}")
    assert calls == requests >= 1, "a request the server answered was not metered"
    if abandoned:
        assert used_in <= served_in and used_out <= served_out
    else:
        assert (used_in, used_out) == (served_in, served_out)
    # The gate ran on the seed as given and found only the red team's hacks.
    verdict = json.loads((run / "work" / "seeds" / seed.name / "verdict.json").read_text())
    assert verdict["reports"]["oracle"]["passed"] and not verdict["reports"]["red_team"]["passed"], verdict["reports"]
    if "harden could not fix it" in (lineage["reason"] or "") and "gave no usable answer" in lineage["reason"]:
        # harden's proof needs the model's hacker to finish an attack on the copy: the model's answer, not envevo's.
        # Everything else of the proof held: the copy verifies and no exploit class broke it.
        proof = json.loads((run / "work" / "seeds" / seed.name / "harden" / "harden.json").read_text())
        print(f"harden: {proof['status']}: before {proof['before']}; after {proof['after']}")
        assert proof["before"]["red_team"].startswith("broken by ") and proof["after"]["verifies"] is True
        assert proof["after"]["red_team"] == "inconclusive"  # no class broke it; the model's hacker gave no answer
        pytest.skip(f"the gate ran; harden's proof was left inconclusive by the model: {lineage['reason'][-400:]}")
    assert "the seed was hardened and proved" in r.stderr, r.stderr[-4000:]
    with LineageStore.open(run) as store:
        v0 = store.version(lineage["lineage"], 0)
        gen0 = store.load_version_task(v0.task_hash)
        tries = store.tries(lineage["lineage"], 1)
    assert v0.verified
    assert gen0.envevo_metadata["hardened"]["from_content_hash"] == load_task(seed).content_hash()
    assert gen0.config["verifier"]["environment_mode"] == "separate"
    assert "/app/palindromes.txt" in gen0.config["artifacts"]
    if lineage["reason"] and lineage["reason"].startswith("skipped: "):  # after the gate: the model's ξ, not envevo's
        assert v0.trace is None and not tries
        pytest.skip(f"gate and harden shown; the model gave no usable ξ for the hardened seed: {lineage['reason']}")
    assert v0.trace is not None  # ξ of the hardened copy, extracted after the gate
    assert tries, "no try at generation 1 was made"  # one was, whatever became of it
    assert r.returncode not in (2, 5), r.stderr[-3000:]  # no usage error, and the seed was not rejected


# ---- every other role, one at a time, through envevo's real HTTP path -----------------------------------------------
# Each test asserts protocol behaviour and honest endings, never the weak model's success: the role reached the
# server, every answer stayed within its output cap, the run ended within its bound with a one-line reason when the
# role failed, and what envevo metered equals what the server counted. Caps are set low (`CAPS`) so a 2-core machine
# runs the module in minutes; a cap cutting an answer is one of the honest endings.

SMALL = ROOT / "tests" / "fixtures" / "hackable" / "reward_forgery"  # 5 files, a one-line instruction, debian-slim
CAPS = {"proposer": 384, "reviewer": 512, "modifier": 384, "judge": 512}  # max_output_tokens per role
ANSWER_SEC = 300  # answer_timeout_sec: the wall-clock cap on one answer


def _requests(base: str) -> int:
    """How many requests the server has started (its log says `launch_slot_` once per request)."""
    return LOGS[base].read_text(errors="replace").count("launch_slot_")


def _settle(base: str) -> dict[str, float]:
    """The counters once no request is in flight (a slot's counters are added when it is released)."""
    deadline = time.monotonic() + 30
    while True:
        m = metrics(base)
        if m.get("requests_processing", 0) == 0 or time.monotonic() > deadline:
            return m
        time.sleep(0.5)


def _served(before: dict[str, float], after: dict[str, float]) -> tuple[int, int]:
    """Prompt tokens (processed + read from the slot's cache, as a response's usage counts them) and predicted ones."""
    def d(k: str) -> int:
        return int(after.get(k, 0) - before.get(k, 0))
    return d("prompt_tokens_total") + d("prompt_tokens_cached_total"), d("tokens_predicted_total")


def _runtime(base: str, **settings):
    from envevo.llm import LLMRuntime, LLMSettings, Price, RoleSettings

    runtime = LLMRuntime(LLMSettings(
        model=SERVED, base_url=base + "/v1", prices={f"openai:{SERVED}": Price(input=0, output=0)},
        answer_timeout_sec=ANSWER_SEC, retry_budget_sec=60, max_backoff_sec=5,
        roles={r: RoleSettings(max_output_tokens=n) for r, n in CAPS.items()}, **settings))
    # As every command does before work: llama-server names itself (owned_by "llamacpp"), so under output_mode "auto"
    # the structured roles ask for a JSON schema, which its grammar enforces.
    asyncio.run(runtime.preflight())
    assert runtime.grammar_roles == {"proposer", "reviewer", "modifier", "judge"}
    return runtime


class _Metered:
    """Around one role's run: wall time, the server's counters and requests before and after, and envevo's records."""

    def __init__(self, base: str, name: str):
        self.base, self.name = base, name

    def __enter__(self) -> _Metered:
        self.before, self.requests0, self.t0 = _settle(self.base), _requests(self.base), time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.monotonic() - self.t0
        self.after = _settle(self.base)
        self.requests = _requests(self.base) - self.requests0
        self.served_in, self.served_out = _served(self.before, self.after)

    def reconcile(self, records, cap: int, most_requests: int, outcome: str) -> None:
        """The server was reached; no answer passed its cap; envevo metered every request and every token.
        `records`: envevo's UsageRecords, or the CLI's usage rows (per role and model, with `calls`). An answer envevo
        abandoned at `answer_timeout_sec` is metered from the prompt and the part that arrived (flagged estimated),
        while the server counts what it generated until it noticed: then envevo's totals are at most the server's."""
        rows = [r if isinstance(r, dict) else {**r.model_dump(), "calls": 1, "estimated_calls": int(r.estimated)}
                for r in records]
        calls = sum(r["calls"] for r in rows)
        used_in, used_out = sum(r["input_tokens"] for r in rows), sum(r["output_tokens"] for r in rows)
        # An answer abandoned at its time cap is metered too, from the prompt and what had arrived (`estimated`).
        abandoned = sum(r.get("estimated_calls", 0) for r in rows)
        print(f"\n{self.name}: wall {self.wall:.0f} s; {self.requests} requests, {calls} metered "
              f"({sorted({r['role'] for r in rows})}), {abandoned} abandoned at the answer's time cap; envevo in/out "
              f"{used_in}/{used_out}; server in/out {self.served_in}/{self.served_out}; {outcome}")
        assert self.requests >= 1 and self.served_out > 0, "the role never reached the server"
        assert self.requests <= most_requests
        assert all(r["output_tokens"] <= cap * r["calls"] for r in rows), rows
        assert self.served_out <= cap * self.requests  # the cap reached the server, abandoned answers included
        assert self.wall < most_requests * ANSWER_SEC + 120  # every answer bounded, and nothing else ran away
        assert calls == self.requests, "a request the server answered was not metered"
        if abandoned:
            assert used_in <= self.served_in and used_out <= self.served_out
        else:
            assert (used_in, used_out) == (self.served_in, self.served_out)


def _one_line(reason: str) -> None:
    assert reason.strip() and "\n" not in reason.strip() and "Traceback" not in reason, reason


def _plan():
    """A fixed length plan for SMALL: filter the non-numbers out before summing."""
    from envevo.evolve._engine import Proposal
    from envevo.trace import Direction, Effort, Step, Trace

    before = Trace(goal="write the sum of the integers in /app/numbers.txt to /app/sum.txt", final="/app/sum.txt",
                   steps=(Step(scenario="a text file of integers, one per line", skill="summing numbers in bash"),))
    after = Trace(goal=before.goal, final=before.final,
                  steps=(Step(scenario="a text file of integers, one per line", skill="dropping the lines that are not integers"),
                         *before.steps))
    changes = {
        "instruction": "Say that some lines of /app/numbers.txt are not integers and must be skipped.",
        "environment": "The Dockerfile appends the lines 'n/a' and '12abc' to /app/numbers.txt.",
        "tests": "check.sh still expects 5050: the sum of the integer lines only.",
        "solution": "solve.sh skips every line that is not an integer (grep -E '^-?[0-9]+$') before summing.",
    }
    return Proposal(direction=Direction.LENGTH, effort=Effort.HIGH, before=before, after=after,
                    summary="Insert a filtering step: numbers.txt gains non-integer lines that must be skipped.",
                    plan={"rationale": "A dirty input adds one step before the sum.", "changes": changes})


def test_the_reviewer_reviews_a_fixed_plan_within_its_bounds(llama):
    from pydantic_ai.models import override_allow_model_requests

    from envevo.evolve.engines.llm._review import review
    from envevo.llm import default_rubric
    from envevo.task import load_task

    runtime = _runtime(llama)
    with _Metered(llama, "reviewer") as m, override_allow_model_requests(True):
        out = asyncio.run(review(runtime, default_rubric("plan"), load_task(SMALL), _plan(), lineage="real",
                                 generation=1))
    failed = out.feedback.startswith("the reviewer gave no usable verdict")
    if failed:
        _one_line(out.feedback)
        assert not out.accepted
    else:  # a verdict per criterion, scored in code
        assert out.criteria and out.criteria[-1].name == "score"
    m.reconcile(runtime.meter.records, CAPS["reviewer"], runtime.settings.output_retries + 1,
                f"accepted={out.accepted}: {out.feedback[:300]}")


def test_the_rubric_judge_judges_a_task_within_its_bounds(llama, tmp_path):
    from pydantic_ai.models import override_allow_model_requests

    from envevo.evolve.engines.llm import RubricJudge
    from envevo.llm import default_rubric
    from envevo.task import load_task

    runtime = _runtime(llama)
    judge = RubricJudge(runtime, default_rubric("task"))
    with _Metered(llama, "judge") as m, override_allow_model_requests(True):
        report = asyncio.run(judge.check(load_task(SMALL), SMALL))
    for reason in report.reasons:
        _one_line(reason)
    assert report.passed or report.reasons  # a rejection always says why
    m.reconcile(runtime.meter.records, CAPS["judge"], runtime.settings.output_retries + 1,
                f"passed={report.passed}: {'; '.join(report.reasons)[:300]}")


@pytest.mark.sandbox
def test_the_modifier_tool_loop_runs_in_a_real_sandbox_session_within_its_bounds(llama, sandbox, tmp_path):
    from pydantic_ai.models import override_allow_model_requests

    from envevo.evolve._engine import GenerationContext
    from envevo.evolve.engines.llm import ContainerShell
    from envevo.evolve.engines.llm._modify import modify
    from envevo.llm import CandidateFailed
    from envevo.task import load_task

    class Shell(ContainerShell):  # keeps its sessions, to see that each was opened and closed
        sessions: list = []

        def session(self, task_dir):
            s = super().session(task_dir)
            self.sessions.append(s)
            return s

    requests = 6
    runtime = _runtime(llama, modifier_requests=requests, command_timeout_sec=60)
    shell = Shell("podman", timeout_sec=60)
    ctx = GenerationContext(lineage="real", generation=1, rng=random.Random(0), workdir=tmp_path / "gen")
    ctx.workdir.mkdir()
    proposal = _plan()
    proposal.plan["changes"]["first"] = "Run `cat /app/numbers.txt | head` with run_in_container to see the input."
    with _Metered(llama, "modifier") as m, override_allow_model_requests(True):
        try:
            candidate, ws = asyncio.run(modify(runtime, load_task(SMALL), proposal, [], ctx, shell=shell, verify=None))
            outcome = f"a candidate; refused edits {ws.refused[:3]}"
        except CandidateFailed as e:
            _one_line(str(e))
            outcome = f"CandidateFailed: {e}"
    (session,) = shell.sessions
    outcome += f"; containers opened {session.opened}"
    assert session._session is None  # closed when the Modifier's run ended, whatever the model did
    m.reconcile(runtime.meter.records, CAPS["modifier"], requests, outcome[:400])


@pytest.mark.sandbox
def test_the_llm_hacker_explores_a_real_sandbox_within_its_bounds(llama, sandbox, tmp_path):
    from pydantic_ai.models import override_allow_model_requests

    from envevo.llm import LLMHacker
    from envevo.task import load_task

    budget = 3
    runtime = _runtime(llama)
    hacker = LLMHacker(runtime=runtime, budget=budget, command_timeout_sec=30)
    with _Metered(llama, "hacker") as m, override_allow_model_requests(True):
        attack = asyncio.run(hacker.attack(load_task(SMALL), SMALL, "podman", tmp_path / "trials", asyncio.Semaphore(1)))
    assert attack.skipped is None  # the run's runtime names a model
    assert len(attack.commands) <= budget
    if attack.error:
        _one_line(attack.error)
    reward = attack.outcome.reward if attack.outcome is not None else None
    outcome = (f"error: {attack.error}" if attack.error else f"summary: {attack.summary!r}, replayed reward {reward}")
    assert {r.role for r in runtime.meter.records} <= {"hacker"}  # metered as the hacker, on the judge's model
    m.reconcile(runtime.meter.records, CAPS["judge"], budget + 4, f"{len(attack.commands)} commands; {outcome}"[:400])


def _task_with_xi(dest: Path) -> Path:
    shutil.copytree(SMALL, dest)
    with (dest / "task.toml").open("a") as f:
        f.write('\n[metadata.envevo.trace]\ngoal = "write the sum of the integers in a file"\n'
                'steps = [{ scenario = "a text file of integers", skill = "summing numbers in bash" }]\n')
    return dest


def test_the_llm_estimator_scores_labels_through_the_server(llama, tmp_path):
    """`envevo difficulty --estimator llm`: llama.cpp echoes no prompt logprobs, so the estimator falls back to
    judgements (JSON schema, 32 tokens each). Its calls are metered like every role's (`estimator`): the request count
    and the tokens must match the server's."""
    task = _task_with_xi(tmp_path / "task")
    env = {"ENVEVO_CACHE_DIR": str(tmp_path / "cache")}
    with _Metered(llama, "llm estimator") as m:
        r = _envevo("difficulty", str(task), "--estimator", "llm", "--reference-model", SERVED, "--base-url",
                    llama + "/v1", "--json", timeout=600, cwd=tmp_path, env=env)
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    if r.returncode != 0:
        _one_line(r.stderr.strip().splitlines()[-1])
        pytest.fail(f"the llm estimator failed: {r.stderr.strip()[-500:]}")
    out = json.loads(r.stdout)
    (row,) = out["rows"]
    (usage,) = out["usage"]
    print(f"\nllm estimator: wall {m.wall:.0f} s; {m.requests} requests; envevo {usage}; server in/out "
          f"{m.served_in}/{m.served_out}; {row['estimator']} D_T {row['D_T']:.2f}")
    assert row["estimator"].startswith("llm-") and row["estimator"].endswith(SERVED) and math.isfinite(row["D_T"])
    assert usage["calls"] == m.requests >= 1 and m.served_out > 0
    assert (usage["input_tokens"], usage["output_tokens"]) == (m.served_in, m.served_out)
    assert m.served_out <= (m.requests - 1) * 32 + 1  # every judgement within JUDGE_MAX_TOKENS (the probe: 1)
    assert m.wall < 300


def test_the_llm_label_estimator_extracts_xi_through_the_server(llama, tmp_path):
    """`envevo difficulty --estimator llm-label --extract-model`: ξ of a task without one comes from the Proposer's
    extraction on the server (5 re-asks at most); the labels are then scored by the engine's label prior."""
    (tmp_path / "envevo.toml").write_text(f"[llm]\nanswer_timeout_sec = {ANSWER_SEC}\nretry_budget_sec = 60\n"
                                          f"[llm.roles.proposer]\nmax_output_tokens = {CAPS['proposer']}\n")
    with _Metered(llama, "llm-label estimator (extraction)") as m:
        r = _envevo("difficulty", str(SMALL), "--estimator", "llm-label", "--extract-model", SERVED, "--base-url",
                    llama + "/v1", "--json", timeout=1200, cwd=tmp_path)
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode in (0, 1, 2), r.stderr[-3000:]
    if r.returncode != 0:  # the weak model's extraction failed: one line (a user error, exit 2), naming the task
        reason = r.stderr.strip().splitlines()[-1]
        _one_line(reason)
        print(f"\nllm-label: wall {m.wall:.0f} s; {m.requests} requests; server in/out {m.served_in}/{m.served_out}; "
              f"failed: {reason[:400]}")
        assert m.requests >= 1 and m.served_out > 0
        assert m.served_out <= m.requests * CAPS["proposer"]
        assert m.requests <= 6 and m.wall < 6 * ANSWER_SEC + 120
        return
    out = json.loads(r.stdout)
    (row,) = out["rows"]
    assert row["estimator"].startswith("llm-label-") and row["xi_source"] == f"llm:{SERVED}"
    m.reconcile(out["usage"], CAPS["proposer"], 6, f"ξ {row['xi']}")


TB_BASE = ROOT / "tests" / "fixtures" / "realistic" / "tb-base"  # Terminal-Bench's python-3-13 base: tmux is there


@pytest.mark.sandbox
def test_a_terminus2_rollout_reaches_the_server_within_its_bounds(llama, sandbox, tmp_path):
    """Harbor's terminus-2 through `envevo rollout`, its model on the server (LiteLLM, `openai/` + --base-url). One
    turn, each answer capped by `llm_call_kwargs` (envevo passes Harbor's agents no output cap of its own)."""
    cap = 128
    run = tmp_path / "run"
    with _Metered(llama, "terminus-2 rollout") as m:
        r = _envevo("rollout", str(TB_BASE), "--agent", "terminus-2", "--model", SERVED, "--base-url", llama + "/v1",
                    "-k", "1", "--agent-kwarg", "max_turns=1", "--agent-kwarg", f'llm_call_kwargs={{"max_tokens": {cap}}}',
                    "--agent-kwarg", "record_terminal_session=false", "--agent-kwarg", "enable_summarize=false",
                    "--run", str(run), "--json", timeout=1500, cwd=tmp_path)
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    if m.requests == 0:
        errors = [p.read_text(errors="replace").strip().splitlines()[-1] for p in run.rglob("exception.txt")]
        pytest.skip(f"Harbor's terminus-2 did not reach the server here: {errors or r.stderr.strip()[-300:]}")
    assert r.returncode == 0, r.stderr[-3000:]
    (summary,) = json.loads(r.stdout)
    print(f"\nterminus-2 rollout: wall {m.wall:.0f} s; {m.requests} requests; server in/out {m.served_in}/{m.served_out}; "
          f"envevo {json.dumps(summary)[:500]}")
    assert m.served_out <= cap * m.requests
    assert m.wall < 1500
    if summary["n"] and summary["mean_output_tokens"] is not None:  # its tokens as envevo recorded them from Harbor
        assert summary["mean_output_tokens"] == m.served_out
    elif summary["n"]:  # the harness reported none (its episode failed): unknown, never stored as 0
        assert summary["errors"] and summary["mean_input_tokens"] is None
