"""The Modifier's instructions: the prompt file's sections that apply to this run, with the container's facts.

`envevo/llm/prompts/modifier.md` holds every section; a run keeps "Your shell" (filled in from the candidate's
own task.toml: network, compose services, a separate verifier, the timeout) or "Without a shell", keeps "Text
actions" only for the text-action Modifier, and always ends with the rules, which state the request budget.
"""

from __future__ import annotations

import re

from envevo.evolve.engines.llm._sandbox import ShellFacts
from envevo.llm import LLMSettings, load_prompt

DEFAULT_REQUESTS: int = LLMSettings.model_fields["modifier_requests"].default

_HEADING = re.compile(r"^## (.+)$", re.M)


def _sections(text: str) -> tuple[str, dict[str, str]]:
    parts = _HEADING.split(text)
    return parts[0], {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _network(facts: ShellFacts) -> str:
    if facts.network == "no-network":
        return ("It has no internet access: the task forbids it, and the trials run the same way"
                + ("; only the task's own services are reachable." if facts.compose else "."))
    if facts.network == "allowlist":
        hosts = ", ".join(facts.allowed_hosts) or "no host"
        return f"Its network reaches only the task's allowlist ({hosts}), as in the trials."
    return "It has network access, as the task allows; the trials get the same."


def _compose(facts: ShellFacts) -> str:
    if not facts.compose:
        return ""
    others = (f" and its other services ({', '.join(facts.compose_services)}) are reachable by their service names, "
              "as in the trials") if facts.compose_services else ""
    return f"- The task is a compose task: your commands run in its `main` service{others}.\n"


def _verifier(facts: ShellFacts) -> str:
    if not facts.separate_verifier:
        return ""
    return ("- This task has a separate verifier environment (`[verifier] environment_mode = \"separate\"`): in the "
            "trials the tests run in a fresh container built from tests/Dockerfile (or environment/ when there is "
            "none) that sees only the declared artifacts (task.toml `artifacts`), not your container. Running the "
            "tests here runs them in your container instead. Keep the verifier's mode and environment as they are, "
            "and declare every file the tests read that the solution writes: a candidate that does not is rejected "
            "before it is verified.\n")


def _mounts(text_actions: bool) -> str:
    if text_actions:
        return ("Every command gets fresh copies of the workspace's solution/ at /solution and tests/ at /tests.")
    return ("Set mount_solution / mount_tests to copy the workspace's current solution/ to /solution and tests/ "
            "to /tests first (a fresh copy each time), e.g. to run the reference solution and print what it produces.")


def instructions(facts: ShellFacts | None, *, requests: int = DEFAULT_REQUESTS, text_actions: bool = False) -> str:
    """The Modifier prompt for this run: with the shell it really has (or saying it has none)."""
    head, sections = _sections(load_prompt("modifier").instructions)
    keep = ["Your shell" if facts is not None else "Without a shell"]
    if text_actions:
        keep.append("Text actions")
    keep.append("Rules")
    text = head + "".join(f"## {name}\n{sections[name].lstrip(chr(10))}" for name in keep if name in sections)
    if facts is not None:
        text = (text.replace("{network}", _network(facts)).replace("{compose}\n", _compose(facts))
                .replace("{verifier}\n", _verifier(facts)).replace("{mounts}", _mounts(text_actions))
                .replace("{timeout_sec}", f"{facts.timeout_sec:g}"))
    return text.replace("{requests}", str(requests))
