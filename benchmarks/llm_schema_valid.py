"""The share of schema-valid answers per structured role on a real local model, with and without constrained output.

Starts `llama-server` with Gemma 3 270M (Q4_K_M) from `scripts/realmodel-setup`'s cache (as `make test-realmodel`
does, at the lowest CPU priority) and asks each structured role of the LLM engine its real question, built by the
role's own code, `--n` times per output mode:

- `native`: a JSON-schema `response_format`, which llama.cpp enforces with a grammar (constrained);
- `prompted`: the schema in the prompt, the answer parsed as it comes (unconstrained);
- `tool` (with `--modes native,prompted,tool`): the answer as a tool call, envevo's default output mode.

An answer is *schema-valid* when it parses into the role's output type (pydantic), before any of envevo's semantic
checks (quotes found in the files, every rubric criterion judged once): those are not the schema. Output retries are
off, so every request is one sample; an answer cut by the output cap (`--cap`) or the answer's wall-clock cap is
invalid. The roles: extraction (Proposer, `Extraction`), plan (Proposer, `PlanDraft`), review (Reviewer,
`PlanReview`), judge (the rubric verifier, `TaskReview`), and estimator (the llm p_T estimator's judgement,
`{"p": number}` in (0, 1], asked as `envevo.llm.LLMPrior` asks it: raw Chat Completions, 32 tokens; `native` sends
its JSON-schema `response_format`, `prompted` the same request without it, `tool` does not apply), on
`tests/fixtures/hackable/reward_forgery` (a 5-file task) unless `--task` names another.

    ENVEVO_REALMODEL_TESTS= .venv/bin/python benchmarks/llm_schema_valid.py [--n 5] [--cap 768] [--modes native,prompted] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SETUP_DIR = Path(os.environ.get("ENVEVO_REALMODEL_DIR") or Path.home() / ".cache" / "envevo" / "realmodel")
SERVER, GGUF = SETUP_DIR / "bin" / "llama-server", SETUP_DIR / "gemma-3-270m-q4_k_m.gguf"
TEMPLATE = SETUP_DIR / "Qwen-Qwen2.5-7B-Instruct.jinja"
SERVED = "gemma3-270m"
ROLES = ("extraction", "plan", "review", "judge", "estimator")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    missing = [p for p in (SERVER, GGUF, TEMPLATE) if not p.is_file()]
    if missing:
        raise SystemExit(f"run scripts/realmodel-setup first: missing {', '.join(map(str, missing))}")
    port = _free_port()
    with log.open("w") as out:
        proc = subprocess.Popen([str(SERVER), "-m", str(GGUF), "--alias", SERVED, "--host", "127.0.0.1", "--port", str(port),
                                 "--jinja", "--chat-template-file", str(TEMPLATE), "-c", "32768", "-np", "2", "-t", "2"],
                                stdout=out, stderr=subprocess.STDOUT, preexec_fn=lambda: os.nice(19))
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as r:
                if r.status == 200:
                    return proc, base
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"llama-server did not start: {log.read_text()[-1000:]}")
        time.sleep(1)


def questions(task_dir: Path) -> dict[str, tuple[type, str, str, str]]:
    """Per role: (output type, the role's model, instructions, user prompt), as the role's own code builds them."""
    from envevo.evolve._engine import Proposal
    from envevo.evolve.engines.llm import Extraction, PlanDraft, PlanReview, TaskReview, _extract, _propose, _review
    from envevo.llm import default_rubric, load_prompt, render_task
    from envevo.task import load_task
    from envevo.trace import Direction, Effort, Step, Trace

    task = load_task(task_dir)
    before = Trace(goal="write the sum of the integers in /app/numbers.txt to /app/sum.txt", final="/app/sum.txt",
                   steps=(Step(scenario="a text file of integers, one per line", skill="summing numbers in bash"),))
    after = Trace(goal=before.goal, final=before.final,
                  steps=(Step(scenario="a text file of integers, one per line",
                              skill="dropping the lines that are not integers"), *before.steps))
    proposal = Proposal(direction=Direction.LENGTH, effort=Effort.HIGH, before=before, after=after,
                        summary="Insert a filtering step: numbers.txt gains non-integer lines that must be skipped.",
                        plan={"rationale": "A dirty input adds one step before the sum.",
                              "changes": {"instruction": "say non-integer lines are skipped",
                                          "environment": "append 'n/a' and '12abc' to numbers.txt",
                                          "tests": "still expect 5050", "solution": "grep -E '^-?[0-9]+$' first"}})
    plan_rubric, task_rubric = default_rubric("plan"), default_rubric("task").for_seed()
    return {
        "extraction": (Extraction, "proposer", load_prompt("proposer-extract").instructions, _extract._request(task, None)),
        "plan": (PlanDraft, "proposer", load_prompt("proposer-plan").instructions,
                 _propose._request(task, before, Direction.LENGTH, Effort.HIGH, [])),
        "review": (PlanReview, "reviewer", load_prompt("reviewer").instructions.replace("{rubric}", plan_rubric.brief()),
                   _review._request(task, proposal)),
        "judge": (TaskReview, "judge", load_prompt("judge").instructions.replace("{rubric}", task_rubric.brief()),
                  f"Review this task.\n\nThe task's files:\n\n{render_task(task)}"),
    }


def _kind(reason: str) -> str:
    """A failure, in a few words."""
    low = reason.lower()
    for key, kind in (("did not finish one answer", "answer timeout"), ("token limit", "cut by the cap"),
                      ("was cut", "cut by the cap"), ("validation", "invalid JSON/schema"), ("field required", "invalid JSON/schema"),
                      ("invalid json", "invalid JSON/schema"), ("json", "invalid JSON/schema"), ("tool", "no tool call"),
                      ("text", "prose, no structured answer")):
        if key in low:
            return kind
    return re.sub(r"\s+", " ", reason)[:60]


_RUNTIMES: list[Any] = []  # kept to the end: a runtime collected in the next sample's loop closes its client there


async def sample(base: str, mode: str, cap: int, answer_sec: float, q: tuple[type, str, str, str]) -> tuple[bool, str, int, float]:
    """One answer: (schema-valid, why not, output tokens, seconds)."""
    from envevo.llm import LLMRuntime, LLMSettings, RoleFailed, RoleSettings

    output_type, role, instructions, prompt = q
    runtime = LLMRuntime(LLMSettings(model=SERVED, base_url=base + "/v1", output_mode=mode, output_retries=0,
                                     answer_timeout_sec=answer_sec, retry_budget_sec=60, max_backoff_sec=5,
                                     roles={role: RoleSettings(max_output_tokens=cap)}))
    _RUNTIMES.append(runtime)
    agent = runtime.agent(role, output_type, instructions)
    t0 = time.monotonic()
    try:
        await runtime.run(agent, prompt, role=role, request_limit=1)
        ok, why = True, ""
    except RoleFailed as e:
        ok, why = False, _kind(str(e))
    out = sum(r.output_tokens for r in runtime.meter.records)
    return ok, why, out, time.monotonic() - t0


def estimator_sample(base: str, mode: str, answer_sec: float) -> tuple[bool, str, int, float]:
    """One judgement of the llm p_T estimator, as LLMPrior sends it; valid: JSON {"p": number} with p in (0, 1]."""
    from envevo.llm import _reference_prior as rp

    prompt = rp._JUDGE_SKILL.format(goal="write the sum of the integers in a file", scenario="a text file of integers",
                                    label="summing numbers in bash")
    body: dict[str, Any] = {"model": SERVED, "temperature": 0.8, "max_tokens": rp.JUDGE_MAX_TOKENS,
                            "messages": [{"role": "system", "content": rp._JUDGE_SYSTEM}, {"role": "user", "content": prompt}]}
    if mode == "native":
        body["response_format"] = rp._JUDGE_FORMAT
    t0 = time.monotonic()
    req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=answer_sec) as r:
            data = json.load(r)
    except OSError as e:
        return False, f"request failed: {type(e).__name__}", 0, time.monotonic() - t0
    text, out = data["choices"][0]["message"].get("content") or "", data["usage"]["completion_tokens"]
    try:
        p = json.loads(text)["p"]
        ok = isinstance(p, int | float) and 0 < p <= 1
        why = "" if ok else "p outside (0, 1]"
    except (ValueError, KeyError, TypeError):
        ok, why = False, "invalid JSON/schema"
    return ok, why, out, time.monotonic() - t0


def run(base: str, roles: list[str], modes: list[str], n: int, cap: int, answer_sec: float, task_dir: Path,
        progress: Callable[[str], None]) -> list[dict[str, Any]]:
    from pydantic_ai.models import override_allow_model_requests

    qs = questions(task_dir)
    rows = []
    with override_allow_model_requests(True):
        for role in roles:
            row: dict[str, Any] = {"role": role, "n": n}
            for mode in modes:
                if role == "estimator" and mode == "tool":
                    continue
                results = [estimator_sample(base, mode, answer_sec) if role == "estimator"
                           else asyncio.run(sample(base, mode, cap, answer_sec, qs[role])) for _ in range(n)]
                valid = sum(ok for ok, *_ in results)
                failures: dict[str, int] = {}
                for ok, why, *_ in results:
                    if not ok:
                        failures[why] = failures.get(why, 0) + 1
                row[mode] = {"valid": valid, "share": valid / n, "failures": failures,
                             "mean_output_tokens": sum(r[2] for r in results) / n,
                             "mean_seconds": sum(r[3] for r in results) / n}
                progress(f"{role} {mode}: {valid}/{n} valid {failures or ''} "
                         f"({row[mode]['mean_seconds']:.0f} s per answer)")
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=5, help="answers per role and mode")
    ap.add_argument("--cap", type=int, default=768, help="max_output_tokens of every role")
    ap.add_argument("--answer-sec", type=float, default=300, help="answer_timeout_sec")
    ap.add_argument("--roles", default=",".join(ROLES))
    ap.add_argument("--modes", default="native,prompted", help="output modes: native (constrained), prompted, tool")
    ap.add_argument("--task", type=Path, default=ROOT / "tests" / "fixtures" / "hackable" / "reward_forgery")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    roles, modes = args.roles.split(","), args.modes.split(",")
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"llm_schema_valid-{os.getpid()}.log"
    proc, base = start_server(log)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed benchmark stops its server too (finally below)
    t0 = time.monotonic()
    try:
        rows = run(base, roles, modes, args.n, args.cap, args.answer_sec, args.task,
                   lambda s: print(s, file=sys.stderr, flush=True))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    meta = {"date": datetime.now(UTC).strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()} cores, {platform.machine()}",
            "load": os.getloadavg()[0], "model": "Gemma 3 270M Q4_K_M, llama-server", "task": args.task.name,
            "cap": args.cap, "wall_sec": round(time.monotonic() - t0)}
    if args.json:
        print(json.dumps({**meta, "rows": rows}, indent=2))
        return
    print(f"{meta['date']}, {meta['machine']}, load {meta['load']:.1f}, {meta['model']}, task {meta['task']}, "
          f"cap {args.cap} tokens, {meta['wall_sec']} s")
    head = ["role", "n", *[f"valid {m}{' (constrained)' if m == 'native' else ''}" for m in modes]]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [(f"{r[m]['valid']}/{r['n']}" + (f" ({', '.join(f'{k}: {v}' for k, v in r[m]['failures'].items())})"
                                                  if r[m]["failures"] else "")) if m in r else "n/a" for m in modes]
        print("| " + " | ".join([r["role"], str(r["n"]), *cells]) + " |")


if __name__ == "__main__":
    main()
