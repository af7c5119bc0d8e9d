"""The LLM engine's token compass: input and output tokens per role and per accepted generation, on scripted runs.

Every shipped seed (examples/seeds) and every realistic fixture (tests/fixtures/realistic) goes through one
generation of the LLM engine with scripted models (pydantic-ai FunctionModel, no network, no containers): the
Proposer extracts ξ and plans a length edit, the Reviewer accepts, the Modifier works through the same tool calls
on every task (list, read every instruction/environment/test/solution file, run the solution and the tests in a
scripted shell, write three files, check again), the oracle then rejects that attempt with the same failing trial
(test-stdout with pytest failures, a CTRF report), the Modifier fixes it in a second attempt, and the judge
accepts. The script is the same for every version of the code; only what the code sends changes.

"before" is the code at --before-ref (default 8dc7842, the tree this work started from): the script is replayed
in a subprocess whose PYTHONPATH is a `git archive` of that commit, side by side with "after" (this tree).

Tokens are counted with tiktoken's cl100k_base over what each request carries: the instructions, every message
part (prompts, tool calls, tool results, retries) and the tool definitions. No model ran: these are the token
counts of the exact requests the code built, not a provider's bill.

    .venv/bin/python benchmarks/llm_tokens.py [--before-ref REF] [--only after] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROLES = ("proposer", "reviewer", "modifier", "judge")


def _tasks() -> list[Path]:
    dirs = [*sorted((ROOT / "examples" / "seeds").iterdir()), *sorted((ROOT / "tests" / "fixtures" / "realistic").iterdir())]
    return [d for d in dirs if (d / "task.toml").is_file()]


# ---- the replay (runs against whichever envevo is importable) ---------------------------------------------------
def _offline_tiktoken() -> None:
    """cl100k_base without a download: litellm (a dependency of Harbor) ships the encoding's cache file."""
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    if spec and spec.submodule_search_locations and "TIKTOKEN_CACHE_DIR" not in os.environ:
        cache = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
        if cache.is_dir():
            os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


