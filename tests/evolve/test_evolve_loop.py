"""The generation loop with a scripted engine and no containers: budgets, direction order, effort and
direction checks done by the loop itself, termination reasons, and what gets stored."""

import asyncio
import json

import pytest

from envevo.evolve import (
    Capability,
    Engine,
    EvolveConfig,
    GenerationContext,
    Proposal,
    Review,
    Stage,
    direction_order,
    evolve,
    start_lineages,
)
from envevo.store import LineageStore
from envevo.task import load_task
from envevo.trace import Direction, Effort, Step, Trace
from envevo.verify import VerifierReport
from tests.conftest import FIXTURES


class Uniform:
    name = "uniform"

    def neg_log_p_scenario(self, scenario, goal):
        return 1.0

    def neg_log_p_skill(self, skill, scenario, goal):
        return 2.0


def trace_of(task) -> Trace:
    return Trace(**task.envevo_metadata["trace"])


class ScriptedEngine(Engine):
    """Length edits only; `bad_first` makes the first proposal of each direction break the effort bound. Its
    capabilities come from the Engine protocol: none."""

    name = "scripted"

    def __init__(self, bad_first=False, refuse=()):
        self.bad_first = bad_first
        self.refuse = set(refuse)
        self.calls = []

    def reference(self):
        return Uniform()

    async def extract_trace(self, task):
        return trace_of(task)

    async def propose(self, task, trace, direction, effort, feedback, ctx: GenerationContext):
        self.calls.append((ctx.generation, direction, tuple(feedback)))
        if direction in self.refuse or direction is not Direction.LENGTH:
            return None
        n = 2 if (self.bad_first and not feedback) else 1  # two separate inserts break high effort
        steps = list(trace.steps)
        new = Step(scenario=f"s{len(steps)}", skill=f"k{len(steps)}")
        if n == 2:
            steps = [new] + steps + [Step(scenario="z", skill="z")]
        else:
            steps = steps + [new]
        return Proposal(direction=direction, effort=effort, before=trace, after=Trace(goal=trace.goal, steps=tuple(steps)))

    async def review(self, task, proposal, ctx):
        return Review(accepted=True)

    async def modify(self, task, proposal, feedback, ctx):
        cand = task.model_copy(deep=True)
        cand.write("instruction.md", task.instruction + f"\nStep {proposal.after.L}.\n")
        cand.update_envevo_metadata(trace=proposal.after.model_dump(mode="json"))
        return cand


class Gate:
    """A rubric-slot check that fails the first `fail_first` candidates."""

    name = "rubric"

    def __init__(self, fail_first=0):
        self.left = fail_first

    async def check(self, task, task_dir):
        if self.left > 0:
            self.left -= 1
            return VerifierReport(name="rubric", passed=False, reasons=["instruction too vague"])
        return VerifierReport(name="rubric", passed=True)


def seed_task():
    task = load_task(FIXTURES / "runtime" / "hello")
    task.update_envevo_metadata(trace=Trace(goal="g", steps=(Step(scenario="a", skill="x"),)).model_dump(mode="json"))
    return task


def run(tmp_path, engine, generations=3, check=None, effort=Effort.HIGH, env_budget=3):
    store = LineageStore.open(tmp_path / "run")
    seed = seed_task()
    lid = store.create_lineage("hello", seed, trace=trace_of(seed))
    cfg = EvolveConfig(generations=generations, effort=effort, env_budget=env_budget)
    statuses = asyncio.run(evolve(store, [lid], engine, cfg, checks=[check or Gate()], verifiers=[]))
    return store, lid, statuses[lid]


def test_lineage_reaches_the_requested_generations(tmp_path):
    store, lid, status = run(tmp_path, ScriptedEngine(), generations=3)
    assert status == "done"
    versions = store.versions(lid)
    assert [v.generation for v in versions] == [0, 1, 2, 3]
    assert [v.L for v in versions[1:]] == [2, 3, 4]
    assert all(v.direction == "length" and v.verified for v in versions[1:])
    assert versions[-1].difficulty.D_T == 4 * 3.0
    assert {"instruction", "config"} <= set(versions[1].mutated)


