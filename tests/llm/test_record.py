"""Record and replay: `--record DIR` saves every model exchange of a run; `--replay DIR` runs it again offline.

The shipped recording, tests/fixtures/replays/python-slim/, was made with the fake OpenAI server (streaming, the
real OpenAI client) on the realistic fixture seed tests/fixtures/realistic/python-slim: a length generation that
adds per-customer paid-order counts. The scripted answers are below (`script`); after a deliberate change of a
prompt, rubric or output schema the replay diverges and says so; re-record it with

    PYTHONPATH=. python -m tests.llm.test_record

No containers: the loop's container verifiers are off, the rubric judge runs (as in test_llm_wire.py).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from pydantic_ai.models import override_allow_model_requests

from envevo.evolve import EvolveConfig, evolve, start_lineages
from envevo.evolve.engines.llm import build_llm_engine
from envevo.llm import LLMConfigError, LLMSettings
from envevo.llm._replay import ReplayDiverged
from envevo.store import LineageStore
from envevo.task import load_task
from envevo.trace import Direction
from tests.fakes import log_forensics as lf
from tests.fakes.openai_server import FakeOpenAI, Script, final, tool_calls

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "tests" / "fixtures" / "realistic" / "python-slim"
SHIPPED = ROOT / "tests" / "fixtures" / "replays" / "python-slim"
NAME = "python-slim"

STEPS = [("JSON-lines order records in /app/orders.jsonl", "filter orders by paid status"),
         ("the paid orders of each customer", "sum decimal amounts per customer, rounded to 2 places")]
NEW_STEP = ("the same paid orders, counted", "count paid orders per customer into a second JSON file")
GOAL = "Total each customer's paid orders from a JSON-lines file"
FINAL = "a JSON object of per-customer totals at /app/totals.json"


def paid_counts() -> dict[str, int]:
    orders = [json.loads(line) for line in (SEED / "environment" / "orders.jsonl").read_text().splitlines()]
    return dict(sorted(Counter(o["customer"] for o in orders if o["status"] == "paid").items()))


def extraction() -> dict:
    evidence = [[{"file": "instruction.md", "quote": "whose status is `paid`"},
                 {"file": "solution/solve.sh", "quote": 'if o["status"] == "paid":'}],
                [{"file": "instruction.md", "quote": "rounded to 2 decimals"},
                 {"file": "solution/solve.sh", "quote": "float(round(v, 2))"}]]
    return {"goal": GOAL, "final": FINAL,
            "steps": [{"scenario": s, "skill": k, "evidence": ev} for (s, k), ev in zip(STEPS, evidence, strict=True)]}


def candidate_extraction() -> dict:
    """ξ re-extracted from the accepted candidate (realizes_plan): ξ′, the new pair backed by the candidate's files."""
    out = extraction()
    out["steps"].append({"scenario": NEW_STEP[0], "skill": NEW_STEP[1], "evidence": [
        {"file": "instruction.md", "quote": "Also write `/app/counts.json`"},
        {"file": "solution/solve.sh", "quote": 'counts[o["customer"]] = counts.get(o["customer"], 0) + 1'}]})
    return out


def plan() -> dict:
    return {
        "rationale": "A third step on the same filtered orders: the solver must also count them per customer and "
                     "write a second file, so the chain gains one dependent pair; deterministic and offline.",
        "after": [{"scenario": s, "skill": k} for s, k in [*STEPS, NEW_STEP]],
        "final": FINAL,
        "changes": {
            "instruction": "Also write /app/counts.json: each customer with a paid order mapped to the number of "
                           "their paid orders, as integers.",
            "environment": "unchanged",
            "tests": "A test reads /app/counts.json and compares it with the exact expected counts.",
            "solution": "Count paid orders per customer while summing, and dump the counts to /app/counts.json.",
        },
        "summary": "length: insert (paid orders, count per customer) after step 2",
    }


def new_files() -> dict[str, str]:
    instruction = (SEED / "instruction.md").read_text().rstrip("\n") + (
        " Also write `/app/counts.json`: an object mapping each of those customers to the number of their orders "
        "whose status is `paid`, as integers.\n")
    solution = (SEED / "solution" / "solve.sh").read_text()
    solution = solution.replace("totals = {}\n", "totals = {}\ncounts = {}\n").replace(
        '        totals[o["customer"]] = totals.get(o["customer"], Decimal(0)) + Decimal(o["amount"])\n',
        '        totals[o["customer"]] = totals.get(o["customer"], Decimal(0)) + Decimal(o["amount"])\n'
        '        counts[o["customer"]] = counts.get(o["customer"], 0) + 1\n').replace(
        "PY", 'json.dump(counts, open("/app/counts.json", "w"))\nPY')
    tests = (SEED / "tests" / "test_outputs.py").read_text().replace(
        '\n\nif __name__ == "__main__":',
        f'\n\n    def test_counts(self):\n        self.assertEqual(json.loads(Path("/app/counts.json").read_text()), '
        f'{paid_counts()!r})\n\n\nif __name__ == "__main__":')
    assert "counts" in solution and "test_counts" in tests
    return {"instruction.md": instruction, "solution/solve.sh": solution, "tests/test_outputs.py": tests}


