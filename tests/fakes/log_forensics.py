"""A realistic scripted generation for the hand-written seed examples/seeds/log-forensics.

What a capable model would answer at each role, written out: ξ_E with verbatim evidence; a length plan that
adds a dependent fourth step (which datasets the stolen session exfiltrated, and when the last export was);
a Reviewer that first rejects the plan as ambiguous, then accepts the clarified one; a Modifier that inspects
the task, tries (and is refused) a write outside the task dir, checks the logs inside the container, edits
solution, tests and instruction, and runs the new solution in the container; a judge that passes the result.

The new expected values were computed by running the new solution in the seed's container.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from tests.fakes.openai_server import Script, final, tool_calls

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "seeds" / "log-forensics"

NEW_KEYS = {"exfil_datasets": ["customers", "invoices", "orders"], "last_exfil_utc": "2024-03-13T20:16:17Z"}

STEPS = [
    ("gzip-rotated nginx access logs in local time", "count failed logins per client IP"),
    ("JSON-lines application log in UTC", "join request ids to find the user and session of a login"),
    ("export requests across client IPs", "filter by session id and sum response bytes"),
]
NEW_STEP = ("the stolen session's export records", "collect exfiltrated dataset names and the last export time")
GOAL = "Reconstruct an account takeover and data exfiltration from rotated web and application logs"
FINAL = "a JSON incident report at /app/incident/report.json"


def extraction() -> dict:
    evidence = [
        [{"file": "instruction.md", "quote": "the client IP with the most failed login attempts"},
         {"file": "solution/solve.sh", "quote": "# Step 1: attacker = IP with the most failed logins"}],
        [{"file": "instruction.md", "quote": "the account name in the first successful login"},
         {"file": "solution/solve.sh",
          "quote": "# Step 2: its first successful login -> user + session (from the app log, joined on rid)"}],
        [{"file": "instruction.md", "quote": "made with that session, from any IP, that returned HTTP 200"},
         {"file": "tests/test_outputs.py", "quote": '"exfil_bytes": 17682945,'}],
    ]
    return {"goal": GOAL, "final": FINAL,
            "steps": [{"scenario": s, "skill": k, "evidence": ev} for (s, k), ev in zip(STEPS, evidence, strict=True)]}


def plan(clarified: bool) -> dict:
    steps = [{"scenario": s, "skill": k} for s, k in [*STEPS, NEW_STEP]]
    last = ("the UTC time of the last of those successful exports, formatted YYYY-MM-DDTHH:MM:SSZ, truncated to "
            "whole seconds" if clarified else "when the exfiltration ended")
    return {
        "rationale": "A fourth step that only works once the stolen session is known: the solver must go back to the "
                     "application log, map the session's successful exports to their dataset names (a failed export "
                     "must not count) and find when the exfiltration ended. It lengthens the dependency chain by one "
                     "pair; everything stays deterministic and offline.",
        "after": steps,
        "final": FINAL,
        "changes": {
            "instruction": f"Add two report keys: exfil_datasets (the distinct dataset names of those successful "
                           f"export requests, sorted ascending) and last_exfil_utc ({last}).",
            "environment": "unchanged",
            "tests": "Expect the two new keys with their exact values; the key set grows accordingly.",
            "solution": "After step 3, collect the dataset field of the session's successful exports from the app "
                        "log and the maximum UTC timestamp among them; write both keys.",
        },
        "summary": "length: insert (stolen session's export records, collect datasets and last export time) after step 3",
    }


CRITERIA = ["realizes_direction", "feasible_offline", "verifiable_unambiguous", "difficulty_via_lever",
            "consistent_components", "not_trivial_renaming"]


def plan_review(accept: bool) -> dict:
    reasons = {
        "realizes_direction": "ξ′ keeps the three pairs and inserts a fourth that depends on the session from step 2.",
        "feasible_offline": "Only the existing logs and python3 are needed; nothing is fetched.",
        "verifiable_unambiguous": "Both new values are exact and checkable." if accept else
        "'when the exfiltration ended' has no format and does not say whether the failed export counts; "
        "two solvers could write different values.",
        "difficulty_via_lever": "The new step adds a join back into the app log: a longer chain, not vaguer wording.",
        "consistent_components": "Instruction, tests and solution all gain the same two keys.",
        "not_trivial_renaming": "A new computation, not a rename.",
    }
    verdicts = [{"name": n, "reason": reasons[n], "verdict": "pass" if accept or n != "verifiable_unambiguous" else "fail"}
                for n in CRITERIA]
    feedback = "Accept." if accept else ("State the exact format of last_exfil_utc (UTC, YYYY-MM-DDTHH:MM:SSZ, whole "
                                         "seconds) and that only exports that returned HTTP 200 count.")
    return {"criteria": verdicts, "feedback": feedback}


def _task_criteria(evolved: bool) -> list[str]:
    from envevo.llm import default_rubric

    rubric = default_rubric("task")
    return [c.name for c in (rubric if evolved else rubric.for_seed()).criteria]


TASK_CRITERIA = _task_criteria(evolved=False)  # what the judge asks of a seed: Harbor's rubric
EVOLVED_CRITERIA = _task_criteria(evolved=True)  # of a candidate: plus realizes_plan, consistent_components, drift


def task_review(fail: str | None = None, evolved: bool = False) -> dict:
    """The judge's verdicts on a seed (or, `evolved`, on a candidate against its parent): all pass but `fail`."""
    return {"criteria": [{"name": n, "reason": f"checked {n.replace('_', ' ')} against the files",
                          "verdict": "fail" if n == fail else ("n/a" if n == "pinned_dependencies" else "pass")}
                         for n in (EVOLVED_CRITERIA if evolved else TASK_CRITERIA)]}


