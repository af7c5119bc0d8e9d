"""Role prompts, shipped as package data (envevo/llm/prompts/*.md), each with a version.

A prompt file starts with TOML front matter between `+++` lines naming its role and version. The version a
lineage used is recorded with every plan and every version's metadata as `<version>+<sha8>`: the digest
catches an edited prompt whose version was not bumped.
"""

from __future__ import annotations

import hashlib
import tomllib
from functools import cache
from importlib import resources

from pydantic import BaseModel

from envevo.llm._errors import LLMConfigError

PROMPT_NAMES = ("proposer-extract", "proposer-plan", "reviewer", "modifier", "judge", "rubric-learn")


class Prompt(BaseModel):
    name: str
    version: str
    body: str

    @property
    def tag(self) -> str:
        return f"{self.version}+{hashlib.sha256(self.body.encode()).hexdigest()[:8]}"

    @property
    def instructions(self) -> str:
        # The first line names role and version, so a transcript (or a scripted test server) can tell them apart.
        return f"envevo-role: {self.name} (prompt {self.tag})\n\n{self.body.strip()}\n"


def parse_prompt(name: str, text: str) -> Prompt:
    head, sep, body = text.removeprefix("+++\n").partition("\n+++\n")
    if not text.startswith("+++\n") or not sep:
        raise LLMConfigError(f"prompt {name}: missing the +++ front matter with role and version")
    meta = tomllib.loads(head)
    if meta.get("role") != name or not meta.get("version"):
        raise LLMConfigError(f"prompt {name}: front matter must set role = {name!r} and a version")
    return Prompt(name=name, version=str(meta["version"]), body=body)


@cache
def load_prompt(name: str) -> Prompt:
    if name not in PROMPT_NAMES:
        raise LLMConfigError(f"no prompt named {name!r}")
    text = resources.files("envevo.llm.prompts").joinpath(f"{name}.md").read_text(encoding="utf-8")
    return parse_prompt(name, text)


def prompt_versions() -> dict[str, str]:
    """Every role prompt's tag: what a lineage records."""
    return {n: load_prompt(n).tag for n in PROMPT_NAMES}
