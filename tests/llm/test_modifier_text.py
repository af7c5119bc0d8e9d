"""The text-action Modifier (`[llm.roles.modifier] actions = "text"`) against a server without tool calling.

The Modifier's endpoint is a fake OpenAI-compatible server that answers 400 to any request carrying tools, as vLLM
does when started without --enable-auto-tool-choice; the other roles use a second fake server with tool calling.
One generation of log-forensics runs through the real OpenAI client and the real loop.
"""

import asyncio

from pydantic_ai.models import override_allow_model_requests

from envevo.evolve import EvolveConfig, evolve, start_lineages
from envevo.evolve.engines.llm import build_llm_engine
from envevo.evolve.engines.llm._text_actions import parse_actions
from envevo.llm import LLMSettings
from envevo.store import LineageStore
from envevo.task import load_task
from tests.fakes import log_forensics as lf
from tests.fakes.openai_server import FakeOpenAI, Script, error, final, last_user_text, text

ANCHOR = '    "exfil_ips": ["198.51.100.23", "203.0.113.77"],\n'


class NoToolCalling:
    """A handler in front of a Script: a request with tools gets vLLM's 400, as a server without a tool parser."""

    def __init__(self, script: Script):
        self.script, self.refused = script, 0

    def __call__(self, request: dict):
        if request.get("tools"):
            self.refused += 1
            return error(400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set')
        return self.script(request)


def modifier_turns() -> list:
    new_lines = lf.new_tests().split(ANCHOR, 1)[1].split("\n", 2)
    edit = ANCHOR + new_lines[0] + "\n" + new_lines[1] + "\n"

    def after_reads(request):
        users = [m["content"] for m in request["messages"] if m["role"] == "user"]
        assert "### read instruction.md" in users[1] and "exfil_ips" in users[1]  # the file came back as observation
        assert users[2].startswith("No action found in your reply")  # the reply without a block was told how to act
        return text("Now the solution, the tests and the instruction.\n\n"
                    f"````write solution/solve.sh\n{lf.new_solution()}````\n\n"
                    f"```edit tests/test_outputs.py\n<<<<<<< old\n{ANCHOR}=======\n{edit}>>>>>>> new\n```\n\n"
                    f"````write instruction.md\n{lf.new_instruction()}````\n")

    def finish(request):
        seen = last_user_text(request)
        assert "wrote solution/solve.sh" in seen and "edited tests/test_outputs.py at line" in seen
        return text("All three files carry the new step.\n\n```done\nsolve.sh computes exfil_datasets and "
                    "last_exfil_utc; the tests expect both; the instruction names both.\n```\n")

    return [text("Let me look at the task first.\n\n```list\n```\n\n```read instruction.md\n```\n"),
            text("I have no tools, so I say what I would do, without a block."),
            after_reads, finish]


def test_a_server_without_tool_calling_completes_a_generation_with_text_actions(tmp_path):
    tools_script = Script(**{
        "proposer-extract": [final(lf.extraction()), final(lf.candidate_extraction())],  # the seed, then the candidate
        "judge": [final(lf.task_review()), final(lf.task_review(evolved=True))],
        "proposer-plan": [final(lf.plan(clarified=True))],
        "reviewer": [final(lf.plan_review(accept=True))],
    })
    plain = NoToolCalling(Script(modifier=modifier_turns()))
    with FakeOpenAI(tools_script) as hosted, FakeOpenAI(plain) as vllm:
        settings = LLMSettings(model="openai:fake-model", base_url=hosted.url, timeout_sec=5.0, max_retries=1,
                               max_backoff_sec=0.1,
                               roles={"modifier": {"base_url": vllm.url, "actions": "text"}})
        engine, checks = build_llm_engine(settings, container_shell=False)
        store = LineageStore.open(tmp_path / "run")
        engine.attach_store(store)
        cfg = EvolveConfig(engine="llm", generations=1, seed=2, plan_budget=2, env_budget=1, repeats=1)

        async def main():
            await engine.preflight()
            lids = await start_lineages(store, [("log-forensics", load_task(lf.SEED))], engine, cfg, checks=checks,
                                        verifiers=[])
            return await evolve(store, lids, engine, cfg, checks=checks, verifiers=[])

        with override_allow_model_requests(True):
            statuses = asyncio.run(main())
        modifier_requests = vllm.requests
    assert statuses.get("log-forensics") == "done", store.lineage("log-forensics").reason
    assert plain.refused == 0 and all(not r.get("tools") for r in modifier_requests) and len(modifier_requests) == 4
    v1 = store.version("log-forensics", 1)
    assert v1.verified and v1.L == 4
    task = store.load_version_task(v1.task_hash)
    assert task.read_text("tests/test_outputs.py") == lf.new_tests()
    assert task.read_text("solution/solve.sh") == lf.new_solution()
    assert task.read_text("instruction.md") == lf.new_instruction()
    assert task.files["solution/solve.sh"].executable
    system = modifier_requests[0]["messages"][0]["content"]
    assert "```write PATH" in system and "You have no shell in this run" in system
    assert "modifier" in {t.role for t in store.usage_totals("log-forensics")}
    store.close()


def test_actions_are_parsed_in_order_and_other_code_blocks_are_not_actions():
    reply = ("Plan:\n```python\nprint('not an action')\n```\n```bash\nls /app\n```\n"
             "````write notes/a.md\n# A\n```\ncode\n```\n````\n```done\nok\n```\n")
    actions = parse_actions(reply)
    assert [(a.name, a.arg) for a in actions] == [("bash", ""), ("write", "notes/a.md"), ("done", "")]
    assert actions[1].body == "# A\n```\ncode\n```\n"