def candidate_extraction() -> dict:
    """ξ re-extracted from the accepted candidate: ξ′, every pair backed by the candidate's own files."""
    out = extraction()
    out["steps"].append({"scenario": NEW_STEP[0], "skill": NEW_STEP[1], "evidence": [
        {"file": "instruction.md", "quote": "the distinct `dataset` names, from the application log, of those requests"},
        {"file": "tests/test_outputs.py", "quote": '"last_exfil_utc": "2024-03-13T20:16:17Z",'}]})
    return out


# ---- the Modifier's edits ------------------------------------------------------------------------------------
def new_instruction() -> str:
    text = (SEED / "instruction.md").read_text()
    anchor = ("- `exfil_ips` (array of strings): the distinct client IPs that made those requests, "
              "sorted in ascending string order.\n")
    assert anchor in text
    added = ("- `exfil_datasets` (array of strings): the distinct `dataset` names, from the application log, of those "
             "requests, sorted in ascending string order.\n"
             "- `last_exfil_utc` (string): the time of the last of those requests in UTC, formatted "
             "`YYYY-MM-DDTHH:MM:SSZ` and truncated to whole seconds.\n")
    return text.replace(anchor, anchor + added)


def new_tests() -> str:
    text = (SEED / "tests" / "test_outputs.py").read_text()
    anchor = '    "exfil_ips": ["198.51.100.23", "203.0.113.77"],\n'
    assert anchor in text
    added = ('    "exfil_datasets": ["customers", "invoices", "orders"],\n'
             '    "last_exfil_utc": "2024-03-13T20:16:17Z",\n')
    return text.replace(anchor, anchor + added)


def new_solution() -> str:
    text = (SEED / "solution" / "solve.sh").read_text()
    a1 = "report = {\n"
    a2 = '    "exfil_ips": sorted({a["ip"] for a in good}),\n'
    assert a1 in text and a2 in text
    text = text.replace(a1, "# Step 4: what was taken, and when the exfiltration ended\n"
                            'datasets = sorted({app_by_rid[a["rid"]]["dataset"] for a in good})\n'
                            'last = max(a["ts"] for a in good)\n' + a1, 1)
    return text.replace(a2, a2 + '    "exfil_datasets": datasets,\n'
                                 '    "last_exfil_utc": last.strftime("%Y-%m-%dT%H:%M:%SZ"),\n', 1)


def modifier_turns() -> list[list[tuple[str, dict]]]:
    """The Modifier's tool calls, one list per model turn (the structured answer comes after)."""
    return [
        [("list_files", {})],
        [("read_file", {"path": "instruction.md"}), ("read_file", {"path": "tests/test_outputs.py"}),
         ("read_file", {"path": "solution/solve.sh"})],
        [("write_file", {"path": "../notes.txt", "content": "scratch notes"})],  # refused: outside the task dir
        [("run_in_container", {"command": "zcat -f /app/logs/app/app.log* | grep -m2 '\"event\": \"export\"'"})],
        [("write_file", {"path": "solution/solve.sh", "content": new_solution()})],
        [("run_in_container", {"command": "bash /solution/solve.sh >/dev/null && cat /app/incident/report.json",
                               "mount_solution": True})],
        [("write_file", {"path": "tests/test_outputs.py", "content": new_tests()}),
         ("write_file", {"path": "instruction.md", "content": new_instruction()})],
    ]


MODIFIER_SUMMARY = {"summary": "solution/solve.sh: step 4 computes exfil_datasets and last_exfil_utc; "
                               "tests/test_outputs.py: expects both; instruction.md: documents both keys."}


def hacker_turns(sessions: int) -> list:
    """The red team's LLM hacker, which runs on the run's model: per verification with the red team on, one look
    around the sandbox and no hack found."""
    one = [tool_calls(("run", {"command": "ls -la /app /logs"})),
           final({"found": False, "summary": "nothing the agent can write reaches the tests' verdict"})]
    return one * sessions


def openai_script(*, run_verifiers: bool = False, hacker_sessions: int = 2) -> Script:
    """One whole generation for the fake OpenAI server: ξ_E, a plan the Reviewer rejects as ambiguous and then
    accepts clarified, the Modifier's turns (with a `run_verifiers` call before its summary if asked), a judge
    that passes the seed and the result, and the LLM hacker's attempts (the seed's gate and the candidate's)."""
    modifier = [tool_calls(*turn) for turn in modifier_turns()]
    if run_verifiers:
        modifier.append(tool_calls(("run_verifiers", {})))
    return Script(**{
        "hacker": hacker_turns(hacker_sessions),
        "proposer-extract": [final(extraction()), final(candidate_extraction())],  # the seed, then the candidate
        "judge": [final(task_review()), final(task_review(evolved=True))],
        "proposer-plan": [final(plan(clarified=False)), final(plan(clarified=True))],
        "reviewer": [final(plan_review(accept=False)), final(plan_review(accept=True))],
        "modifier": [*modifier, final(MODIFIER_SUMMARY)],
    })


def shared_seed(dest: Path) -> Path:
    """SEED as it would be published for Harbor's default verifier (most public tasks): no separate verifier
    environment and no declared artifacts, so its tests run in the agent's own container."""
    shutil.copytree(SEED, dest)
    toml = dest / "task.toml"
    kept = [ln for ln in toml.read_text().splitlines()
            if not ln.startswith(("artifacts =", "environment_mode =", "# "))]
    toml.write_text("\n".join(kept) + "\n")
    config = tomllib.loads(toml.read_text())
    assert "artifacts" not in config and "environment_mode" not in config["verifier"]
    return dest
