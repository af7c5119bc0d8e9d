"""The llm p_T estimator against a local fake OpenAI-compatible server (tests/fakes/completions_server.py).

The fake's toy model gives a whitespace-led token logprob −0.5 when the word is common and −5.0 otherwise, so
every expected figure below is exact.
"""

from __future__ import annotations

import json
import math
import socket
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from envevo.catalog import random_chain
from envevo.cli.difficulty_cmd import difficulty as difficulty_cmd
from envevo.errors import UserError
from envevo.evolve.engines.procedural import write_task
from envevo.llm import LLMPrior
from envevo.llm._reference_prior import _parse_probability
from envevo.trace import Step, Trace, difficulty
from envevo.trace._estimators import estimator
from tests.fakes.completions_server import COMMON, FakeCompletions

app = typer.Typer()
app.command()(difficulty_cmd)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # no envevo.toml around
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def _toy_cost(label: str) -> float:
    """What the fake charges for a label: 0.5 per common word, 5 per other word."""
    return sum(0.5 if w.lower() in COMMON else 5.0 for w in label.replace("_", " ").split())


def test_logprobs_sum_only_the_label_tokens(tmp_path: Path) -> None:
    with FakeCompletions() as server:
        p = LLMPrior(model="toy", base_url=server.url, cache=tmp_path / "c.json")
        assert p.method == "logprobs" and p.name == "llm-logprobs-v1:toy" and p.notes == []
        assert p.neg_log_p_scenario("csv file", "Goal with many rare words") == pytest.approx(1.0)
        assert p.neg_log_p_scenario("kerberos keytab", "g") == pytest.approx(10.0)
        assert p.neg_log_p_skill("grep", "kerberos keytab", "g") == pytest.approx(0.5)
        assert p.neg_log_p_scenario("passwd_file", "g") == pytest.approx(5.5)  # read as "passwd file"
        paths = server.paths()
        assert paths == ["/completions"] * 5  # the probe, then one request per score
        _, req = server.requests[-1]
        assert req["echo"] is True and req["logprobs"] == 1 and req["max_tokens"] == 0
        assert req["prompt"] == "Goal: g\nThe agent works in the scenario: passwd file"
        _, skill_req = server.requests[3]
        assert skill_req["prompt"].endswith("scenario: kerberos keytab\nThere it applies the skill: grep")


def test_scores_are_cached_for_reruns(tmp_path: Path) -> None:
    cache = tmp_path / "c.json"
    with FakeCompletions() as server:
        first = LLMPrior(model="toy", base_url=server.url, cache=cache)
        a = first.neg_log_p_skill("sort", "a log directory", "count lines")
        n = len(server.requests)
        again = LLMPrior(model="toy", base_url=server.url, cache=cache)
        assert again.method == "logprobs"
        assert again.neg_log_p_skill("sort", "a log directory", "count lines") == a
        assert len(server.requests) == n  # neither a probe nor a score was asked again
    data = json.loads(cache.read_text())
    assert data["model"] == "toy" and data["method"] == "logprobs" and len(data["scores"]) == 1


def test_servers_that_need_one_generated_token(tmp_path: Path) -> None:
    with FakeCompletions(zero_max_tokens=False) as server:
        p = LLMPrior(model="toy", base_url=server.url, cache=tmp_path / "c.json")
        assert p.method == "logprobs"
        assert p.neg_log_p_scenario("csv file", "g") == pytest.approx(1.0)  # the generated " ok" is not counted
        assert server.requests[-1][1]["max_tokens"] == 1


def test_judgement_fallback_without_echo(tmp_path: Path) -> None:
    with FakeCompletions(echo=False, judgement='Sure. {"p": 0.25}') as server:
        p = LLMPrior(model="chat-only", base_url=server.url, cache=tmp_path / "c.json")
        assert p.method == "judgement" and p.name == "llm-judgement-v1:chat-only"
        assert "no prompt logprobs" in p.notes[0]
        assert p.neg_log_p_skill("a SQL join", "a SQLite database", "reconcile stock") == pytest.approx(-math.log(0.25))
        _, req = server.requests[-1]
        assert server.paths()[-1] == "/chat/completions" and req["temperature"] == 0
        assert '"a SQL join"' in req["messages"][-1]["content"] and "a SQLite database" in req["messages"][-1]["content"]
    # A forced method skips the probe.
    with FakeCompletions(judgement='{"p": 1}') as server:
        p = LLMPrior(model="toy", base_url=server.url, method="judgement", cache=tmp_path / "d.json")
        assert p.neg_log_p_scenario("x", "g") == 0.0 and server.paths() == ["/chat/completions"]


def test_judgement_that_is_not_a_probability(tmp_path: Path) -> None:
    with FakeCompletions(echo=False, judgement="I cannot say.") as server:
        p = LLMPrior(model="toy", base_url=server.url, cache=tmp_path / "c.json")
        with pytest.raises(UserError, match="gave no probability"):
            p.neg_log_p_scenario("x", "g")
        assert server.paths().count("/chat/completions") == 2  # asked once more before giving up


