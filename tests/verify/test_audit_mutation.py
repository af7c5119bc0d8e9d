"""`envevo audit` runs the mutation verifier: each record gives the task's mutation score and its surviving mutants
by name, the summary counts the tasks with a survivor, and a record from before (no mutation entry) still loads."""

import json
import time

import pytest

from envevo.cli.audit_cmd import RESULTS, load_results, mutation_cell, summarize
from envevo.task import load_task
from envevo.verify import Verdict, VerifierReport, audit_record, failure_classes, record_reasons
from tests.conftest import FIXTURES, ROOT, run_cli

SKIPS_STEP = FIXTURES / "mutation" / "skips-step"
SEEDS = ROOT / "examples" / "seeds"
SURVIVED = ("prefix-3of4: survived: solve.sh cut after command 3 of 4 scored 1.0, not 0: the tests cannot tell it from "
            "the solution; the tests must check what the rest of solve.sh does (logs: /t/x)\n  diff:\n  | …")


def _verdict(mutation: VerifierReport | None) -> Verdict:
    reports = {"oracle": VerifierReport(name="oracle", passed=True),
               "invalid_test": VerifierReport(name="invalid_test", passed=True)}
    if mutation is not None:
        reports["mutation"] = mutation
    ok = all(r.passed for r in reports.values())
    return Verdict(task="skips-step", task_dir=SKIPS_STEP, ok=ok, reports=reports)


def _mutation(killed: int, survived: list[str], inconclusive: int = 0) -> VerifierReport:
    reasons = [SURVIVED.replace("prefix-3of4", m) for m in survived]
    reasons += [f"prefix-{k}of9: inconclusive: solve.sh cut …: the mutant never ran to the tests" for k in range(inconclusive)]
    run = killed + len(survived) + inconclusive
    return VerifierReport(name="mutation", passed=not reasons, inconclusive=bool(inconclusive) and not survived,
                          reasons=reasons, metrics={"source": "prefix", "mutants": run, "run": run, "killed": killed,
                                                    "survived": len(survived), "inconclusive": inconclusive})


def test_a_record_gives_the_mutation_score_and_names_the_survivors(tmp_path):
    rec = audit_record(load_task(SKIPS_STEP), _verdict(_mutation(1, ["prefix-3of4"])))
    assert rec["mutation"] == {"score": "1/2", "killed": 1, "survived": ["prefix-3of4"], "inconclusive": 0, "run": 2,
                               "mutants": 2, "source": "prefix", "equivalent": []}
    assert rec["broken_by"] == ["mutant:prefix"] and not rec["hackable"] and rec["status"] == "fail"
    assert any(r.startswith("mutation: prefix-3of4: survived") for r in record_reasons(rec))
    assert mutation_cell(rec) == "1/2 (survived: prefix-3of4)"
    (tmp_path / RESULTS).write_text(json.dumps(rec, default=str) + "\n")
    assert load_results(tmp_path / RESULTS)[rec["hash"]]["mutation"]["survived"] == ["prefix-3of4"]


def test_killed_none_and_inconclusive_mutants():
    task = load_task(SKIPS_STEP)
    clean = audit_record(task, _verdict(_mutation(4, [])))
    assert clean["mutation"]["score"] == "4/4" and clean["broken_by"] == [] and mutation_cell(clean) == "4/4"
    none = audit_record(task, _verdict(VerifierReport(name="mutation", passed=True, metrics={"source": "no mutants: …",
                                                      "run": 0, "killed": 0, "survived": 0, "inconclusive": 0})))
    assert none["mutation"]["score"] is None and mutation_cell(none) == "no mutants"
    unsure = _verdict(_mutation(1, [], inconclusive=1))
    assert failure_classes(unsure.summary()) == ["mutation:inconclusive"]
    assert mutation_cell(audit_record(task, unsure)) == "1/1 (1 inconclusive)"
    wrong = _verdict(_mutation(2, ["step2-wrong", "step3-wrong", "step1-skip"]))
    assert failure_classes(wrong.summary()) == ["mutant:wrong", "mutant:skip"]
    off = audit_record(task, _verdict(None))  # --mutation off
    assert off["mutation"] is None and mutation_cell(off) == "-"


