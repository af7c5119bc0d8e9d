"""Near-miss solutions (mutants) of a task's solve.sh, made on the host without running anything.

- **procedural tasks** (a chain in `[metadata.envevo]`): for every step t, the solution with step t's wrong variant
  (the block's plausible mistake) and the solution with step t skipped;
- **any task**: prefixes of solve.sh cut at its top-level command boundaries (a line where no quote, heredoc,
  bracket or compound command is open and nothing continues the command). A prefix made only of setup (comments,
  `set`, `export`, `cd`, assignments, function definitions) is the empty solution, which invalid-test already runs;
  the full script is not a mutant.

Pure functions: nothing here executes the script.
"""

from __future__ import annotations

import difflib
import re

from pydantic import BaseModel, Field

from envevo.task import Task

SOLVE = "solution/solve.sh"
_DIFF_LINES = 8


class Mutant(BaseModel):
    """One near-miss solution: which step (1-based) it breaks and how, and the script that does it."""

    id: str  # stable within a task: step2-wrong, step2-skip, prefix-3of7, model-1
    kind: str  # wrong | skip | prefix | model
    step: int | None = None
    label: str
    diff: str  # a short summary of what differs from solve.sh
    script: str
    # A procedural step's own identity and checks (envevo/verify/_mutant_keys.py): what lets a parent's kill be reused.
    step_key: str | None = None
    step_checks: list[tuple[str, str]] = []  # (check kind, path) of the step's own checks


def short_diff(before: str, after: str, n: int = _DIFF_LINES) -> str:
    """The changed lines of a unified diff (no headers), at most n, then how many more."""
    lines = [ln for ln in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
             if not ln.startswith(("---", "+++", "@@"))]
    shown = [ln[:160] for ln in lines[:n]]
    if len(lines) > n:
        shown.append(f"… and {len(lines) - n} more changed lines")
    return "\n".join(shown)


# ---- procedural mutants ------------------------------------------------------------------------------------

def procedural_mutants(task: Task) -> list[Mutant] | None:
    """Per step, its wrong variant and its omission; None when the task holds no chain whose reference solution
    is the task's own solve.sh (an edited or foreign task: use `prefix_mutants`)."""
    from envevo.catalog import SCENARIOS, SKILLS, build_blocks, chain_from_task, solve_script

    try:
        chain = chain_from_task(task)
        blocks = build_blocks(chain)
    except Exception:  # noqa: BLE001 - not procedural, or a chain that no longer generates
        return None
    reference = solve_script(chain, blocks=blocks)
    if not task.has(SOLVE) or task.read_text(SOLVE) != reference:
        return None
    from envevo.verify._mutant_keys import step_keys

    keys = step_keys(task, chain, blocks)
    out: list[Mutant] = []
    for b in blocks:
        own = [(c["check"], c["path"]) for c in b.checks]
        where = f"step {b.index + 1} ({SKILLS[b.skill].title} in {SCENARIOS[b.scenario].title}; {b.scenario}/{b.skill})"
        if b.wrong_sh.strip() != b.oracle_sh.strip():
            out.append(Mutant(id=f"step{b.index + 1}-wrong", kind="wrong", step=b.index + 1,
                              label=f"{where} done with its wrong variant",
                              diff=short_diff(b.oracle_sh, b.wrong_sh),
                              script=solve_script(chain, wrong={b.index}, blocks=blocks),
                              step_key=keys.get((b.index, "wrong")), step_checks=own))
        dropped = b.oracle_sh.splitlines()
        out.append(Mutant(id=f"step{b.index + 1}-skip", kind="skip", step=b.index + 1, label=f"{where} skipped",
                          diff=f"step {b.index + 1}'s {len(dropped)} line(s) left out, from: {dropped[0][:120] if dropped else ''}",
                          script=solve_script(chain, skip={b.index}, blocks=blocks),
                          step_key=keys.get((b.index, "skip")), step_checks=own))
    return out


# ---- prefix mutants ----------------------------------------------------------------------------------------

_OPEN = {"if": "fi", "case": "esac", "do": "done", "{": "}"}
_CLOSE = {"fi", "esac", "done", "}"}
# Words after which the next word is again in command position.
_LEAD = {"then", "do", "else", "elif", "if", "while", "until", "!", "time", "{", "in"}
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_0-9.-]+)\2")
_SETUP = re.compile(r"^(set|shopt|export|cd|umask|trap|declare|typeset|readonly|local|:|true|pushd|popd)\b"
                    r"|^[A-Za-z_][A-Za-z_0-9]*=\S*\s*$"
                    r"|^(function\s+)?[A-Za-z_][A-Za-z_0-9:.-]*\s*\(\)\s*\{?|^function\s+\w+")