def test_effort_violations_are_rejected_by_the_loop_and_fed_back(tmp_path):
    engine = ScriptedEngine(bad_first=True)
    store, lid, status = run(tmp_path, engine, generations=1)
    assert status == "done"
    plans = store.plans(lid, 1)
    rejected = [p for p in plans if not p.accepted and p.proposal is not None]
    assert rejected and "contiguous span" in rejected[0].feedback
    # The feedback reached the engine's next proposal.
    assert any(fb and "contiguous span" in fb[0] for _, _, fb in engine.calls)


def test_failed_verifications_are_stored_and_retried(tmp_path):
    store, lid, status = run(tmp_path, ScriptedEngine(), generations=1, check=Gate(fail_first=2))
    assert status == "done"
    cands = store.candidates(lid, 1)
    assert [c.accepted for c in cands] == [False, False, True]
    assert "instruction too vague" in " ".join(cands[0].reasons)


def test_lineage_terminates_with_a_reason_when_every_direction_fails(tmp_path):
    store, lid, status = run(tmp_path, ScriptedEngine(refuse=list(Direction)), generations=2)
    assert status == "terminated"
    lin = store.lineage(lid)
    assert "all directions failed" in lin.reason
    assert lin.latest_generation == 0


def test_env_budget_exhaustion_moves_on_and_terminates(tmp_path):
    store, lid, status = run(tmp_path, ScriptedEngine(), generations=1, check=Gate(fail_first=99), env_budget=2)
    assert status == "terminated"
    assert "no candidate verified within 2 rounds" in store.lineage(lid).reason
    assert len(store.candidates(lid, 1)) == 2


def test_direction_order_is_shuffled_per_generation_and_reproducible():
    orders = {tuple(direction_order(7, "lin", g)) for g in range(1, 16)}
    assert len(orders) > 1
    assert direction_order(7, "lin", 3) == direction_order(7, "lin", 3)
    assert sorted(direction_order(1, "x", 1)) == sorted(Direction)
    # A subset keeps the full order's relative positions, so one lever can be isolated reproducibly.
    full = direction_order(7, "lin", 4)
    two = [Direction.SKILL, Direction.LENGTH]
    assert direction_order(7, "lin", 4, two) == [d for d in full if d in two]


def test_a_run_restricted_to_one_direction_uses_only_it(tmp_path):
    store = LineageStore.open(tmp_path / "run")
    seed = seed_task()
    lid = store.create_lineage("hello", seed, trace=trace_of(seed))
    engine = ScriptedEngine()  # it only ever edits length: allowed scenario alone, the lineage must end
    cfg = EvolveConfig(generations=2, directions=[Direction.SCENARIO])
    statuses = asyncio.run(evolve(store, [lid], engine, cfg, checks=[Gate()], verifiers=[]))
    assert statuses[lid] == "terminated" and {c[1] for c in engine.calls} == {Direction.SCENARIO}


def test_resume_continues_after_the_last_committed_generation(tmp_path):
    store, lid, _ = run(tmp_path, ScriptedEngine(), generations=2)
    store.finish_lineage(lid, "running")
    # No drift bound: the scripted "Step N." lines outweigh the fixture's one-line instruction by generation 4.
    cfg = EvolveConfig(generations=4, max_drift=None)
    asyncio.run(evolve(store, [lid], ScriptedEngine(), cfg, checks=[Gate()], verifiers=[]))
    assert [v.generation for v in store.versions(lid)] == [0, 1, 2, 3, 4]


class FailingOnceEngine(ScriptedEngine):
    """The Modifier produces nothing on its first attempt of each generation."""

    def __init__(self):
        super().__init__()
        self.failed = set()

    async def modify(self, task, proposal, feedback, ctx):
        from envevo.evolve import CandidateFailed

        if ctx.generation not in self.failed:
            self.failed.add(ctx.generation)
            raise CandidateFailed("the edit left tests/test.sh unparsable")
        assert feedback == ["modifier: the edit left tests/test.sh unparsable"]
        return await super().modify(task, proposal, feedback, ctx)