def test_parse_probability() -> None:
    assert _parse_probability('{"p": 0.3}') == 0.3
    assert _parse_probability('<think>maybe 0.9</think>{"p": 1e-3}') == 0.001
    assert _parse_probability("p is about 0.2") == 0.2
    assert _parse_probability('{"p": 2}') is None and _parse_probability('{"p": 0}') is None
    assert _parse_probability("none") is None


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unreachable_endpoint_is_one_line(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(UserError, match="cannot reach the llm estimator's endpoint"):
        LLMPrior(model="toy", base_url=url, cache=tmp_path / "c.json")
    target = write_task(random_chain(None, 2, 3), tmp_path / "t")
    res = CliRunner().invoke(app, [str(target), "--estimator", "llm", "--reference-model", "toy", "--base-url", url])
    assert res.exit_code == 2 and "cannot reach" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(app, [str(target), "--reference-model", "toy", "--llm-method", "logprobs"])
    assert res.exit_code == 2 and "--llm-method and --reference-model do not apply to --estimator catalog" in res.output


def test_a_failing_server_is_an_error_not_a_method_switch(tmp_path: Path) -> None:
    with FakeCompletions(fail_status=503) as server:
        with pytest.raises(UserError, match=r"kept failing \(503\)"):
            LLMPrior(model="toy", base_url=server.url, cache=tmp_path / "c.json", max_retries=2)
        assert server.paths() == ["/completions"] * 3  # the first try and two retries, no chat fallback
    assert not (tmp_path / "c.json").exists()


def test_estimator_registry_and_missing_model() -> None:
    with pytest.raises(UserError, match="needs a reference model"):
        estimator("llm")
    with pytest.raises(UserError, match="not an OpenAI-compatible model"):
        estimator("llm", model="anthropic:claude-sonnet-4-5")
    with pytest.raises(UserError, match="unknown llm estimator method"):
        estimator("llm", model="toy", base_url="http://127.0.0.1:9/v1", method="vibes")


def test_d_t_and_cli_json_under_the_llm_estimator(tmp_path: Path) -> None:
    chain = random_chain(None, 3, 11)
    target = write_task(chain, tmp_path / "t")
    trace = chain.trace()
    with FakeCompletions() as server:
        p = estimator("llm", model="toy", base_url=server.url)
        d = difficulty(trace, p)
        assert d.L == 3 and d.estimator == "llm-logprobs-v1:toy"
        assert d.scenario_novelty == pytest.approx(sum(_toy_cost(s.scenario) for s in trace.steps))
        assert d.skill_rarity == pytest.approx(sum(_toy_cost(s.skill) for s in trace.steps))
        res = CliRunner().invoke(app, [str(target), "--json", "--estimator", "llm", "--reference-model", "toy",
                                       "--base-url", server.url])
        assert res.exit_code == 0, res.output
        data = json.loads(res.stdout)
        assert data["estimator"] == "llm-logprobs-v1:toy" and data["rows"][0]["D_T"] == pytest.approx(d.D_T)
        longer = Trace(goal=trace.goal, steps=(*trace.steps, Step(scenario="kerberos keytab", skill="grep")))
        assert difficulty(longer, p).D_T == pytest.approx(d.D_T + 10.5)


def test_every_answer_is_metered_as_the_estimators_usage(tmp_path: Path) -> None:
    """The estimator's tokens are counted like the LLM roles' (issue 25): the server's usage when it sends one, else
    an estimate flagged as such; `difficulty` shows them, in --json and in the table."""
    with FakeCompletions(usage=True) as server:
        p = LLMPrior(model="toy", base_url=server.url, cache=tmp_path / "c.json")
        p.neg_log_p_scenario("csv file", "count lines")
        sent = [len(b["prompt"].split()) for _, b in server.requests]
    assert [(r.role, r.model, r.input_tokens, r.output_tokens, r.estimated) for r in p.meter.records] == [
        ("estimator", "openai:toy", n, 0, False) for n in sent]  # the probe, then the score
    with FakeCompletions(echo=False) as server:  # a chat server that reports no usage
        p = LLMPrior(model="toy", base_url=server.url, method="judgement", cache=tmp_path / "j.json")
        p.neg_log_p_scenario("csv file", "count lines")
    (rec,) = p.meter.records
    assert rec.estimated and rec.input_tokens > 20 and rec.output_tokens > 0
    target = write_task(random_chain(None, 2, 5), tmp_path / "t")
    with FakeCompletions(usage=True) as server:
        as_json = CliRunner().invoke(app, [str(target), "--estimator", "llm", "--reference-model", "toy",
                                           "--base-url", server.url, "--json"])
        asked = len(server.requests)
    assert as_json.exit_code == 0, as_json.output
    (used,) = json.loads(as_json.stdout)["usage"]
    assert used["role"] == "estimator" and used["input_tokens"] > 0 and used["calls"] == asked
    with FakeCompletions(usage=True) as server:  # another endpoint: nothing cached
        as_table = CliRunner().invoke(app, [str(target), "--estimator", "llm", "--reference-model", "toy",
                                            "--base-url", server.url], env={"COLUMNS": "200"})
    assert "LLM usage" in as_table.stdout and "estimator" in as_table.stdout
