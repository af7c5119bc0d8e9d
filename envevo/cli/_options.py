"""Options shared by several commands, declared once as `Annotated` aliases.

Defaults come from the library's config models where one exists, so a default is typed once; the defaults that
every command running trials shares (`TRIAL_DEFAULTS`, `EXECUTOR`) are named here. Meanings are the same on every
command: `--trial-concurrency` is sandbox trials at once, `--lineage-concurrency` lineages at once (`evolve`),
`--repeats` how many times each thing is run (oracle runs per task; a simulation's runs per scheduler), `--rubric` a
rubric TOML file, `--generations` the generations `evolve` makes per lineage, `--model` the model that is called,
in the one grammar of docs/llm.md (PROVIDER:NAME), `--run` a run store (RUN: the lineage store of `envevo evolve`),
`--by-agent`/`--by-model` which recorded rollouts count, `--config` the project's envevo.toml, `--out` a file or
folder the command writes. Old spellings (`--concurrency`, `--lineages`, `--rubric-file`, `schedule simulate
--seeds`/`--generations`) still work, hidden, with one deprecation line (docs/cli.md, "Renamed options"). Help is rendered
without Rich markup (see `_common.sub_app`), so brackets such as `[llm]` print as written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from envevo.evolve import EvolveConfig

SANDBOX = "Sandbox"
LLM = "LLM (--engine llm and other model options)"
OUTPUT = "Output"
# The one model grammar of envevo.llm.normalize_model (written here so that help does not load the model clients).
MODEL_HELP = ("PROVIDER:NAME, e.g. openai:gpt-4.1, anthropic:claude-sonnet-4-5; with --base-url, the served name "
              "(e.g. Qwen/Qwen3-32B). See docs/llm.md.")


# ---- output -------------------------------------------------------------------------------------------
Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout (progress and notes go to "
                                    "stderr).", rich_help_panel=OUTPUT)]
Force = Annotated[bool, typer.Option("--force", help="Replace the destination if it is a task dir (one with "
                                                   "task.toml); never another folder.")]


def out_option(help: str) -> typer.models.OptionInfo:  # noqa: A002 (typer's own name)
    """`--out`: what it names differs per command (a run dir, a file, a folder), so each gives its help."""
    return typer.Option("--out", help=help, rich_help_panel=OUTPUT)


def old_spelling(flag: str, new: str) -> typer.models.OptionInfo:
    """A renamed option's old spelling: hidden from help and the reference, read with `_common.renamed`."""
    return typer.Option(flag, hidden=True, help=f"Deprecated: use {new}.")


# ---- runs and lineages ------------------------------------------------------------------------------------
RUN_HELP = "Run dir: the lineage store that `envevo evolve --run` writes."
RunArg = Annotated[Path, typer.Argument(help=RUN_HELP)]
TaskDirs = Annotated[list[Path], typer.Argument(help="Task dirs (Harbor or Terminal-Bench 1), or folders of tasks.")]


def run_option(help: str) -> typer.models.OptionInfo:  # noqa: A002 (typer's own name)
    """`--run RUN`: a run store, wherever a command takes one as an option; each says what it does with it."""
    return typer.Option("--run", metavar="RUN", help=help)


ByAgent = Annotated[str | None, typer.Option("--by-agent", metavar="AGENT", help="Count only the rollouts by this "
                                             "agent, as `envevo rollout --agent` named it (needed when the run holds "
                                             "rollouts of several).")]
ByModel = Annotated[str | None, typer.Option("--by-model", metavar="MODEL", help="Count only the rollouts by this "
                                             "model, as `envevo rollout --model` took it (PROVIDER:NAME).")]
LineageFilter = Annotated[str | None, typer.Option("--lineage", help="Only this lineage (its id, as listed by "
                                                   "`envevo lineage show`).")]
Seed = Annotated[int, typer.Option("--seed", help="Random seed: the same seed gives the same result.")]
Generations = Annotated[int, typer.Option("--generations", min=1, help=EvolveConfig.model_fields["generations"]
                                          .description or "Generations per lineage.")]