def test_a_modifier_attempt_without_a_task_is_stored_and_fed_back(tmp_path):
    store, lid, status = run(tmp_path, FailingOnceEngine(), generations=1)
    assert status == "done"
    failed, ok = store.candidates(lid, 1)
    assert failed.task_hash is None and not failed.accepted
    assert failed.reasons == ["modifier: the edit left tests/test.sh unparsable"]
    assert ok.accepted and ok.task_hash is not None


def test_resume_refuses_other_llm_models():
    stored = EvolveConfig(engine="llm", models={"proposer": "openai:a"})
    assert stored.resumable_with(EvolveConfig(engine="llm", models={"proposer": "openai:a"})) == []
    clash = stored.resumable_with(EvolveConfig(engine="llm", models={"proposer": "anthropic:b"}))
    assert len(clash) == 1 and clash[0].startswith("models:")


class Verdicts:
    """Checks that report fixed results under the verifiers' names (the seed's verdict, without containers)."""

    def __init__(self, name, passed):
        self.name, self.passed = name, passed

    async def check(self, task, task_dir):
        return VerifierReport(name=self.name, passed=self.passed, reasons=[] if self.passed else [f"{self.name} broke it"])


@pytest.mark.parametrize("oracle_passes", [True, False])
def test_a_seed_only_the_red_team_fails_says_how_to_go_on(tmp_path, oracle_passes):
    store = LineageStore.open(tmp_path / "run")
    # The rubric judges a seed without gating it, so its failure changes nothing here.
    checks = [Verdicts("red_team", False), Verdicts("oracle", oracle_passes), Verdicts("rubric", False)]
    todo = asyncio.run(start_lineages(store, [("hello", seed_task())], ScriptedEngine(),
                                      EvolveConfig(generations=1, harden=False), checks=checks, verifiers=[]))
    (lin,) = store.lineages()
    assert todo == [] and lin.status == "terminated" and "red_team broke it" in lin.reason
    assert "rubric broke it" not in lin.reason
    # The way out is named only when the red team is the one failing gate: a task that is unsound otherwise
    # would not be helped by switching the red team off.
    assert ("--red-team off" in lin.reason) is oracle_passes


@pytest.mark.parametrize("proved", [True, False])
def test_a_seed_only_the_red_team_fails_is_hardened_by_default(tmp_path, monkeypatch, proved):
    """Generation 0 is the hardened copy when harden proves it (its provenance in the task), said in one line; when
    harden cannot, the seed stays rejected with harden's reason. (`harden_task` itself runs containers: it is
    replaced here by one that writes a copy; tests/harden proves the real one.)"""
    from envevo.evolve import _seed_harden
    from envevo.harden import HardenResult
    from envevo.task import save

    seen = {}

    async def fake_harden(task, out_dir, **kw):
        seen.update(kw)
        if not proved:
            return HardenResult(task=task.name, source="x", status="not hardened", reason="the tests query port 8000")
        copy = task.model_copy(deep=True)
        copy.update_envevo_metadata(hardened={"from_content_hash": task.content_hash()})
        return HardenResult(task=task.name, source="x", status="hardened", out=str(save(copy, out_dir / "seed")))

    monkeypatch.setattr(_seed_harden, "harden_task", fake_harden)
    store = LineageStore.open(tmp_path / "run")
    events = []
    seed = seed_task()
    engine = Counting()
    todo = asyncio.run(start_lineages(store, [("hello", seed)], engine, EvolveConfig(generations=1),
                                      checks=[Verdicts("red_team", False), Verdicts("oracle", True)], verifiers=[],
                                      on_event=events.append))
    (lin,) = store.lineages()
    assert seen["before"].reports["red_team"].passed is False  # the gate's verdict, not verified twice
    if proved:
        assert todo == ["hello"] and lin.status == "running" and store.version("hello", 0).verified
        gen0 = store.load_version_task(store.version("hello", 0).task_hash)
        assert gen0.envevo_metadata["hardened"]["from_content_hash"] == seed.content_hash()
        assert any("the seed was hardened and proved" in e.detail for e in events)
        # ξ is extracted after the gate, from generation 0 as stored: the hardened copy.
        assert engine.extracted == [gen0.content_hash()] and store.version("hello", 0).trace is not None
        # A resume with the seed as given finds its lineage (generation 0 is its hardened copy): nothing again.
        seen.clear()
        again = Counting()
        assert asyncio.run(start_lineages(store, [("hello", seed)], again, EvolveConfig(generations=1),
                                          checks=[Verdicts("red_team", False)], verifiers=[])) == ["hello"]
        assert seen == {} and again.extracted == []
    else:
        assert todo == [] and lin.status == "terminated"
        assert "harden could not fix it (not hardened: the tests query port 8000" in lin.reason
        assert engine.extracted == []  # no ξ for a seed the gate rejected


