"""Model-written mutants (issue 26): near misses a model writes from the plan, each checked on the host (no bash runs
there) to be a real variant, then run like every other mutant. The model is scripted (tests/fakes), no network."""

from __future__ import annotations

import asyncio
from pathlib import Path

from envevo.llm import LLMRuntime, LLMSettings, ModelMutantWriter
from envevo.task import load_task, save
from envevo.verify import MutationVerifier, WrittenMutant, model_mutants, shell_problem, verify_tasks
from tests.conftest import FIXTURES
from tests.fakes.models import last_prompt, scripted
from tests.verify.test_mutant_reuse import RecordingRuntime

SOLVE = """#!/bin/bash
set -e
cd /app
# step 1: keep the errors
grep ERROR app.log > errors.txt
# step 2: count them
wc -l < errors.txt > count.txt
"""
WRONG_STEP1 = SOLVE.replace("grep ERROR", "grep -i error")
COPY = "#!/bin/bash\n# a copy, reformatted\nset -e\ncd   /app\ngrep ERROR app.log > errors.txt   # same\n\nwc -l < errors.txt > count.txt\n"
NOT_BASH = SOLVE.replace("wc -l < errors.txt", 'wc -l "< errors.txt')


def written(step: int, script: str, mistake: str = "a loose pattern") -> dict:
    return {"step": step, "mistake": mistake, "script": script}


def test_a_copy_a_non_script_and_a_duplicate_are_rejected_and_a_real_variant_kept() -> None:
    answers = [WrittenMutant(**w) for w in (written(1, WRONG_STEP1), written(1, COPY), written(2, NOT_BASH),
                                            written(1, WRONG_STEP1 + "\n# again\n"))]
    kept, rejected = model_mutants(SOLVE, answers, [])
    assert [(m.id, m.kind, m.step) for m in kept] == [("model-1", "model", 1)]
    assert kept[0].script == WRONG_STEP1 and "grep -i error" in kept[0].diff and "loose pattern" in kept[0].label
    assert ["copy of solve.sh" in rejected[0], "not bash: a \" quote is never closed" in rejected[1],
            "the same as model-1" in rejected[2]] == [True, True, True]
    assert shell_problem("if true; then\n  echo a\n") == "a compound command never reaches its fi"
    assert shell_problem("cat > f <<'EOF'\nx\nEOF\n") is None


def _runtime(*steps) -> tuple[LLMRuntime, object]:
    model = scripted(*steps, name="mutant-writer")
    runtime = LLMRuntime(LLMSettings(output_retries=1), models={"judge": model})
    return runtime, model


def _task(tmp_path: Path) -> Path:
    task = load_task(FIXTURES / "hackable" / "peeking")
    task.write("solution/solve.sh", SOLVE, executable=True)
    return save(task, tmp_path / "task")


def test_the_writer_asks_the_judges_model_metered_as_mutant(tmp_path: Path) -> None:
    runtime, model = _runtime({"mutants": [written(1, WRONG_STEP1), written(2, COPY)]})
    task = load_task(_task(tmp_path))
    out, error = asyncio.run(ModelMutantWriter(runtime).write(task, 3))
    assert error is None and [w.script for w in out] == [WRONG_STEP1, COPY]
    prompt = last_prompt(model.seen[0])  # type: ignore[attr-defined]
    assert "grep ERROR app.log" in prompt and task.instruction.strip()[:40] in prompt
    assert {r.role for r in runtime.meter.records} == {"mutant"}


def test_a_model_that_answers_nothing_usable_is_a_note_not_a_failure(tmp_path: Path) -> None:
    runtime, _ = _runtime("I will not do that.", "Still no.")
    out, error = asyncio.run(ModelMutantWriter(runtime).write(load_task(_task(tmp_path)), 3))
    assert out == [] and error


def test_the_verifier_runs_the_models_real_variants_in_the_sandbox_and_names_a_survivor(tmp_path: Path,
                                                                                         monkeypatch) -> None:
    task_dir = _task(tmp_path)
    runtime, _ = _runtime({"mutants": [written(1, WRONG_STEP1), written(2, COPY)]})

    class Survives(RecordingRuntime):  # this task's tests cannot tell the loose pattern: every mutant scores 1
        async def __call__(self, specs, **kw):
            outs = []
            for s in specs:
                self.trials.append(s.trial_name or "")
                d = s.trials_dir / (s.trial_name or "t")
                (d / "verifier").mkdir(parents=True, exist_ok=True)
                (d / "verifier" / "test-stdout.txt").write_text("1 passed\n")
                from envevo.runtime import TrialOutcome

                outs.append(TrialOutcome(task="t", agent=s.agent, reward=1.0, trial_dir=d))
            return outs

    fake = Survives()
    monkeypatch.setattr("envevo.runtime.run_trials", fake)
    v = MutationVerifier(writer=ModelMutantWriter(runtime))
    (verdict,) = asyncio.run(verify_tasks([("t", task_dir)], tmp_path / "trials", verifiers=[v]))
    rep = verdict.reports["mutation"]
    assert "model-1" in fake.mutants()  # the kept variant ran as a trial, beside the prefix mutants
    assert rep.metrics["source"] == "prefix+model" and not rep.passed
    [reason] = [r for r in rep.reasons if r.startswith("model-1:")]
    assert "survived" in reason and "grep -i error" in reason and "strengthen the tests" in reason
    assert any("model mutant 2 (step 2) rejected: a copy of solve.sh" in n for n in rep.notes)


def test_the_writer_bills_the_lineage_that_made_the_task_and_stops_at_its_cap(tmp_path: Path) -> None:
    runtime, model = _runtime({"mutants": [written(1, WRONG_STEP1)]})
    runtime.meter.max_tokens = 50_000
    runtime.owner = lambda _hash: ("lin", 3)
    task = load_task(_task(tmp_path))
    out, error = asyncio.run(ModelMutantWriter(runtime).write(task, 1))
    assert error is None and len(out) == 1
    (rec,) = runtime.meter.records
    assert (rec.role, rec.lineage, rec.generation) == ("mutant", "lin", 3)

    runtime.meter.preload("lin", 50_000, 0.0)  # that lineage's budget is spent: the model is not asked
    out, error = asyncio.run(ModelMutantWriter(runtime).write(task, 1))
    assert out == [] and error and "--max-tokens" in error and len(model.seen) == 1  # type: ignore[attr-defined]
