"""End to end, in real sandboxes: the canonical-TB2-style seed (tests/fixtures/realistic/tb2-canonical: test-time
install of pinned pytest and pytest-json-ctrf, CTRF output, no network in the verifier phase) evolves one
generation with scripted models (pydantic-ai FunctionModel), its oracle and invalid-test verifiers in podman.

What a capable model would answer, written out per role:
- the Proposer extracts ξ (three pairs, quoted from the files), then plans a length edit: value the closing stock
  at unit prices from a new /app/data/prices.csv;
- the Reviewer accepts the plan;
- the judge fails the seed on anti_cheating_measures (its tests run in the agent's container, so a reward file can
  be forged; the red team confirms it, which is why it is off here, docs/trust.md) — the seed is judged, not
  rejected — and fails each candidate on the same criterion, which the parent already failed, so it is excused;
- the Modifier first adds the prices and the instruction's new key only; re-extracting ξ from that candidate finds
  no tested, solved fourth step, so `realizes_plan` rejects it, with feedback; the Modifier then adds the tests but
  forgets the solution, so the oracle fails and the Modifier is shown the failing test (CTRF) and test-stdout's
  tail; it adds the solution, and the third candidate is accepted.
"""

import asyncio
import hashlib
import json

import pytest

from envevo.evolve import EvolveConfig, evolve, start_lineages
from envevo.evolve.engines.llm import build_llm_engine
from envevo.llm import LLMSettings, default_rubric
from envevo.store import LineageStore
from envevo.task import load_task
from envevo.trace import Direction, Effort
from tests.conftest import FIXTURES
from tests.fakes.models import Calls, last_prompt, scripted

pytestmark = pytest.mark.sandbox

SEED = FIXTURES / "realistic" / "tb2-canonical"
STEPS = [
    ("opening stock CSV of SKUs", "read the opening stock per SKU"),
    ("JSON Lines stock movements", "apply in and out movements per SKU"),
    ("movements of SKUs not in the stock file", "count the movements that were not applied"),
]
NEW_STEP = ("unit prices per SKU in a CSV", "value the positive closing stock at unit prices")
FINAL = "a JSON stock report at /app/report.json"
GOAL = "Reconcile a warehouse's opening stock with the day's movements into a JSON report"

PRICES = "sku,unit_cents\nSKU-101,25\nSKU-102,10\nSKU-105,15\nSKU-110,1250\nSKU-117,899\nSKU-120,4599\nSKU-133,1575\nSKU-140,650\n"
STOCK_VALUE = 15 * 15 + 3 * 899 + 4 * 1575  # the SKUs whose closing stock is positive: 105, 117 and 133


def evidence(*quotes):
    return [{"file": f, "quote": q} for f, q in quotes]


def extraction(with_new_step: bool) -> dict:
    ev = [
        evidence(("instruction.md", "The warehouse's opening stock is in `/app/data/stock.csv`"),
                 ("solution/solve.sh", 'stock = {row["sku"]: int(row["on_hand"]) for row in csv.DictReader(f)}')),
        evidence(("instruction.md", "An `in` movement adds `qty` to the SKU's stock and an `out` movement subtracts it."),
                 ("tests/test_outputs.py", "def test_closing_stock_per_sku():")),
        evidence(("instruction.md", "A movement whose `sku` is not in `stock.csv` is not applied; count it instead."),
                 ("tests/test_outputs.py", "def test_unknown_movements_counted():")),
    ]
    steps = [{"scenario": s, "skill": k, "evidence": e} for (s, k), e in zip(STEPS, ev, strict=True)]
    if with_new_step:
        steps.insert(2, {"scenario": NEW_STEP[0], "skill": NEW_STEP[1], "evidence": evidence(
            ("instruction.md", "`stock_value_cents`: the sum, over the SKUs whose closing stock is positive"),
            ("tests/test_outputs.py", "def test_stock_value():"))})
    return {"goal": GOAL, "final": FINAL, "steps": steps}