def test_a_seed_is_judged_not_gated_by_the_rubric(tmp_path):
    store = LineageStore.open(tmp_path / "run")
    events = []
    checks = [Verdicts("oracle", True), Verdicts("rubric", False)]
    todo = asyncio.run(start_lineages(store, [("hello", seed_task())], ScriptedEngine(), EvolveConfig(generations=1),
                                      checks=checks, verifiers=[], on_event=events.append))
    (lin,) = store.lineages()
    assert todo == ["hello"] and lin.status == "running"
    assert store.version("hello", 0).verified
    # Shown, and recorded beside the seed's trials.
    (judged,) = [e for e in events if e.stage == "judged"]
    assert "does not gate it: fail: rubric broke it" in judged.detail
    recorded = json.loads((store.run_dir / "work" / "seeds" / "hello" / "verdict.json").read_text())
    assert recorded["reports"]["rubric"]["passed"] is False and recorded["reports"]["oracle"]["passed"] is True


def test_a_seed_that_fails_the_oracle_is_still_gated(tmp_path):
    store = LineageStore.open(tmp_path / "run")
    checks = [Verdicts("oracle", False), Verdicts("rubric", True)]
    todo = asyncio.run(start_lineages(store, [("hello", seed_task())], ScriptedEngine(), EvolveConfig(generations=1),
                                      checks=checks, verifiers=[]))
    (lin,) = store.lineages()
    assert todo == [] and lin.status == "terminated" and lin.reason == "the seed is not sound: oracle: oracle broke it"


def test_a_seed_whose_extraction_fails_is_skipped_with_the_reason_and_the_others_go_on(tmp_path):
    from envevo.llm import ExtractionFailed

    class Unreadable(ScriptedEngine):
        async def extract_trace(self, task):
            if "unreadable" in task.read_text("instruction.md"):
                raise ExtractionFailed(f"no usable ξ for task {task.name}: the evidence was not in the files")
            return await super().extract_trace(task)

    bad = seed_task()
    bad.write("instruction.md", bad.read_text("instruction.md") + "\nunreadable\n")
    store = LineageStore.open(tmp_path / "run")
    events = []
    todo = asyncio.run(start_lineages(store, [("bad", bad), ("good", seed_task())], Unreadable(), EvolveConfig(generations=1),
                                      verifiers=[], on_event=events.append))
    assert todo == ["good"]
    skipped = store.lineage("bad")
    assert skipped.status == "terminated" and skipped.reason.startswith("skipped: no usable ξ for task")
    assert any(e.lineage == "bad" and e.stage == "terminated" for e in events)


# ---- resume: what happened stays what it was -----------------------------------------------------------------
class Counting(ScriptedEngine):
    """Counts extractions; a seed whose instruction says "unreadable" has no ξ while `readable` is off."""

    def __init__(self, readable=False, **kw):
        super().__init__(**kw)
        self.readable, self.extracted = readable, []

    async def extract_trace(self, task):
        self.extracted.append(task.content_hash())
        if "unreadable" in task.read_text("instruction.md") and not self.readable:
            from envevo.llm import ExtractionFailed

            raise ExtractionFailed(f"no usable ξ for task {task.name}: the answer was cut")
        return await super().extract_trace(task)


class Gates(Verdicts):
    """A seed gate that counts the seeds it verified."""

    def __init__(self, passed=True):
        super().__init__("oracle", passed)
        self.seen = 0

    async def check(self, task, task_dir):
        self.seen += 1
        return await super().check(task, task_dir)