class _Scan:
    """The state of a scan of bash source, line by line: open quotes, brackets, compound commands, heredocs."""

    def __init__(self) -> None:
        self.quote = ""  # ', " or ` while one is open
        self.parens = 0
        self.blocks: list[str] = []  # closing words expected (fi, done, esac, })
        self.heredocs: list[tuple[str, bool]] = []  # (delimiter, strip tabs) pending after this line
        self.in_heredoc: tuple[str, bool] | None = None
        self.cont = False  # the line ended in \ or an operator that continues the command

    @property
    def top(self) -> bool:
        return not (self.quote or self.parens or self.blocks or self.heredocs or self.in_heredoc or self.cont)

    def line(self, text: str) -> None:
        if self.in_heredoc is not None:
            delim, strip = self.in_heredoc
            if (text.lstrip("\t") if strip else text) == delim:
                self.in_heredoc = self.heredocs.pop(0) if self.heredocs else None
            return
        self._scan(text)
        if self.heredocs and not self.quote:
            self.in_heredoc = self.heredocs.pop(0)

    def _scan(self, s: str) -> None:
        i, n, cmd = 0, len(s), True
        pending = False  # the last token was |, ||, && or |&: the command goes on on the next line
        self.cont = False
        while i < n:
            c = s[i]
            if self.quote:
                if c == "\\" and self.quote != "'":
                    i += 2
                    continue
                if c == self.quote:
                    self.quote = ""
                i += 1
                continue
            if c == "\\":
                if i == n - 1:
                    self.cont = True
                    return
                i, pending = i + 2, False
                continue
            if c in "'\"`":
                self.quote, cmd, pending = c, False, False
                i += 1
                continue
            if c == "#" and (i == 0 or s[i - 1] in " \t;&|()"):
                break
            if c == "$" and s[i + 1:i + 2] == "{":
                depth, i = 1, i + 2
                while i < n and depth:
                    depth += {"{": 1, "}": -1}.get(s[i], 0)
                    i += 1
                cmd = pending = False
                continue
            if s.startswith("<<", i) and not s.startswith("<<<", i) and (m := _HEREDOC.match(s, i)):
                self.heredocs.append((m.group(3), m.group(1) == "-"))
                i, cmd, pending = m.end(), False, False
                continue
            if c in "()":
                self.parens = self.parens + 1 if c == "(" else max(0, self.parens - 1)
                i, cmd, pending = i + 1, True, False  # after ")": a function body's "{" may follow
                continue
            if c in ";&|":
                op = re.match(r";;&|;;|;&|\|\||&&|\|&|[;&|]", s[i:])
                token = op.group(0) if op else c
                pending = token in ("|", "||", "&&", "|&")
                i, cmd = i + len(token), True
                continue
            if c in " \t":
                i += 1
                continue
            m = re.match(r"[^\s;&|()<>'\"`\\$]+", s[i:])
            word = m.group(0) if m else c
            if cmd:
                if word in _OPEN:
                    self.blocks.append(_OPEN[word])
                elif word in _CLOSE and self.blocks and self.blocks[-1] == word:
                    self.blocks.pop()
                cmd = word in _LEAD or word in _CLOSE or ("=" in word and not word.startswith("="))
            i, pending = i + len(word), False
        self.cont = pending


def top_level_commands(script: str) -> list[tuple[int, int]]:
    """(first line, end line) per top-level command of a bash script, 0-based and end-exclusive; blank lines and
    comments between commands belong to no command."""
    scan = _Scan()
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for k, text in enumerate(script.splitlines()):
        if start is None and scan.top:
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            start = k
        scan.line(text)
        if start is not None and scan.top:
            spans.append((start, k + 1))
            start = None
    if start is not None:  # an unterminated construct runs to the end
        spans.append((start, len(script.splitlines())))
    return spans


# Commands that only read or report (and self-checks: a word naming a test or a check), with no redirection to a
# file: cutting them off changes nothing the tests could see, so a prefix that drops only these is the full solution.
_READ_ONLY = re.compile(r"^(echo|printf|cat|ls|pwd|true|:|exit|head|tail|wc|date|sleep|sync|stat|file|tree|du|df|"
                        r"diff|cmp|grep|jq|sqlite3\s+\S+\s+['\"]?select|git\s+(log|status|show|diff|rev-parse|branch)\b)\b",
                        re.IGNORECASE)
_SELF_CHECK = re.compile(r"(^|[\s/_.-])(test|tests|check|verify|unittest|pytest)($|[\s_.-])")
_WRITES = re.compile(r"(?<![0-9&])>(?!\s*/dev/null)|\btee\b|-delete\b|-exec\b|\bsed\s+-i")


def no_effect(command: str) -> bool:
    """A command that reads, reports or checks, and writes nothing (cat, ls, echo, git log, make test, …)."""
    text = command.strip()
    if "\n" in text or _WRITES.search(text):
        return False
    return bool(_READ_ONLY.match(text) or _SELF_CHECK.search(text.split("|")[0]))


