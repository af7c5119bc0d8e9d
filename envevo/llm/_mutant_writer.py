"""Model-written mutants (issue 26): near-miss solutions a model writes from a task's plan, for any task.

The model reads the instruction (the plan: its steps) and the reference solve.sh, and writes complete solve.sh
variants, each doing one step with the mistake an agent commonly makes there. The answer is structured
(`WrittenMutant`s, through the role's output mode). The mutation verifier checks each one on the host without
running it (not a copy of solve.sh once comments and whitespace are dropped, bash by a pure-python scan) and runs
the rest in the sandbox like every other mutant. The calls use the judge's model and are metered as `mutant`, billed to the
lineage generation that made the task (outside lineages when none did, as under `envevo verify`).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from envevo.llm._config import Role
from envevo.llm._errors import BudgetExceeded, RoleFailed
from envevo.llm._runtime import LLMRuntime
from envevo.task import Task
from envevo.verify import WrittenMutant

ROLE: Role = "judge"
METER_AS = "mutant"
_SCRIPT_CHARS = 20_000  # of solve.sh, as the model sees it

INSTRUCTIONS = """envevo-role: mutant
You help test the tests of a terminal task used as an RL reward. An agent gets the instruction below; hidden tests
then check its work. A good test suite fails every solution that gets any one step wrong. Your job: write near-miss
solutions that a careless agent would plausibly produce.

You get the instruction (its steps are the plan) and the reference solution, solve.sh. Write up to {n} variants of
solve.sh. Each variant is the complete script, identical to solve.sh except in ONE step, where it makes the mistake
an agent commonly makes there (an off-by-one, a loose pattern, a wrong sort order or key, a missed edge case, the
wrong field or format, a forgotten filter). The variant must still be valid bash that runs to the end and writes its
outputs in the right place: a plausible wrong answer, not a crash or an empty script. Pick different steps. Say
which step (numbered as the instruction numbers them) and the mistake in one sentence."""


class NearMisses(BaseModel):
    mutants: list[WrittenMutant] = Field(default_factory=list, description="the near-miss solutions, one step wrong each")


class ModelMutantWriter:
    """Writes near misses with the run's model (the verifier's `MutantWriter`)."""

    def __init__(self, runtime: LLMRuntime, *, role: Role = ROLE, request_limit: int = 3):
        self.runtime = runtime
        self.role = role
        self.request_limit = request_limit

    async def write(self, task: Task, n: int) -> tuple[list[WrittenMutant], str | None]:
        """Up to n near misses, or none and why (the model gave nothing usable, or the run's budget is spent)."""
        # Billed to the lineage generation that made the task (as the hacker is), and not asked once its budget is spent.
        lineage, generation = self.runtime.owner(task.content_hash())
        over = self.runtime.meter.over_budget(lineage)
        if over is not None:
            return [], over
        reference = task.read_text("solution/solve.sh")
        agent = self.runtime.agent(self.role, NearMisses, INSTRUCTIONS.replace("{n}", str(n)))
        prompt = (f"Task {task.name}. Its instruction:\n\n{task.instruction}\n\nThe reference solution/solve.sh:\n\n"
                  f"```bash\n{reference[:_SCRIPT_CHARS]}\n```")
        try:
            out = await self.runtime.run(agent, prompt, role=self.role, meter_as=METER_AS,
                                         request_limit=self.request_limit, lineage=lineage, generation=generation)
        except (RoleFailed, BudgetExceeded) as e:
            return [], str(e)
        return out.mutants[:n], None