def unreadable_seed():
    task = seed_task()
    task.write("instruction.md", task.read_text("instruction.md") + "\nunreadable\n")
    return task


def start(store, seeds, engine, gate, **kw):
    events = []
    todo = asyncio.run(start_lineages(store, seeds, engine, EvolveConfig(generations=1), checks=[gate], verifiers=[],
                                      on_event=events.append, **kw))
    return todo, events


def test_a_resume_extracts_and_verifies_no_ended_lineage_again_and_says_it_kept_them(tmp_path):
    store = LineageStore.open(tmp_path / "run")
    seeds = [("bad", unreadable_seed()), ("good", seed_task())]
    start(store, seeds, Counting(), Gates())
    asyncio.run(evolve(store, ["good"], ScriptedEngine(refuse=list(Direction)), EvolveConfig(generations=1),
                       checks=[Gate()], verifiers=[]))
    assert store.lineage("good").status == "terminated"

    engine, gate = Counting(readable=True), Gates()
    todo, events = start(store, seeds, engine, gate)  # a resume without --retry-skipped
    assert todo == [] and engine.extracted == [] and gate.seen == 0
    kept = {e.lineage: e.detail for e in events if e.stage == "kept"}
    assert kept["bad"].startswith("kept as stored: terminated, 0 generations: skipped: no usable ξ for task")
    assert kept["bad"].endswith("(--retry-skipped tries this seed again)")
    assert kept["good"].startswith("kept as stored: terminated, 0 generations: generation 1: all directions failed")
    assert "--retry-skipped" not in kept["good"]  # it evolved (and failed): not a skipped seed
    assert store.lineage("bad").status == "terminated"


def test_retry_skipped_reopens_a_seed_whose_extraction_failed(tmp_path):
    store = LineageStore.open(tmp_path / "run")
    seeds = [("bad", unreadable_seed())]
    start(store, seeds, Counting(), Gates())
    assert store.version("bad", 0).trace is None

    engine, gate = Counting(readable=True), Gates()  # e.g. a larger output cap now
    todo, _ = start(store, seeds, engine, gate, retry_skipped=True)
    assert todo == ["bad"] and store.lineage("bad").status == "running"
    assert len(engine.extracted) == 1 and gate.seen == 0  # the seed's gate passed before ξ failed: kept
    seed0 = store.version("bad", 0)
    assert seed0.trace == trace_of(seeds[0][1]) and seed0.verified


def test_a_seed_the_gate_rejects_costs_no_extraction_and_retry_skipped_gates_it_again(tmp_path):
    """The gate comes before ξ: a model's tokens are not spent on a seed the gate rejects."""
    store = LineageStore.open(tmp_path / "run")
    seeds = [("hello", seed_task())]
    engine = Counting()
    start(store, seeds, engine, Gates(passed=False))
    assert store.lineage("hello").reason.startswith("the seed is not sound: ") and not store.version("hello", 0).verified
    assert engine.extracted == [] and store.version("hello", 0).trace is None

    todo, _ = start(store, seeds, engine, Gates(passed=False), retry_skipped=True)
    assert todo == [] and store.lineage("hello").reason.startswith("the seed is not sound: ")
    assert engine.extracted == []
    gate = Gates(passed=True)
    todo, _ = start(store, seeds, engine, gate, retry_skipped=True)
    assert todo == ["hello"] and store.version("hello", 0).verified and gate.seen == 1
    assert engine.extracted == [seeds[0][1].content_hash()] and store.version("hello", 0).trace == trace_of(seeds[0][1])