def _replay(task_dirs: list[Path]) -> dict:
    _offline_tiktoken()
    import tiktoken
    from pydantic_ai import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.messages import RetryPromptPart, SystemPromptPart, ToolReturnPart, UserPromptPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    from envevo.evolve import GenerationContext
    from envevo.evolve.engines.llm import CommandResult, LLMEngine, ShellFacts
    from envevo.llm import LLMRuntime, LLMSettings
    from envevo.runtime import ErrorKind, TrialOutcome
    from envevo.task import load_task
    from envevo.trace import Direction, Effort
    from envevo.verify import OracleVerifier

    enc = tiktoken.get_encoding("cl100k_base")
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # role -> [input, output, requests]
    prompt_sizes: dict[str, int] = {}

    def toks(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    def part_text(p) -> str:
        if isinstance(p, ToolCallPart):
            return p.tool_name + p.args_as_json_str()
        if isinstance(p, ToolReturnPart):
            return p.tool_name + p.model_response_str()
        if isinstance(p, RetryPromptPart):
            return p.model_response()
        if isinstance(p, UserPromptPart | SystemPromptPart | TextPart):
            return str(p.content)
        return str(getattr(p, "content", ""))

    def model_for(role: str, answer):
        def fn(messages, info: AgentInfo) -> ModelResponse:
            tools = [*info.function_tools, *info.output_tools]
            sent = (getattr(messages[-1], "instructions", None) or "") + "".join(
                part_text(p) for m in messages for p in m.parts)
            sent += json.dumps([[t.name, t.description, t.parameters_json_schema] for t in tools])
            n_in = toks(sent)
            parts = answer(messages, info)
            n_out = toks("".join(part_text(p) for p in parts))
            c = counts[role]
            c[0], c[1], c[2] = c[0] + n_in, c[1] + n_out, c[2] + 1
            return ModelResponse(parts=parts, usage=RequestUsage(input_tokens=n_in, output_tokens=n_out), model_name=role)

        return FunctionModel(fn, model_name=f"scripted-{role}")

    def out(info: AgentInfo, args: dict) -> list:
        return [ToolCallPart(info.output_tools[0].name, args)]

    state: dict = {}

    def proposer(messages, info):
        props = info.output_tools[0].parameters_json_schema.get("properties", {})
        if "after" not in props:  # extraction: one pair, quoted from the instruction
            line = next(ln for ln in state["task"].read_text("instruction.md").splitlines() if ln.strip())
            evidence = [{"file": "instruction.md", "quote": line.strip()[:60]}]
            pairs = [("the task's files", "what the instruction asks")]
            if state.get("reextract"):  # the candidate's ξ, as planned (realizes_plan)
                pairs.append(("the first step's output", "summarise it into a report"))
            return out(info, {"goal": "do what the instruction asks", "final": "the checked output",
                              "steps": [{"scenario": sc, "skill": sk, "evidence": evidence} for sc, sk in pairs]})
        return out(info, {"rationale": "a dependent second step lengthens the chain by one pair",
                          "after": [{"scenario": "the task's files", "skill": "what the instruction asks"},
                                    {"scenario": "the first step's output", "skill": "summarise it into a report"}],
                          "final": "the checked output",
                          "changes": {"instruction": "ask for the summary", "environment": "unchanged",
                                      "tests": "check the summary's exact values",
                                      "solution": "compute the summary from the output"},
                          "summary": "length: insert a summary step"})

    def verdicts(rubric, info):
        return out(info, {"criteria": [{"name": c.name, "reason": f"checked {c.name}", "verdict": "pass"}
                                       for c in rubric.criteria], "feedback": "Accept."})

    def judge(messages, info):
        rubric = state["engine"].task_rubric
        asked = " ".join(str(getattr(p, "content", "")) for p in messages[-1].parts)
        if hasattr(rubric, "for_seed") and "ξ′ the plan targets:" not in asked:  # a parent, judged as a seed
            rubric = rubric.for_seed()
        return verdicts(rubric, info)

    def modifier(messages, info):
        turn = state["turns"].pop(0)
        if turn is None:
            return out(info, {"summary": "added the summary step to the instruction, the solution and the tests"})
        return [ToolCallPart(n, a) for n, a in turn]

    models = {"proposer": model_for("proposer", proposer),
              "reviewer": model_for("reviewer", lambda m, i: verdicts(state["engine"].plan_rubric, i)),
              "modifier": model_for("modifier", modifier),
              "judge": model_for("judge", judge)}

    solve_out = "\n".join(f"[{i:02d}] processed record batch {i}: 128 rows, 0 errors" for i in range(40))
    test_out = ("============================= test session starts ==============================\n"
                + "\n".join(f"tests/test_outputs.py::test_case_{i} PASSED" for i in range(30))
                + "\n" + "tests/test_outputs.py::test_summary FAILED\n" + "E   AssertionError: assert 41 == 42\n" * 3
                + "=========================== 1 failed, 30 passed in 0.42s ===========================")

    class Shell:  # the ContainerShell interface, answering from the script
        def session(self, task_dir):
            class Session:
                async def __aenter__(self):
                    return self

                async def __aexit__(self, *exc):
                    return None

                def facts(self):
                    return ShellFacts(timeout_sec=300, network="no-network")

                async def run(self, command, **kw):
                    return CommandResult(exit_code=0, output=test_out if "test" in command else solve_out)

            return Session()

    def text_files(task, prefix: str) -> list[str]:
        return [p for p in sorted(task.files) if p.startswith(prefix) and task.files[p].text() is not None]

    def first_turns(task) -> list:
        tests = text_files(task, "tests/")
        main_test = next((p for p in tests if p.endswith(".py")), tests[0])
        return [
            [("list_files", {})],
            [("read_file", {"path": "instruction.md"}), *[("read_file", {"path": p}) for p in text_files(task, "environment/")[:2]]],
            [("read_file", {"path": p}) for p in tests],
            [("read_file", {"path": p}) for p in text_files(task, "solution/")],
            [("run_in_container", {"command": "bash /solution/solve.sh", "mount_solution": True})],
            [("write_file", {"path": "solution/solve.sh", "content": task.read_text("solution/solve.sh") + "\n# summary step\n"})],
            [("run_in_container", {"command": "bash /tests/test.sh", "mount_tests": True})],
            [("write_file", {"path": "instruction.md", "content": task.read_text("instruction.md") + "\nAlso write the summary.\n"})],
            [("write_file", {"path": main_test, "content": task.read_text(main_test) + "\n# checks the summary\n"})],
            [("run_in_container", {"command": "bash /tests/test.sh; cat /logs/verifier/reward.txt", "mount_tests": True})],
            [("read_file", {"path": "solution/solve.sh"})],
            [("run_in_container", {"command": "ls -la /app"})],
            # A fix-and-check cycle, as a model goes through before it is satisfied (the review behind issue 15
            # counts 25–40 Modifier requests per attempt; this script makes 24, then 4 for the retry).
            [("run_in_container", {"command": "head -50 /tests/test_outputs.py; env | sort", "mount_tests": True})],
            [("read_file", {"path": main_test})],
            [("write_file", {"path": main_test, "content": task.read_text(main_test) + "\n# checks the summary, exactly\n"})],
            [("run_in_container", {"command": "bash /solution/solve.sh && bash /tests/test.sh", "mount_solution": True,
                                   "mount_tests": True})],
            [("read_file", {"path": "instruction.md"})],
            [("write_file", {"path": "instruction.md", "content": task.read_text("instruction.md") + "\nAlso write the summary, "
                             "as one line per step.\n"})],
            [("run_in_container", {"command": "bash /tests/test.sh; cat /logs/verifier/reward.txt", "mount_tests": True})],
            [("list_files", {})],
            [("run_in_container", {"command": "bash /tests/test.sh 2>&1 | tail -5", "mount_tests": True})],
            [("read_file", {"path": "solution/solve.sh"})],
            [("run_in_container", {"command": "cat /logs/verifier/reward.txt"})],
            None,
        ], main_test

    def oracle_feedback(trial: Path) -> list[str]:
        (trial / "verifier").mkdir(parents=True)
        (trial / "verifier" / "test-stdout.txt").write_text(test_out)
        (trial / "verifier" / "reward.txt").write_text("0")
        (trial / "verifier" / "ctrf.json").write_text(json.dumps({"results": {
            "summary": {"tests": 31, "passed": 30, "failed": 1},
            "tests": [{"name": "test_summary", "status": "failed", "message": "AssertionError: assert 41 == 42"}]}}))
        run = TrialOutcome(task="t", agent="oracle", reward=0.0, error_kind=ErrorKind.OK, trial_dir=trial)
        return [f"oracle: {r}" for r in OracleVerifier(repeats=1).judge([run]).reasons]

    async def one(task_dir: Path, work: Path) -> None:
        runtime = LLMRuntime(LLMSettings(output_retries=2), models=models)
        engine = LLMEngine(runtime, shell=Shell(), modifier_verifies=False)
        task = load_task(task_dir)
        state.update(engine=engine, task=task)
        ctx = GenerationContext(lineage=task.name, generation=1, rng=random.Random(0), workdir=work)
        trace = await engine.extract_trace(task)
        proposal = await engine.propose(task, trace, Direction.LENGTH, Effort.LOW, [], ctx)
        review = await engine.review(task, proposal, ctx)
        assert review.accepted, review.feedback
        state["turns"], main_test = first_turns(task)
        await engine.modify(task, proposal, [], ctx)
        feedback = oracle_feedback(work / "trial-1")
        state["turns"] = [[("read_file", {"path": main_test})],
                          [("write_file", {"path": main_test, "content": task.read_text(main_test) + "\n# fixed: 41\n"})],
                          [("run_in_container", {"command": "bash /tests/test.sh", "mount_tests": True})], None]
        candidate = await engine.modify(task, proposal, feedback, ctx)
        report = await engine.judge().check(candidate, work / "draft-2")
        assert report.passed, report.reasons
        if hasattr(engine, "plan_check"):  # since issue 15, ξ is re-extracted from the candidate (realizes_plan)
            state["reextract"] = True
            realized = await engine.plan_check().check(candidate, work / "draft-2")
            state["reextract"] = False
            assert realized.passed, realized.reasons

    with tempfile.TemporaryDirectory() as tmp:
        for i, d in enumerate(task_dirs):
            before = sum(c[0] for c in counts.values())
            asyncio.run(one(d, Path(tmp) / f"{i}-{d.name}"))
            prompt_sizes[d.name] = sum(c[0] for c in counts.values()) - before
    return {"roles": {r: {"input": counts[r][0], "output": counts[r][1], "requests": counts[r][2]} for r in ROLES},
            "tasks": prompt_sizes, "accepted_generations": len(task_dirs)}


# ---- side by side -----------------------------------------------------------------------------------------------
def _run_at(ref: str, tasks: list[Path]) -> dict:
    """Replay this script against the code at `ref` (a `git archive` of it first on PYTHONPATH)."""
    with tempfile.TemporaryDirectory(prefix="envevo-before-") as tmp:
        archive = Path(tmp) / "src.tar"
        subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), ref, "envevo"], check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        env = {**os.environ, "PYTHONPATH": tmp}
        proc = subprocess.run([sys.executable, __file__, "--replay", *map(str, tasks)], env=env, cwd=tmp,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"the replay at {ref} failed:\n{proc.stderr[-3000:]}")
        return json.loads(proc.stdout)