LineageConcurrency = Annotated[int, typer.Option("--lineage-concurrency", min=1, help="Lineages evolving at once.")]
# A rubric TOML file (weighted criteria, docs/llm.md#rubrics): each command says what it does with it.
RUBRIC_METAVAR = "FILE"

# ---- defaults of every command that runs trials (verify, audit, evolve, rollout, seeds select) -----------------
# One place, so that a task audited, verified, selected as a seed or rolled out meets the same checks and load.
_TRIALS = EvolveConfig()
ENV = _TRIALS.env
REPEATS = _TRIALS.repeats
TRIAL_CONCURRENCY = _TRIALS.trial_concurrency
RED_TEAM = _TRIALS.red_team
MUTATION = _TRIALS.mutation
EXECUTOR = "asyncio"  # scale-out is opt-in; --ray-address, --max-sandboxes and --start-rate default to none

# ---- sandbox ------------------------------------------------------------------------------------------
Env = Annotated[str, typer.Option("--env", help="podman, docker or bwrap (envevo's local sandboxes), harbor:podman for "
                                  "Harbor's own, a cloud environment (daytona, modal, e2b, …) or pkg.mod:Class.",
                                  rich_help_panel=SANDBOX)]
TrialConcurrency = Annotated[int, typer.Option("--trial-concurrency", min=1, help="Sandbox trials running at once, "
                                               "over all tasks (and lineages).", rich_help_panel=SANDBOX)]
OldTrialConcurrency = Annotated[int | None, old_spelling("--concurrency", "--trial-concurrency")]
Repeats = Annotated[int, typer.Option("--repeats", min=1, help="Oracle runs per task; all must reach reward 1.0.",
                                      rich_help_panel=SANDBOX)]
RedTeam = Annotated[str, typer.Option("--red-team", help="Exploit agents (reward forgery, runner hijack, tool "
                                      "shadowing, output guessing, peeking, log links, code the verifier runs, "
                                      "forged evidence, detached daemons, FIFOs, sparse files, answer flooding, "
                                      "loose numbers, judge injection, artifact links, executed artifacts) must all "
                                      "score 0: on, off, or sample:N. 'on' also measures the false-fail rate "
                                      "(the reference answer reformatted; a warning).",
                                      rich_help_panel=SANDBOX)]
Mutation = Annotated[str, typer.Option("--mutation", help="Near-miss solutions must all score 0: each step done with "
                                       "its plausible mistake or skipped (procedural tasks), solve.sh cut after each "
                                       "top-level command (any task). on, off, sample:N (N mutants per task; each "
                                       "is one more oracle trial), or strict (every mutant, and a survivor fails any "
                                       "task; otherwise it makes a task envevo did not write weak, while envevo's own "
                                       "candidates always fail on one). A mutant whose end state equals the "
                                       "solution's on what the tests can see is equivalent, never a survivor.",
                                       rich_help_panel=SANDBOX)]
LearnRubric = Annotated[Path | None, typer.Option("--learn-rubric", help="A rubric TOML that each hack the LLM red "
                                                  "team proves (reward without solving) is appended to as a required "
                                                  "criterion. Without it the criterion is only proposed in the report; "
                                                  "no rubric file is edited.", rich_help_panel=SANDBOX)]
ImageMapOpt = Annotated[list[str], typer.Option("--image-map", help="Rewrite a base image, e.g. "
                                                "ubuntu:24.04=registry.local/ubuntu:24.04 (repeatable).",
                                                rich_help_panel=SANDBOX)]
PassEnv = Annotated[list[str], typer.Option("--pass-env", metavar="NAME", help="A host variable that tasks may read "
                                            "through ${NAME} in task.toml (repeatable; also pass_env under [sandbox] "
                                            "in envevo.toml). Tasks see no other host variable: a task asking for "
                                            "one is refused before any container starts.", rich_help_panel=SANDBOX)]
ConfigFile = Annotated[Path | None, typer.Option("--config", help="The project's settings file, envevo.toml: its [llm] "
                                                 "models, [images] base-image map and [sandbox] pass_env "
                                                 "(default: ./envevo.toml if present).")]