def test_a_run_stopped_between_the_gate_and_xi_resumes_with_only_the_extraction(tmp_path):
    """A kill after the seed gate and before ξ: the lineage row holds the gate's outcome, its verdict stays on
    disk, and a plain resume extracts ξ without gating the seed again."""

    class Killed(ScriptedEngine):
        async def extract_trace(self, task):
            raise KeyboardInterrupt  # Ctrl-C while the model extracts

    store = LineageStore.open(tmp_path / "run")
    seeds = [("hello", seed_task())]
    with pytest.raises(KeyboardInterrupt):
        start(store, seeds, Killed(), Gates())
    verdict = store.run_dir / "work" / "seeds" / "hello" / "verdict.json"
    assert store.version("hello", 0).verified and store.version("hello", 0).trace is None and verdict.is_file()
    stored = verdict.read_text()

    engine, gate = Counting(), Gates()
    todo, _ = start(store, seeds, engine, gate)  # a resume, without --retry-skipped
    assert todo == ["hello"] and gate.seen == 0 and len(engine.extracted) == 1
    assert store.version("hello", 0).trace == trace_of(seeds[0][1]) and verdict.read_text() == stored


def test_a_lineage_that_evolved_is_not_reopened_by_retry_skipped(tmp_path):
    store, lid, status = run(tmp_path, ScriptedEngine(refuse=list(Direction)), generations=2)
    assert status == "terminated" and store.lineage(lid).latest_generation == 0  # ended in generation 1, not a skip
    engine, gate = Counting(), Gates()
    todo, events = start(store, [("hello", seed_task())], engine, gate, retry_skipped=True)
    assert todo == [] and engine.extracted == [] and gate.seen == 0
    assert [e.stage for e in events] == ["kept"]


class Reextracting(ScriptedEngine):
    """An extraction that words ξ differently each time it is asked (as an LLM may), and records what it planned on."""

    def __init__(self):
        super().__init__()
        self.planned_on, self.extracted = [], 0

    async def extract_trace(self, task):
        self.extracted += 1
        trace = trace_of(task)
        return Trace(goal=f"{trace.goal} (extraction {self.extracted})", steps=trace.steps)

    async def propose(self, task, trace, direction, effort, feedback, ctx):
        self.planned_on.append((ctx.generation, trace.goal))
        return await super().propose(task, trace, direction, effort, feedback, ctx)


def test_a_generation_plans_against_the_trace_stored_with_its_parent(tmp_path):
    store = LineageStore.open(tmp_path / "run")
    seed = seed_task()
    lid = store.create_lineage("hello", seed, trace=trace_of(seed))
    engine = Reextracting()
    asyncio.run(evolve(store, [lid], engine, EvolveConfig(generations=2, max_drift=None), checks=[Gate()], verifiers=[]))
    v0, v1, _ = store.versions(lid)
    # Generation 1 plans on the seed's stored ξ, generation 2 on the ξ committed with generation 1.
    assert set(engine.planned_on) == {(1, v0.trace.goal), (2, v1.trace.goal)} == {(1, "g"), (2, "g (extraction 1)")}
    assert engine.extracted == 2  # once per committed candidate, never for a parent


def test_the_red_teams_hacker_runs_on_the_engines_model_and_learns_only_where_told(tmp_path):
    """The LLM hacker is one more role of the run: it gets the engine's runtime (its meter, record and budget), not
    a model of its own from ./envevo.toml; and no rubric file is written unless the run names one."""
    from envevo.evolve import run_verifiers
    from envevo.verify import RedTeamVerifier
    from envevo.verify.exploits import make_exploit

    class WithModel(ScriptedEngine):
        capabilities = frozenset({Capability.USES_LLM})  # the contract says it has a model runtime
        runtime = object()  # stands for the run's LLMRuntime: handed through as is

    cfg = EvolveConfig(red_team="on")
    for engine, learn in ((WithModel(), tmp_path / "learned.toml"), (ScriptedEngine(), None)):
        (red,) = [v for v in run_verifiers(engine, cfg, learn) if isinstance(v, RedTeamVerifier)]
        options = red._agent_options
        assert options == ({"runtime": engine.runtime, "learn_rubric": learn} if learn else {})
    hacker = make_exploit("llm_hacker", runtime=WithModel.runtime, learn_rubric=tmp_path / "learned.toml")
    assert hacker._given_runtime is WithModel.runtime and hacker.learn_rubric == tmp_path / "learned.toml"
    assert not [v for v in run_verifiers(ScriptedEngine(), EvolveConfig(red_team="off")) if isinstance(v, RedTeamVerifier)]


