"""`rollout(targets, config)`: k trials per task with any agent, recorded in a run (resumable), summarized."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from envevo.api._config import SandboxConfig, ScaleConfig
from envevo.api._host import Notify, Progress, no_progress, prepare_host, quiet
from envevo.errors import UserError

if TYPE_CHECKING:
    from envevo.rollout import RolloutSummary

#: One answer of a rollout agent's model: room for a long reasoning turn and its commands (the LLM engine's roles
#: get 8k of answer plus 16k of reasoning), far below a runaway's.
DEFAULT_OUTPUT_CAP = 16384


class RolloutConfig(BaseModel):
    """Who rolls out (an agent and its model), how often, where, and where the rollouts are recorded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str = Field("sim-medium", description="a Harbor agent, pkg.mod:Class, or a simulated profile (sim-strong, "
                                                 "sim-medium, sim-weak)")
    model: str | None = Field(None, description="the agent's model, PROVIDER:NAME")
    base_url: str | None = None
    api_key_env: str | None = None
    agent_kwargs: dict[str, Any] = Field(default_factory=dict, description="the agent's options")
    max_output_tokens: int = Field(DEFAULT_OUTPUT_CAP, ge=1, description="output cap on one answer of the agent's "
                                                                         "model; an agent kwarg that sets it wins")
    k: int = Field(8, ge=1, description="rollouts per task")
    run_dir: Path | None = Field(None, description="for task dirs: the run their rollouts are recorded in")
    sandbox: SandboxConfig = SandboxConfig()
    scale: ScaleConfig = ScaleConfig()


class RolloutResult(BaseModel):
    summaries: list[Any]  # RolloutSummary per task
    trials: Path  # where the trial logs are


async def rollout(targets: list[Path], config: RolloutConfig | None = None, *, notify: Notify = quiet,
                  progress: Progress = no_progress) -> RolloutResult:
    """Roll out task dirs (or folders of them), or every verified version of one run dir. Raises UserError for bad
    input, before any container."""
    from envevo._home import private_dir
    from envevo.llm import litellm_model
    from envevo.rollout import check_agent, dir_targets, is_simulated, run_targets
    from envevo.rollout import rollout as run
    from envevo.runtime import with_output_cap
    from envevo.store import LineageStore, RunPaths
    from envevo.task import expand_task_dirs

    config = config or RolloutConfig()
    model = litellm_model(config.model, base_url=config.base_url) if config.model is not None else None
    agent_kwargs = dict(config.agent_kwargs)
    if config.base_url:
        agent_kwargs["base_url"] = config.base_url  # Harbor's names for its model-connection settings
    if config.api_key_env:
        agent_kwargs["model_api_key_name"] = config.api_key_env
    if not is_simulated(config.agent):  # a model that never stops is cut here, as the LLM engine's roles are
        agent_kwargs = with_output_cap(config.agent, agent_kwargs, config.max_output_tokens)
    check_agent(config.agent, model, agent_kwargs)
    mapping, _ = prepare_host(config.sandbox, config.scale, notify)
    is_run = len(targets) == 1 and RunPaths(run_dir=targets[0]).db.is_file()
    if is_run and config.run_dir is not None:
        raise UserError("--run is for task dirs; a RUN dir given as the target records rollouts in its own store")
    store_path = targets[0] if is_run else config.run_dir
    store = LineageStore.open(store_path, create=not is_run, migrate=True) if store_path is not None else None
    try:
        tasks = run_targets(store) if is_run else dir_targets(expand_task_dirs(targets))
        if not tasks:
            raise UserError("no tasks to roll out (a RUN needs verified versions)")
        base = store.run_dir if store is not None else Path("jobs")
        trials = private_dir((base / "rollouts" / f"{datetime.now():%Y%m%d-%H%M%S}").resolve())  # 0700: trial logs
        if mapping.images:  # a base-image rewrite: each task runs from a rewritten copy, recorded under its own hash
            tasks = [t.model_copy(update={"task_dir": _mapped(t.task_dir, config.sandbox.env, mapping, trials, notify)})
                     for t in tasks]
        k, label = config.k, f"rollouts of {config.agent} ({len(tasks)} task(s) × {config.k})"
        with progress(label, len(tasks) * k) as advance:
            summaries: list[RolloutSummary] = await run(
                tasks, config.agent, model, k, env=config.sandbox.env, concurrency=config.sandbox.trial_concurrency,
                trials_dir=trials, store=store, agent_kwargs=agent_kwargs, on_trial=lambda t, r: advance(
                    f"{t.name} → {r.reward if r.reward is not None else r.error_kind.value}"))
    finally:
        if store is not None:
            store.close()
    return RolloutResult(summaries=summaries, trials=trials)


def _mapped(task_dir: Path, env: str, mapping, trials: Path, notify: Notify) -> Path:
    from envevo.sandbox import runnable_copy
    from envevo.task import load_task

    copy, changes = runnable_copy(load_task(task_dir), env, mapping, trials / "_tasks")
    for line in changes:
        notify(f"{task_dir.name}: substituted: {line}")
    return copy