def plan() -> dict:
    after = [{"scenario": s, "skill": k} for s, k in [*STEPS[:2], NEW_STEP, STEPS[2]]]
    return {
        "rationale": "Valuing the closing stock needs the reconciled quantities first and a join with a new price "
                     "list: one more dependent step, deterministic and offline.",
        "after": after, "final": FINAL,
        "changes": {"instruction": "Name /app/data/prices.csv and a new report key stock_value_cents.",
                    "environment": "Add data/prices.csv (sku, unit_cents).",
                    "tests": "Expect stock_value_cents, computed from the fixtures; the key set grows by one.",
                    "solution": "Join the closing stock with the prices and sum the positive stock's value."},
        "summary": "length: insert (unit prices per SKU, value the positive closing stock) after step 2",
    }


def plan_review() -> dict:
    return {"criteria": [{"name": c.name, "reason": "holds for this plan", "verdict": "pass"}
                         for c in default_rubric("plan").criteria], "feedback": "Accept."}


def task_review(evolved: bool) -> dict:
    rubric = default_rubric("task")
    criteria = rubric.criteria if evolved else rubric.for_seed().criteria
    reason = {"anti_cheating_measures": "tests/test.sh runs in the agent's container and writes "
                                        "/logs/verifier/reward.txt there, so an agent could forge the reward"}
    return {"criteria": [{"name": c.name, "reason": reason.get(c.name, "fine"),
                          "verdict": "fail" if c.name in reason else "pass"} for c in criteria]}


def new_instruction() -> str:
    text = (SEED / "instruction.md").read_text()
    anchor = "- `unknown_movements`: the number of movements that were not applied, an integer.\n"
    assert anchor in text
    return text.replace(anchor, anchor + (
        "- `stock_value_cents`: the sum, over the SKUs whose closing stock is positive, of the closing stock times the "
        "SKU's unit price from `/app/data/prices.csv` (columns `sku`, `unit_cents`), an integer.\n"))


def new_tests() -> str:
    text = (SEED / "tests" / "test_outputs.py").read_text()
    digest = hashlib.sha256(PRICES.encode()).hexdigest()
    text = text.replace('    "/app/data/movements.jsonl"', f'    "/app/data/prices.csv": "{digest}",\n    "/app/data/movements.jsonl"')
    text = text.replace('["negative", "stock", "unknown_movements"]', '["negative", "stock", "stock_value_cents", "unknown_movements"]')
    return text + ('\n\ndef test_stock_value():\n'
                   '    assert report()["stock_value_cents"] == EXPECTED["stock_value_cents"]\n')


def new_expected() -> str:
    expected = json.loads((SEED / "tests" / "expected.json").read_text())
    return json.dumps({**expected, "stock_value_cents": STOCK_VALUE}, indent=1, sort_keys=True)


def new_solution() -> str:
    text = (SEED / "solution" / "solve.sh").read_text()
    anchor = 'report = {"stock": stock,'
    assert anchor in text
    text = text.replace(anchor, 'with open("/app/data/prices.csv", newline="") as f:\n'
                                '    prices = {row["sku"]: int(row["unit_cents"]) for row in csv.DictReader(f)}\n'
                                'value = sum(q * prices[s] for s, q in stock.items() if q > 0)\n' + anchor)
    return text.replace('"unknown_movements": unknown}', '"unknown_movements": unknown, "stock_value_cents": value}')


def modifier_model():
    done = {"summary": "edited as planned"}
    return scripted(
        # attempt 1: the prices and the instruction only
        Calls(("list_files", {})),
        Calls(("write_file", {"path": "environment/data/prices.csv", "content": PRICES}),
              ("write_file", {"path": "instruction.md", "content": new_instruction()})),
        done,
        # attempt 2, told that the plan is not realized: the tests, but the solution is forgotten
        Calls(("write_file", {"path": "tests/expected.json", "content": new_expected()}),
              ("write_file", {"path": "tests/test_outputs.py", "content": new_tests()})),
        done,
        # attempt 3, told which test failed and what test-stdout said: the solution
        Calls(("write_file", {"path": "solution/solve.sh", "content": new_solution()})),
        done, name="modifier")