def test_evolve_runs_no_false_fail_probes_but_verify_does():
    """The probes measure a task's quality and gate nothing: every candidate of a run would pay 2-4 trials for them."""
    from envevo.evolve import run_verifiers
    from envevo.verify import RedTeamVerifier, default_verifiers
    from envevo.verify.exploits import get_exploit

    task = FIXTURES / "hackable" / "loose_numbers"

    def probes(verifiers) -> list[str]:
        (red,) = [v for v in verifiers if isinstance(v, RedTeamVerifier)]
        return [n for n, _ in red.plan(task) if get_exploit(n).kind == "probe"]

    assert probes(default_verifiers(red_team="on"))  # verify and audit measure the false-fail rate
    assert probes(run_verifiers(ScriptedEngine(), EvolveConfig(red_team="on"))) == []


def test_the_model_writes_near_misses_only_when_the_run_asks_for_them():
    """Model-written mutants cost a call per candidate, and a recorded run replays only the calls it made: off
    unless --model-mutants N, and then N per candidate on the engine's own runtime."""
    from envevo.evolve import run_verifiers
    from envevo.llm import ModelMutantWriter
    from envevo.verify import MutationVerifier

    class WithModel(ScriptedEngine):
        capabilities = frozenset({Capability.USES_LLM})
        runtime = object()

    def mutation(engine, cfg):
        (v,) = [v for v in run_verifiers(engine, cfg) if isinstance(v, MutationVerifier)]
        return v

    assert mutation(WithModel(), EvolveConfig(mutation="on")).writer is None
    asked = mutation(WithModel(), EvolveConfig(mutation="on", model_mutants=2))
    assert isinstance(asked.writer, ModelMutantWriter) and asked.writer.runtime is WithModel.runtime
    assert asked.written == 2
    assert mutation(ScriptedEngine(), EvolveConfig(mutation="on", model_mutants=2)).writer is None  # no model


def test_an_engine_without_a_model_lends_the_runs_model_to_the_hacker_and_the_mutant_writer():
    """The procedural engine has no model; the one --config/--model name (issue 25: not ./envevo.toml read behind the
    command line's back) goes to the hacker and to --model-mutants. An engine's own model comes first."""
    from envevo.evolve import run_verifiers
    from envevo.llm import LLMRuntime, LLMSettings
    from envevo.verify import MutationVerifier, RedTeamVerifier

    lent = LLMRuntime(LLMSettings(model="openai:lent"))
    cfg = EvolveConfig(red_team="on", mutation="on", model_mutants=1)
    verifiers = run_verifiers(ScriptedEngine(), cfg, None, lent)
    (red,) = [v for v in verifiers if isinstance(v, RedTeamVerifier)]
    (mut,) = [v for v in verifiers if isinstance(v, MutationVerifier)]
    assert red._agent_options == {"runtime": lent} and mut.writer is not None and mut.writer.runtime is lent

    class WithModel(ScriptedEngine):
        capabilities = frozenset({Capability.USES_LLM})
        runtime = object()

    (red,) = [v for v in run_verifiers(WithModel(), cfg, None, lent) if isinstance(v, RedTeamVerifier)]
    assert red._agent_options == {"runtime": WithModel.runtime}


def test_event_stages_are_an_enum_that_prints_and_compares_as_the_old_strings(tmp_path):
    events = []
    store = LineageStore.open(tmp_path / "run")
    seed = seed_task()
    lid = store.create_lineage("hello", seed, trace=trace_of(seed))
    asyncio.run(evolve(store, [lid], ScriptedEngine(), EvolveConfig(generations=1, max_drift=None), checks=[Gate()],
                       verifiers=[], on_event=events.append))
    assert all(isinstance(e.stage, Stage) for e in events)
    assert [e.stage for e in events][:2] == ["generation", "direction"]  # str enums: logs and old callers unchanged
    assert f"{events[0].stage}" == "generation" and Stage("kept") is Stage.KEPT
    with pytest.raises(ValueError):
        type(events[0])(lid, 0, "no-such-stage")
