"""k rollouts per task with any Harbor agent (or a simulated profile), recorded in a lineage store, resumable."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from envevo.errors import UserError
from envevo.rollout._profiles import PROFILES, is_simulated
from envevo.rollout._stats import RolloutSummary, infrastructure_reasons, summarize
from envevo.runtime import DEFAULT_ENGINE, DRIVEN_AGENT, TrialOutcome
from envevo.store import NewRollout

# Simulated profiles run as runtime's driven agent with the simulated driver (envevo/rollout/agents.py).
SIM_AGENT = DRIVEN_AGENT
SIM_DRIVER = "envevo.rollout.agents:SimulatedDriver"
SIM_MODEL = "simulation"


def sim_agent_kwargs(chain: dict, profile: str | dict, seed: int, **options) -> dict:
    """The agent kwargs of a simulated trial: the driver, and its options (e.g. p_step)."""
    return {"driver": SIM_DRIVER, "options": {"chain": chain, "profile": profile, "seed": seed, **options}}


class Target(BaseModel):
    """A task to roll out: a dir, its content hash, and where it sits in a run (if it does)."""

    name: str
    task_dir: Path
    task_hash: str
    lineage: str | None = None
    generation: int | None = None


def run_targets(store, verified_only: bool = True) -> list[Target]:
    """Every (verified) version of every lineage in a run."""
    return [Target(name=f"{lin.id}@{v.generation}", task_dir=store.task_dir(v.task_hash), task_hash=v.task_hash,
                   lineage=lin.id, generation=v.generation)
            for lin in store.lineages() for v in store.versions(lin.id) if v.verified or not verified_only]


def dir_targets(paths: Sequence[Path]) -> list[Target]:
    from envevo.task import load_task

    out = []
    for p in paths:
        task = load_task(p)
        out.append(Target(name=task.name, task_dir=Path(p), task_hash=task.content_hash()))
    return out


def agent_label(agent: str, model: str | None) -> tuple[str, str | None]:
    """(agent, model) as recorded: simulated profiles record the model as 'simulation'."""
    if is_simulated(agent):
        if agent not in PROFILES:
            raise UserError(f"unknown simulated agent {agent!r}; choose one of: {', '.join(PROFILES)}")
        return agent, SIM_MODEL
    return agent, model


def parse_agent_kwargs(items: Sequence[str]) -> dict:
    """`key=value` strings as agent kwargs; a value that parses as JSON is taken as JSON (numbers, booleans, objects)."""
    import json

    kwargs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise UserError(f"--agent-kwarg {item!r} is not key=value (e.g. max_turns=50, temperature=0.7)")
        try:
            kwargs[key.strip()] = json.loads(value)
        except ValueError:
            kwargs[key.strip()] = value
    return kwargs


def check_agent(agent: str, model: str | None, agent_kwargs: dict | None = None) -> None:
    """One clear UserError, before any sandbox starts, for an agent config Harbor would reject in every trial."""
    from envevo.runtime import TrialSpec
    from envevo.runtime import check_agent as check

    if is_simulated(agent):
        if agent_kwargs:
            raise UserError(f"{agent} is a simulated profile: agent kwargs, --base-url and --api-key-env are for real agents")
        return
    try:
        check(TrialSpec(task_dir=Path("."), agent=agent, model=model, trials_dir=Path("."), agent_kwargs=agent_kwargs or {}))
    except ValueError as exc:
        message = str(exc).removeprefix(f"{agent}: ")
        if model is None and "model_name is required" in message:
            message = "needs a model: pass --model, e.g. openai/<model name>"
        raise UserError(f"agent {agent}: {message}") from None


async def probe_endpoint(model: str | None, agent_kwargs: dict | None = None) -> None:
    """One `GET /models` at a user's OpenAI-compatible endpoint (an openai/… or hosted_vllm/… model with a base_url):
    it answers, takes the key and serves the model. Otherwise every trial would fail on it, counted as the agent's fail."""
    kwargs = agent_kwargs or {}
    provider, _, name = (model or "").partition("/")
    if not kwargs.get("base_url") or provider not in ("openai", "hosted_vllm") or not name:
        return
    from envevo.llm import ModelSpec, preflight

    try:
        await preflight([ModelSpec(provider="openai", name=name, base_url=kwargs["base_url"],
                                   api_key_env=kwargs.get("model_api_key_name"))])
    except UserError as exc:  # it names the model the LLM engine's way (openai:name); say it as given here
        raise UserError(str(exc).replace(f"openai:{name}", str(model))) from None