def test_a_tb2_style_seed_is_judged_not_rejected_and_a_candidate_must_realize_its_plan(sandbox, tmp_path):
    proposer = scripted(extraction(False), plan(), extraction(False), extraction(True), extraction(True), name="proposer")
    judge = scripted(task_review(False), task_review(True), task_review(True), task_review(True), name="judge")
    reviewer = scripted(plan_review(), name="reviewer")
    modifier = modifier_model()
    models = {"proposer": proposer, "reviewer": reviewer, "modifier": modifier, "judge": judge}
    engine, checks = build_llm_engine(LLMSettings(output_retries=1), env=sandbox, models=models, container_shell=False)
    store = LineageStore.open(tmp_path / "run")
    engine.attach_store(store)
    cfg = EvolveConfig(engine="llm", generations=1, seed=1, repeats=1, trial_concurrency=2, env=sandbox, red_team="off",
                       directions=[Direction.LENGTH], effort=Effort.LOW, plan_budget=1, env_budget=3)
    events = []

    async def main():
        lids = await start_lineages(store, [("tb2-canonical", load_task(SEED))], engine, cfg, checks=checks,
                                    on_event=events.append)
        assert lids == ["tb2-canonical"], store.lineage("tb2-canonical").reason
        return await evolve(store, lids, engine, cfg, checks=checks, on_event=events.append)

    statuses = asyncio.run(main())
    assert statuses == {"tb2-canonical": "done"}, store.lineage("tb2-canonical").reason

    # The seed is judged, and its failed critical criterion is recorded and shown, but it does not gate the seed.
    (judged,) = [e for e in events if e.stage == "judged"]
    assert "does not gate it: fail: anti_cheating_measures (critical)" in judged.detail
    seed_verdict = json.loads((store.run_dir / "work" / "seeds" / "tb2-canonical" / "verdict.json").read_text())
    assert {k: r["passed"] for k, r in seed_verdict["reports"].items()} == {
        "oracle": True, "invalid_test": True, "mutation": True, "rubric": False, "realizes_plan": True}
    assert store.version("tb2-canonical", 0).verified

    first, middle, last = store.candidates("tb2-canonical", 1)
    # The first candidate passes the containers and the judge, but its re-extracted ξ lacks the planned step.
    reports = {r.verifier: r for r in store.verifications(first.id)}
    assert {k: r.passed for k, r in reports.items()} == {"oracle": True, "invalid_test": True, "mutation": True,
                                                        "rubric": True, "realizes_plan": False, "drift": True}
    assert not first.accepted
    assert any(r.startswith("realizes_plan: the candidate does not realize its plan") for r in first.reasons)
    # ... and the Modifier is told so on its second attempt.
    second_attempt = last_prompt(modifier.seen[3])
    assert "does not realize its plan" in second_attempt and NEW_STEP[1] in second_attempt
    # The middle candidate tests the new key but its solution does not write it: the oracle fails, and the Modifier's
    # next prompt carries the failing test from /logs/verifier/ctrf.json and the tail of test-stdout, not a host path.
    reports = {r.verifier: r for r in store.verifications(middle.id)}
    assert not middle.accepted and not reports["oracle"].passed and reports["invalid_test"].passed
    third_attempt = last_prompt(modifier.seen[5])
    assert "failing tests (ctrf.json):" in third_attempt and "test_stock_value" in third_attempt
    assert "lines of test-stdout:" in third_attempt and "stock_value_cents" in third_attempt

    # The last candidate realizes the plan; the judge excused the flaw the seed came with.
    assert last.accepted
    reports = {r.verifier: r for r in store.verifications(last.id)}
    assert all(r.passed for r in reports.values()), {k: r.reasons for k, r in reports.items()}
    v1 = store.version("tb2-canonical", 1)
    assert v1.verified and v1.L == 4 and v1.trace.steps[2].skill == NEW_STEP[1]
    assert {"instruction", "environment", "verification", "solution"} <= set(v1.mutated)
    task = store.load_version_task(v1.task_hash)
    assert "def test_stock_value" in task.read_text("tests/test_outputs.py")
    # The judge saw the parent, the plan and the diff.
    judged_candidate = last_prompt(judge.seen[2])
    assert "ξ′ the plan targets:" in judged_candidate and "+def test_stock_value():" in judged_candidate
    assert "The parent already fails these criteria" in judged_candidate and "- anti_cheating_measures: " in judged_candidate
    assert proposer.queue == [] and judge.queue == [] and modifier.queue == []
    store.close()
