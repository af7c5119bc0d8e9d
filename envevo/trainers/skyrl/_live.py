"""SkyRL 0.4: envevo's own generator, each rollout a live trial verified with the task's own verifier mode.

SkyRL's trainer calls ``await generator.generate(input_batch)`` (``skyrl.train.generators.base``: a
``GeneratorInput`` in, a ``GeneratorOutput`` out, same order). :class:`EnvevoLiveGenerator` implements that
contract on envevo's runtime, with no Harbor generator from SkyRL's repository: for each prompt it starts a live
trial of the row's task (``env_extras["data_source"]``, the task dir :class:`~envevo.trainers.skyrl.EnvevoHarborDataset`
puts there), asks the policy through SkyRL's ``inference_engine_client.generate`` for a turn, runs the first
```bash block of the reply in the task's sandbox, shows the output as the next user turn, and stops when a reply
has no command or ``max_turns`` is reached. Then the trial verifies as ``envevo verify`` would: a separate verifier
container sees only the artifacts, collect hooks read the stopped agent container, no network where the task says so.

Tokens: the prompt is the chat template of the instruction; the response is every assistant turn's token ids
(loss mask 1) and every command output's (loss mask 0). A rollout whose sandbox failed for reasons that are not the
policy's (a build, the machine) gets ``stop_reason == "error"``: SkyRL masks it and the scheduler does not count it.
Wrap it in :class:`~envevo.trainers.skyrl.EnvevoGenerator` to feed rewards to the scheduler.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, ClassVar

from skyrl.backends.skyrl_train.inference_servers.base import InferenceEngineInput
from skyrl.train.generators.base import GeneratorInput, GeneratorInterface, GeneratorOutput, TrajectoryID

from envevo.runtime import DEFAULT_ENGINE, ErrorKind, TrialOutcome
from envevo.trainers._live_client import LiveTrialClient, LiveTrialFailed, shared_client
from envevo.trainers._runner import RunnerSpec, check_tasks, task_configs
from envevo.trainers.skyrl import LIVE_GENERATOR

_NOT_THE_POLICY = {ErrorKind.INFRASTRUCTURE_ERROR, ErrorKind.ENVIRONMENT_BUILD_FAILURE}
_COMMAND = re.compile(r"```(?:bash|sh)?[ \t]*\n(.*?)```", re.S)

PROMPT_SUFFIX = (
    "\n\nYou work in the task's sandbox through a shell. To run a command, reply with one fenced block:\n"
    "```bash\nCOMMAND\n```\nYou will see its output. Files and processes persist between commands. "
    "When the task is done, reply without a command."
)


def command_of(reply: str) -> str | None:
    """The first fenced bash block of a reply, or None (the policy is done)."""
    m = _COMMAND.search(reply)
    return m.group(1).strip() or None if m else None


class EnvevoLiveGenerator(GeneratorInterface):
    """A SkyRL generator whose rollouts are envevo live trials (``env`` = the sandbox engine, e.g. podman)."""

    runner: ClassVar[RunnerSpec] = LIVE_GENERATOR

    def __init__(self, inference_engine_client: Any, tokenizer: Any, *, env: str = DEFAULT_ENGINE, max_turns: int = 8,
                 timeout_sec: int = 180, max_output: int = 4000, python: str | None = None,
                 policy_model_name: str | None = None, keep_trials: bool = False) -> None:
        self.client_engine = inference_engine_client
        self.tokenizer = tokenizer
        self.env, self.max_turns, self.timeout, self.max_output = env, int(max_turns), int(timeout_sec), int(max_output)
        self.python, self.model, self.keep = python, policy_model_name, keep_trials
        self.outcomes: list[TrialOutcome | None] = []  # the last batch's trial outcomes, in output order
        self._checked: set[str] = set()

    def _trials(self) -> LiveTrialClient:
        return shared_client(self.python)

    async def generate(self, input_batch: GeneratorInput, **_: object) -> GeneratorOutput:
        extras = input_batch.get("env_extras") or [{} for _ in input_batch["prompts"]]
        ids = input_batch.get("trajectory_ids")
        results = await asyncio.gather(*(
            self._rollout(_task_dir(p, x), input_batch.get("sampling_params")) for p, x in zip(input_batch["prompts"], extras, strict=True)
        ))
        self.outcomes = [r["outcome"] for r in results]
        return GeneratorOutput(
            prompt_token_ids=[r["prompt_ids"] for r in results], response_ids=[r["response_ids"] for r in results],
            rewards=[r["reward"] for r in results], loss_masks=[r["loss_mask"] for r in results],
            stop_reasons=[r["stop"] for r in results], rollout_logprobs=None,
            rollout_metrics={"envevo/turns_mean": sum(r["turns"] for r in results) / max(1, len(results)),
                             "envevo/sandbox_errors": sum(r["stop"] == "error" for r in results)},
            trajectory_ids=list(ids) if ids is not None else [TrajectoryID(str(k), 0) for k in range(len(results))],
            trajectory_generation_times=None, trajectory_time_splits=None, rollout_expert_indices=None,
            rollout_sample_support=None, is_last_step=None, env_metrics=None, pixel_values=None, image_grid_thw=None,
        )

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    async def _rollout(self, task_dir: Path, sampling: dict[str, Any] | None) -> dict[str, Any]:
        if str(task_dir) not in self._checked:  # once per task: what it needs, this runner must honour
            check_tasks(self.runner, task_configs([task_dir]))
            self._checked.add(str(task_dir))
        instruction = (task_dir / "instruction.md").read_text(encoding="utf-8") + PROMPT_SUFFIX
        chat = [{"role": "user", "content": instruction}]
        prompt_ids = list(self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True,
                                                             return_dict=False))
        response: list[int] = []
        mask: list[int] = []
        result: dict[str, Any] = {"prompt_ids": prompt_ids, "response_ids": response, "loss_mask": mask,
                                  "reward": 0.0, "stop": "complete", "turns": 0, "outcome": None}
        trials = await asyncio.to_thread(self._trials)
        try:
            trial = await asyncio.to_thread(trials.start, task_dir, self.env, keep=self.keep)
        except LiveTrialFailed:
            result["stop"] = "error"
            return result
        try:
            for _ in range(self.max_turns):
                out = await self.client_engine.generate(InferenceEngineInput(
                    prompt_token_ids=[prompt_ids + response], sampling_params=sampling), model=self.model)
                reply_ids = list(out["response_ids"][0])
                response += reply_ids
                mask += [1] * len(reply_ids)
                result["turns"] += 1
                command = command_of(out["responses"][0])
                if command is None:
                    break
                code, output = await asyncio.to_thread(trials.exec, trial, command, self.timeout)
                if len(output) > self.max_output:
                    output = output[: self.max_output] + "\n... [truncated]"
                shown = self._encode(f"\n[exit code {code if code is not None else 'timeout'}]\n{output}\n")
                response += shown
                mask += [0] * len(shown)
            else:
                result["stop"] = "length"
            outcome = await asyncio.to_thread(trials.finish, trial)
        except BaseException:
            await asyncio.shield(asyncio.to_thread(_cancel, trials, trial))  # no sandbox outlives a failed rollout
            raise
        result["outcome"] = outcome
        if outcome.error_kind in _NOT_THE_POLICY:
            result["stop"] = "error"
        else:
            result["reward"] = float(outcome.reward or 0.0)
        return result


def _cancel(trials: LiveTrialClient, trial: str) -> None:
    try:
        trials.cancel(trial)
    except LiveTrialFailed:
        pass


def _task_dir(prompt: Any, extras: dict[str, Any] | None) -> Path:
    """The row's task dir: ``env_extras`` (``task_dir`` or ``data_source``), else a prompt that is a path."""
    extras = extras or {}
    for candidate in (extras.get("task_dir"), extras.get("data_source"), prompt if isinstance(prompt, str) else None):
        if candidate and (Path(str(candidate)) / "instruction.md").is_file():
            return Path(str(candidate))
    raise ValueError(f"no Harbor task dir in this row (env_extras {sorted(extras)}): build the dataset with "
                     "EnvevoHarborDataset.from_export")


__all__ = ["PROMPT_SUFFIX", "EnvevoLiveGenerator", "command_of"]