def script() -> Script:
    files = new_files()
    return Script(**{
        "proposer-extract": [final(extraction()), final(candidate_extraction())],  # the seed, then the candidate
        "judge": [final(lf.task_review()), final(lf.task_review(evolved=True))],  # the seed, then the candidate
        "proposer-plan": [final(plan())],
        "reviewer": [final(lf.plan_review(accept=True))],
        "modifier": [tool_calls(("list_files", {})),
                     tool_calls(("read_file", {"path": "solution/solve.sh"}), ("read_file", {"path": "tests/test_outputs.py"})),
                     *[tool_calls(("write_file", {"path": p, "content": c})) for p, c in files.items()],
                     final({"summary": "counts.json: solution writes it, a test checks it, the instruction asks for it"})],
    })


def run_once(tmp_path: Path, settings: LLMSettings) -> tuple[LineageStore, str | None]:
    engine, checks = build_llm_engine(settings, container_shell=False)
    store = LineageStore.open(tmp_path / "run")
    engine.attach_store(store)
    cfg = EvolveConfig(engine="llm", generations=1, seed=3, plan_budget=2, env_budget=2, repeats=1,
                       directions=[Direction.LENGTH])

    async def main():
        await engine.preflight()
        lids = await start_lineages(store, [(NAME, load_task(SEED))], engine, cfg, checks=checks, verifiers=[])
        return await evolve(store, lids, engine, cfg, checks=checks, verifiers=[])

    statuses = asyncio.run(main())
    return store, statuses.get(NAME)


def record(directory: Path, tmp_path: Path) -> None:
    """Run the scripted generation against the fake server with --record semantics into `directory`."""
    shutil.rmtree(directory, ignore_errors=True)
    s = script()
    with FakeOpenAI(s) as server, override_allow_model_requests(True):
        store, status = run_once(tmp_path, LLMSettings(model="openai:fake-model", base_url=server.url,
                                                       timeout_sec=10.0, retry_budget_sec=5.0, record_dir=directory))
    assert status == "done", store.lineage(NAME).reason
    assert s.remaining() == {}
    store.close()


def check_result(store: LineageStore, status: str | None) -> None:
    assert status == "done", store.lineage(NAME).reason
    v1 = store.version(NAME, 1)
    assert v1.direction == "length" and v1.L == 3 and v1.verified
    assert v1.trace.steps[2].scenario == NEW_STEP[0]
    task = store.load_version_task(v1.task_hash)
    assert "/app/counts.json" in task.read_text("instruction.md")
    assert repr(paid_counts()) in task.read_text("tests/test_outputs.py")
    assert {t.role for t in store.usage_totals(NAME)} == {"proposer", "reviewer", "modifier", "judge"}


def test_the_shipped_replay_runs_offline_and_reproduces_the_generation(tmp_path):
    # Real requests stay forbidden (pydantic_ai.models.ALLOW_MODEL_REQUESTS is False in the suite), and no
    # server is up: every answer comes from the recording.
    store, status = run_once(tmp_path, LLMSettings(replay_dir=SHIPPED))
    check_result(store, status)
    store.close()


def test_record_then_replay_gives_the_same_run(tmp_path):
    rec = tmp_path / "rec"
    record(rec, tmp_path / "a")
    lines = [json.loads(x) for x in (rec / "exchanges.jsonl").read_text().splitlines()]
    assert Counter(e["role"] for e in lines) == {"proposer": 3, "reviewer": 1, "modifier": 6, "judge": 2}
    assert {e["lineage"] for e in lines if e["role"] == "modifier"} == {NAME}
    assert all(e["response"]["parts"] and e["request"] for e in lines)
    store, status = run_once(tmp_path / "b", LLMSettings(replay_dir=rec))
    check_result(store, status)
    store.close()


def test_a_run_that_diverges_from_its_recording_stops_with_one_line(tmp_path):
    rec = tmp_path / "rec"
    rec.mkdir()
    lines = (SHIPPED / "exchanges.jsonl").read_text().splitlines()
    (rec / "exchanges.jsonl").write_text("\n".join(x for x in lines if json.loads(x)["role"] != "reviewer") + "\n")
    with pytest.raises(ReplayDiverged, match=r"no more exchanges for the reviewer \(lineage python-slim generation 1\)"):
        run_once(tmp_path, LLMSettings(replay_dir=rec))
    with pytest.raises(LLMConfigError, match="no exchanges.jsonl there"):
        run_once(tmp_path / "x", LLMSettings(replay_dir=tmp_path / "nothing"))


@pytest.mark.sandbox
def test_envevo_evolve_replay_runs_the_recording_with_the_real_verifiers(tmp_path):
    """`envevo evolve --replay DIR` as a user runs it: no server, no key; the seed and the replayed candidate go
    through the oracle and invalid-test verifiers in containers, so the recorded edits must really work."""
    from tests.conftest import run_cli

    out = tmp_path / "run"
    r = run_cli("evolve", str(SEED), "--run", str(out), "--engine", "llm", "--replay", str(SHIPPED), "--generations",
                "1", "--seed", "3", "--directions", "length", "--plan-budget", "2", "--env-budget", "2",
                "--red-team", "off", "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    store = LineageStore.open(out, create=False)
    check_result(store, store.lineage(NAME).status)
    store.close()


if __name__ == "__main__":  # re-record the shipped replay
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        record(SHIPPED, Path(tmp))
    print(f"recorded {SHIPPED}")