# ---- models ---------------------------------------------------------------------------------------------
Model = Annotated[str | None, typer.Option("--model", help=f"The model: {MODEL_HELP}", rich_help_panel=LLM)]
BaseUrl = Annotated[str | None, typer.Option("--base-url", help="An OpenAI-compatible endpoint (vLLM, SGLang, a "
                                             "proxy), e.g. http://localhost:8000/v1.", rich_help_panel=LLM)]
ApiKeyEnv = Annotated[str | None, typer.Option("--api-key-env", metavar="NAME", help="Environment variable holding "
                                               "the API key (default: the provider's own, OPENAI_API_KEY or "
                                               "ANTHROPIC_API_KEY; any value, e.g. EMPTY, for a server without auth).",
                                               rich_help_panel=LLM)]
RoleModel = Annotated[list[str], typer.Option("--role-model", help="ROLE=PROVIDER:NAME for one role (proposer, "
                                              "reviewer, modifier, judge); repeatable.", rich_help_panel=LLM)]
PriceOption = Annotated[list[str], typer.Option("--price", help="PROVIDER:NAME=IN,OUT: a model's USD per million "
                                                "input and output tokens (0,0 for a free local server); needed with "
                                                "--max-cost for a model without a list price; repeatable.",
                                                rich_help_panel=LLM)]
RecordDir = Annotated[Path | None, typer.Option("--record", help="Save every model exchange of the run to DIR, "
                                                "for --replay (docs/llm.md).", rich_help_panel=LLM)]
ReplayDir = Annotated[Path | None, typer.Option("--replay", help="Answer every model request from a recording "
                                                "made with --record, offline.", rich_help_panel=LLM)]

CommandMaxTokens = Annotated[int | None, typer.Option("--max-tokens", min=1, rich_help_panel=LLM, help="Tokens "
                                                  "(input + output) the command's model calls may spend in all (the "
                                                  "red team's hacker, --model-mutants); once reached no call is made, "
                                                  "those verdicts are inconclusive and the command says so. Default: "
                                                  "max_tokens under [llm], else no cap.")]
ModelMutants = Annotated[int, typer.Option("--model-mutants", min=0, rich_help_panel=LLM,
                                           help="Near-miss solutions the model writes per task (one step done with a "
                                                "common mistake), run by the mutation verifier beside the generated "
                                                "ones; needs --mutation. 0: none. Each costs a model call.")]

# ---- scale-out (docs/scale.md) ----------------------------------------------------------------------------
SCALE = "Scale-out (docs/scale.md)"
ExecutorName = Annotated[str, typer.Option("--executor", help="asyncio (this process) or ray (each unit of work a "
                                           "Ray task on a cluster; pip install 'envevo[ray]').", rich_help_panel=SCALE)]
RayAddress = Annotated[str | None, typer.Option("--ray-address", metavar="ADDR", help="The Ray cluster to join "
                                                "(e.g. ray://head:10001 or auto); default: a local one, started for "
                                                "the run.", rich_help_panel=SCALE)]
MaxSandboxes = Annotated[int | None, typer.Option("--max-sandboxes", min=1, help="Sandboxes alive at once, shared by "
                                                  "everything the run starts.", rich_help_panel=SCALE)]
StartRate = Annotated[float | None, typer.Option("--start-rate", min=0.001, help="Sandbox starts per second, at "
                                                 "most.", rich_help_panel=SCALE)]

# ---- weakness targeting (envevo evolve) ------------------------------------------------------------------
WEAKNESS = "Weakness targeting"
TargetWeakness = Annotated[Path | None, typer.Option("--target-weakness", metavar="RUN", help="Prefer edits that raise "
                                                     "one agent's weakness δ_θ, estimated from the rollouts stored in "
                                                     "RUN as `envevo difficulty RUN --weakness` does (procedural "
                                                     "engine).", rich_help_panel=WEAKNESS)]
TargetAgent = Annotated[str | None, typer.Option("--by-agent", metavar="AGENT", help="With --target-weakness: whose "
                                                 "weakness; only the rollouts by this agent count (needed when RUN "
                                                 "holds rollouts of several agents).", rich_help_panel=WEAKNESS)]