def _table(results: dict[str, dict]) -> str:
    rows = ["| role | " + " | ".join(f"{k} input | {k} output | {k} requests" for k in results) + " |",
            "|---|" + "---|" * (3 * len(results))]
    for role in ROLES:
        rows.append(f"| {role} | " + " | ".join(
            f"{r['roles'][role]['input']:,} | {r['roles'][role]['output']:,} | {r['roles'][role]['requests']}"
            for r in results.values()) + " |")
    per = {k: sum(v["input"] for v in r["roles"].values()) / r["accepted_generations"] for k, r in results.items()}
    per_out = {k: sum(v["output"] for v in r["roles"].values()) / r["accepted_generations"] for k, r in results.items()}
    rows.append("| **per accepted generation** | " + " | ".join(f"**{per[k]:,.0f}** | {per_out[k]:,.0f} | –"
                                                            for k in results) + " |")
    if {"before", "after"} <= results.keys():
        rows.append(f"\ninput tokens per accepted generation, before / after: **{per['before'] / per['after']:.2f}×**")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before-ref", default="8dc7842", help="the commit whose code is 'before'")
    ap.add_argument("--only", choices=["before", "after"])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--replay", nargs="+", help=argparse.SUPPRESS)  # internal: replay these tasks, print JSON
    args = ap.parse_args()
    if args.replay:
        print(json.dumps(_replay([Path(p) for p in args.replay])))
        return
    tasks = _tasks()
    results: dict[str, dict] = {}
    if args.only != "after":
        results["before"] = _run_at(args.before_ref, tasks)
    if args.only != "before":
        sys.path.insert(0, str(ROOT))
        results["after"] = _replay(tasks)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{len(tasks)} tasks ({', '.join(t.name for t in tasks)}), one accepted generation each, "
          "tokens counted with cl100k_base\n")
    print(_table(results))


if __name__ == "__main__":
    main()