def is_setup(command: str) -> bool:
    """A command that prepares but does nothing a test could see (set, export, cd, an assignment, a function)."""
    return bool(_SETUP.match(command.strip()))


def prefix_mutants(script: str) -> list[Mutant]:
    """solve.sh cut after each top-level command but the last; prefixes of setup alone are left out, and so are
    prefixes that drop only commands that write nothing (a closing `cat`, `git log`, `make test`): those are the full
    solution."""
    lines = script.splitlines()
    spans = top_level_commands(script)
    effect = [not no_effect("\n".join(lines[a:b])) for a, b in spans]
    out: list[Mutant] = []
    work = 0  # commands so far that do more than set up
    for k, (a, b) in enumerate(spans[:-1], 1):
        work += not is_setup("\n".join(lines[a:b]))
        if not work or not any(effect[k:]):
            continue
        prefix = "\n".join(lines[:b]) + "\n"
        left = spans[k:]
        first = lines[left[0][0]].strip()[:120]
        out.append(Mutant(id=f"prefix-{k}of{len(spans)}", kind="prefix", step=k,
                          label=f"solve.sh cut after command {k} of {len(spans)}",
                          diff=f"the last {len(left)} command(s) left out, from line {left[0][0] + 1}: {first}",
                          script=prefix))
    return out


# ---- model-written mutants ---------------------------------------------------------------------------------

class WrittenMutant(BaseModel):
    """A near-miss solution a model wrote from the task's plan: one step done with a common mistake."""

    step: int = Field(ge=1, description="the step (1-based, as the instruction numbers them) done wrong")
    mistake: str = Field(description="the common mistake made in that step, in one sentence")
    script: str = Field(description="the complete solve.sh, identical to the reference except for that step")


def normalised(script: str) -> str:
    """The script without comments, blank lines and whitespace differences: what a copy has in common."""
    out = []
    for line in script.splitlines():
        text = line.strip()
        if text.startswith("#"):
            continue
        text = re.sub(r"\s+#[^'\"`]*$", "", text)  # a trailing comment with no quote in it
        if text:
            out.append(" ".join(text.split()))
    return "\n".join(out)


def shell_problem(script: str) -> str | None:
    """Why `script` cannot be bash, by a pure-python scan (nothing runs on the host): an unclosed quote, bracket,
    compound command or heredoc, a dangling continuation; None when it parses as far as the scan sees."""
    if "\x00" in script or not normalised(script):
        return "it is empty or binary"
    scan = _Scan()
    for text in script.splitlines():
        scan.line(text)
    if scan.quote:
        return f"a {scan.quote} quote is never closed"
    if scan.in_heredoc or scan.heredocs:
        return "a heredoc is never ended"
    if scan.blocks:
        return f"a compound command never reaches its {scan.blocks[-1]}"
    if scan.parens:
        return "a ( is never closed"
    if scan.cont:
        return "the last command continues past the end"
    return None


def model_mutants(reference: str, written: list[WrittenMutant], taken: list[Mutant]) -> tuple[list[Mutant], list[str]]:
    """The written mutants that are real variants of `reference` (and of each other and of `taken`), as Mutants;
    and why each other one was rejected."""
    seen = {normalised(reference): "a copy of solve.sh"} | {normalised(m.script): f"the same as {m.id}" for m in taken}
    out: list[Mutant] = []
    rejected: list[str] = []
    for k, w in enumerate(written, 1):
        mid = f"model-{k}"
        problem = shell_problem(w.script)
        same = seen.get(normalised(w.script))
        if problem is not None or same is not None:
            why = f"not bash: {problem}" if problem is not None else f"{same} once comments and whitespace are dropped"
            rejected.append(f"model mutant {k} (step {w.step}) rejected: {why}")
            continue
        seen[normalised(w.script)] = f"the same as {mid}"
        script = w.script if w.script.endswith("\n") else w.script + "\n"
        out.append(Mutant(id=mid, kind="model", step=w.step,
                          label=f"step {w.step} done with a common mistake (model-written): {w.mistake.strip()[:200]}",
                          diff=short_diff(reference, script), script=script))
    return out, rejected


def task_mutants(task: Task) -> tuple[list[Mutant], str]:
    """The task's mutants and where they come from ('procedural', 'prefix', or why there are none)."""
    mutants = procedural_mutants(task)
    if mutants is not None:
        return mutants, "procedural"
    if not task.has(SOLVE):
        return [], f"no mutants: the task has no {SOLVE}"
    try:
        script = task.read_text(SOLVE)
    except UnicodeDecodeError:
        return [], f"no mutants: {SOLVE} is not text"
    mutants = prefix_mutants(script)
    if not mutants:
        return [], f"no mutants: {SOLVE} has no top-level command boundary with work before it (one command)"
    return mutants, "prefix"
