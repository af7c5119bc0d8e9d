"""A verifier is a plugin: one module (here, this one) and one registry line. A toy verifier registered from a test is
built from a `VerificationConfig`, runs its trial in the shared pool, and is stored, reused by a child, audited,
put into SARIF and shown in a verdict's JSON without any of those places naming it. Containers are replaced by a
fake pool (host-side); no code outside the registry spells a verifier's name (checked on the source)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from envevo.evolve._recorder import StoreRecorder
from envevo.runtime import ORACLE_AGENT, ErrorKind, TrialOutcome, TrialSpec
from envevo.store import LineageStore
from envevo.task import load_task, save
from envevo.verify import (
    Finding,
    FindingKind,
    VerificationConfig,
    VerifierReport,
    VerifierSpec,
    audit_record,
    audit_sarif,
    fail_on_hits,
    record_reasons,
    register,
    unregister,
    verify_tasks,
)
from tests.store.test_store_support import tiny_task

TOY = "toy_probe"
ROOT = Path(__file__).resolve().parents[2]


class ToyVerifier:
    """Runs the reference solution once as the probe `touch`: the task is broken by it if that run scores above 0
    (a toy rule: only what a plugin does matters here)."""

    name = TOY

    @classmethod
    def from_config(cls, config: VerificationConfig, **_: object) -> ToyVerifier:
        return cls()

    def trial_specs(self, task_dir: Path, env: str, trials_dir: Path) -> list[TrialSpec]:
        return [TrialSpec(task_dir=task_dir, agent=ORACLE_AGENT, env=env, trials_dir=trials_dir, subject="touch")]

    def judge(self, runs: list[TrialOutcome]) -> VerifierReport:
        broke = [o for o in runs if o.reward]
        return VerifierReport(name=self.name, passed=not broke, metrics={"toy_keys": [f"k-{o.subject}" for o in runs]},
                              runs=runs, findings=[Finding(source=self.name, kind=FindingKind.BROKE, exploit=o.subject,
                                                           evidence=f"reward {o.reward}",
                                                           text=f"{o.subject}: reward {o.reward} under the probe")
                                                   for o in broke])


def toy_keys(metrics: dict[str, Any], generation: int) -> frozenset[str]:
    return frozenset(metrics.get("toy_keys") or [])


@pytest.fixture
def toy():
    spec = register(VerifierSpec(TOY, "toy", "the toy probe scores 0", f"{__name__}:ToyVerifier.from_config",
                                 subject="probe", inherits=f"{__name__}:toy_keys"))
    yield spec
    unregister(TOY)


@pytest.fixture
def pool(monkeypatch) -> list[TrialSpec]:
    """The trial pool, faked: a reference run scores 1.0, the empty solution 0.0 with a failing test line."""
    ran: list[TrialSpec] = []

    async def run_trials(specs, *, concurrency, retries, on_done=None, gate=None):
        out = []
        for k, s in enumerate(specs):
            ran.append(s)
            d = s.trials_dir / f"trial-{len(ran)}"
            (d / "verifier").mkdir(parents=True, exist_ok=True)
            (d / "verifier" / "test-stdout.txt").write_text("FAIL out\n" if s.agent != ORACLE_AGENT else "PASS out\n")
            o = TrialOutcome(task="t", agent=s.agent, reward=1.0 if s.agent == ORACLE_AGENT else 0.0,
                             error_kind=ErrorKind.OK, trial_dir=d, subject=s.subject)
            if on_done is not None:
                on_done(k, o)
            out.append(o)
        return out

    monkeypatch.setattr("envevo.runtime.run_trials", run_trials)
    return ran


def test_a_registered_verifier_runs_is_stored_reused_audited_and_reported(toy, pool, tmp_path: Path) -> None:
    task = tiny_task("toy", solve="echo hello > /app/out.txt\n")
    task_dir = save(task, tmp_path / "task")
    config = VerificationConfig(red_team="off", mutation="off", repeats=1)
    verifiers = config.verifiers()
    assert [v.name for v in verifiers] == ["oracle", "invalid_test", TOY]  # built from the registry, in its order
    (verdict,) = asyncio.run(verify_tasks([("t", task_dir)], tmp_path / "trials", verifiers=verifiers))
    # Run: its trial went through the shared pool with its subject, and it judged it.
    assert [s.subject for s in pool if s.subject] == ["touch"]
    rep = verdict.reports[TOY]
    assert not rep.passed and rep.reasons == ["touch: reward 1.0 under the probe"]
    assert verdict.status == "fail" and verdict.reasons == [f"{TOY}: touch: reward 1.0 under the probe"]

    # Stored: the row comes back with its findings, and a child of this candidate reuses its keys (its spec's
    # `inherits`), read through the recorder that knows no verifier by name.
    with LineageStore.open(tmp_path / "run") as store:
        lid = store.create_lineage("seed", tiny_task("seed"))
        cid = store.add_candidate(lid, 1, "length", 1, load_task(task_dir))
        for report in verdict.reports.values():
            store.add_verifier_report(cid, report)
        row = next(v for v in store.verifications(cid) if v.verifier == TOY)
        assert row.findings == rep.findings and row.reasons == rep.reasons
        parent: Any = SimpleNamespace(candidate_id=cid, generation=1)
        assert asyncio.run(StoreRecorder(store).mutant_kills(parent)) == {"k-touch"}

    # Audited: a failure class per subject, the task hackable, `--fail-on` by the verifier's name, its reasons.
    rec = audit_record(load_task(task_dir), verdict)
    assert rec["broken_by"] == ["probe:touch"] and rec["hackable"]
    assert fail_on_hits(rec, [TOY]) == ["probe:touch"] and fail_on_hits(rec, ["red_team"]) == []
    assert record_reasons(rec) == [f"{TOY}: touch: reward 1.0 under the probe"]
    # Reported: the verdict's JSON has its part, SARIF a rule for it.
    assert rec["verdict"][TOY]["findings"][0]["exploit"] == "touch"
    rules = [r["ruleId"] for r in audit_sarif([rec])["runs"][0]["results"]]
    assert rules == [f"{TOY}/touch"]


def test_a_verifier_switched_off_is_not_built(toy) -> None:
    names = [v.name for v in VerificationConfig(red_team="on", mutation="off").verifiers()]
    assert names == ["oracle", "invalid_test", "red_team", TOY]
    with pytest.raises(ValueError, match="--mutation 'sometimes'"):
        VerificationConfig(mutation="sometimes")
    with pytest.raises(ValueError, match="registered already"):
        register(VerifierSpec(TOY, "other", "", f"{__name__}:ToyVerifier.from_config"))


def test_no_module_but_the_registry_spells_a_verifier_name() -> None:
    """The names are the registry's constants; `"oracle"` once more as Harbor's agent (envevo/runtime/_agents.py)."""
    names = re.compile(r'"(oracle|invalid_test|red_team|mutation)"')
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "envevo").rglob("*.py"))
            if p.name != "_plugins.py" for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if names.search(line) and not line.startswith("ORACLE_AGENT = ")]
    assert hits == []