def _spec(t: Target, agent: str, model: str | None, k: int, env: str, trials_dir: Path, agent_kwargs: dict | None = None):
    from envevo.catalog import derive_seed
    from envevo.runtime import TrialSpec
    from envevo.task import load_task

    if not is_simulated(agent):
        return TrialSpec(task_dir=t.task_dir, agent=agent, model=model, env=env, trials_dir=trials_dir,
                         agent_kwargs=dict(agent_kwargs or {}))
    meta = load_task(t.task_dir).envevo_metadata
    if meta.get("engine") != "procedural" or not isinstance(meta.get("chain"), dict):
        raise UserError(f"{t.name}: simulated agents act only on procedural tasks (no chain in [metadata.envevo]); "
                        "use a real agent such as terminus-2")
    return TrialSpec(task_dir=t.task_dir, agent=SIM_AGENT, model=None, env=env, trials_dir=trials_dir,
                     agent_kwargs=sim_agent_kwargs(meta["chain"], agent, derive_seed(t.task_hash, agent, k)))


def reported_tokens(o: TrialOutcome) -> TrialOutcome:
    """A real agent's outcome with tokens it did not count as unknown (None), not free: a model call has a prompt, so
    0 input tokens means the harness counted none (terminus-2 starts its counters at 0 and adds only the usage the
    server returned). Its cost is then unknown too, unless the harness priced something."""
    if o.n_input_tokens:
        return o
    return o.model_copy(update={"n_input_tokens": None, "n_output_tokens": o.n_output_tokens or None,
                                "cost_usd": o.cost_usd or None})


def pending(targets: Sequence[Target], agent: str, model: str | None, k: int, store=None) -> list[tuple[Target, int]]:
    """(target, index) pairs still to run: recorded rollouts count, unless infrastructure failed them."""
    todo = []
    for t in targets:
        done = set()
        if store is not None:
            done = {r.k for r in store.rollouts(t.task_hash, agent=agent, model=model or "")
                    if r.error_kind != "infrastructure_error"}
        todo += [(t, i) for i in range(k) if i not in done]
    return todo


async def rollout(targets: Sequence[Target], agent: str, model: str | None, k: int, *, env: str = DEFAULT_ENGINE,
                  concurrency: int = 2, trials_dir: Path, store=None, agent_kwargs: dict | None = None,
                  on_trial: Callable[[Target, TrialOutcome], None] | None = None) -> list[RolloutSummary]:
    """Run the missing rollouts, record each as it finishes (so a kill loses only trials in flight), summarize.

    `agent_kwargs` go to a real Harbor agent (e.g. terminus-2's max_turns); the connection settings `base_url`
    and `model_api_key_name` (the variable holding the API key) among them reach Harbor's AgentConfig.
    """
    from envevo.runtime import run_trials

    agent, model = agent_label(agent, model)
    todo = pending(targets, agent, model, k, store)
    if todo:
        check_agent(agent, model, agent_kwargs)
        await probe_endpoint(model, agent_kwargs)
    specs = [_spec(t, agent, model, i, env, trials_dir / t.task_hash[:12], agent_kwargs) for t, i in todo]
    fresh: dict[str, list[TrialOutcome]] = {}

    async def done(j: int, o: TrialOutcome) -> None:
        t, i = todo[j]
        if model is not None and not is_simulated(agent):  # a model agent (oracle, nop and scripts spend nothing)
            o = reported_tokens(o)
        fresh.setdefault(t.task_hash, []).append(o)
        if store is not None:  # recorded off the event loop: a commit waits on fsync, trials keep running
            await asyncio.to_thread(store.add_rollout, NewRollout(
                task_hash=t.task_hash, agent=agent, k=i, model=model, reward=o.reward, turns=o.turns,
                input_tokens=o.n_input_tokens, output_tokens=o.n_output_tokens, cost_usd=o.cost_usd,
                duration_s=o.timings.total, error_kind=o.error_kind.value, simulated=is_simulated(agent),
                trial_dir=o.trial_dir,
            ))
        if on_trial is not None:
            on_trial(t, o)

    if specs:
        await run_trials(specs, concurrency=concurrency, retries=1, on_done=done)
    summaries = []
    for t in targets:
        rows = store.rollouts(t.task_hash, agent=agent, model=model or "") if store is not None else fresh.get(t.task_hash, [])
        rows = [r for r in rows if getattr(r, "k", 0) < k]
        s = summarize(t.name, rows, task_hash=t.task_hash, lineage=t.lineage, generation=t.generation,
                      agent=agent, model=model, simulated=is_simulated(agent))
        if s.infrastructure_errors and not s.infrastructure_reasons:  # store rows keep no message; this run's do
            s.infrastructure_reasons = infrastructure_reasons(o for o in fresh.get(t.task_hash, [])
                                                              if o.error_kind.value == "infrastructure_error")
        summaries.append(s)
    return summaries