def test_a_record_from_before_the_mutation_verifier_still_loads(tmp_path):
    old = {"hash": "a" * 64, "task": "old", "source": None, "status": "ok", "ok": True, "broken_by": [],
           "hackable": False, "audited_at": "2026-12-01T10:00:00+00:00",
           "verdict": {"oracle": {"passed": True, "inconclusive": False, "reasons": [], "notes": [], "runs": []}}}
    (tmp_path / RESULTS).write_text(json.dumps(old) + "\n")
    (rec,) = load_results(tmp_path / RESULTS).values()
    assert mutation_cell(rec) == "-" and record_reasons(rec) == []
    s = summarize([rec])
    assert s["mutation_scored"] == 0 and s["mutant_survived"] == 0 and s["mutation_score"] is None


def test_summary_counts_tasks_with_a_surviving_mutant():
    task = load_task(SKIPS_STEP)
    recs = [audit_record(task, _verdict(m)) for m in (_mutation(1, ["prefix-3of4"]), _mutation(4, []),
                                                       _mutation(0, ["prefix-1of3", "prefix-2of3"]), None)]
    recs.append({"status": "ok", "broken_by": [], "hackable": False})  # an old record: no mutation entry
    s = summarize(recs)
    assert s["tasks"] == 5 and s["mutation_scored"] == 3 and s["mutant_survived"] == 2
    assert s["mutation_score"] == "5/8"  # killed 1 + 4 + 0 of 2 + 4 + 2 judged
    assert s["failure_classes"] == {"mutant:prefix": 2} and s["hackable"] == 0


def test_bad_mutation_setting_is_one_line(tmp_path):
    proc = run_cli("audit", str(SKIPS_STEP), "--out", str(tmp_path), "--mutation", "sometimes")
    assert proc.returncode == 2 and "--mutation 'sometimes': use on, strict, off or sample:N" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / RESULTS).exists()


def test_the_default_is_the_one_verify_uses():
    import typer

    from envevo.cli.main import app
    from envevo.evolve import EvolveConfig

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    default = {name: next(p.default for p in commands[name].params if "--mutation" in getattr(p, "opts", []))
               for name in ("audit", "verify")}
    assert default == {"audit": EvolveConfig().mutation, "verify": EvolveConfig().mutation}


@pytest.mark.sandbox
def test_audit_names_the_surviving_mutant_and_resumes_old_records(sandbox, tmp_path):
    # The tests check only top_ips.txt: solve.sh cut before its last command (status_counts.json) still passes;
    # cut before top_ips.txt it fails. The red team is off: this fixture's tests run in the agent's container.
    t0 = time.monotonic()
    proc = run_cli("audit", str(SKIPS_STEP), "--out", str(tmp_path), "--red-team", "off", "--json")
    assert proc.returncode == 4, proc.stderr  # weak: a task envevo did not write, whose tests miss a near miss
    data = json.loads(proc.stdout)
    (task,) = data["tasks"]
    assert task["mutation"]["survived"] == ["prefix-3of4"] and task["mutation"]["score"] == "1/2", task
    assert task["broken_by"] == ["mutant:prefix"] and task["status"] == "weak"
    assert any(r.startswith("mutation: prefix-3of4: survived") and "differs from the solution's at: "
               "/app/report/status_counts.json (not written)" in r for r in task["reasons"]), task["reasons"]
    assert data["summary"]["mutant_survived"] == 1 and data["summary"]["failure_classes"] == {"mutant:prefix": 1}
    print(f"audit of skips-step: {time.monotonic() - t0:.0f} s")
    # The table names it too; a record written before the audit ran the mutation verifier resumes as it is.
    (rec,) = load_results(tmp_path / RESULTS).values()
    (tmp_path / RESULTS).write_text(json.dumps({k: v for k, v in rec.items() if k != "mutation"}) + "\n")
    again = run_cli("audit", str(SKIPS_STEP), "--out", str(tmp_path), "--resume", "--red-team", "off")
    assert "resuming: 1 of 1" in again.stderr and "1/2" not in again.stdout, again.stdout
    assert "surviving mutants in 0/0 scored task(s)" in " ".join(again.stdout.split())


# Every example seed's mutation score (all sampled mutants killed) is asserted on the same verdicts audit records, in
# tests/cli/test_cli_verify.py::test_every_seed_is_sound: one run of the seeds' trials instead of two.
