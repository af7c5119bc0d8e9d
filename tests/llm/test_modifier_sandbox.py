"""run_tests in a real sandbox session (podman): solve.sh then test.sh in the candidate's container, read back from
/logs/verifier, as the oracle and the empty agent would see them."""

import asyncio

import pytest

from envevo.evolve.engines.llm import ContainerShell
from envevo.task import load_task, save
from tests.fakes import log_forensics as lf

pytestmark = pytest.mark.sandbox


def test_run_tests_scores_the_reference_solution_one_and_the_empty_solution_zero(tmp_path):
    draft = save(load_task(lf.SEED), tmp_path / "draft-1")
    (draft / "tests" / "test_outputs.py").write_text(lf.new_tests())  # expects two keys the solution does not write

    async def main():
        async with ContainerShell("podman", timeout_sec=240).session(draft) as s:
            broken = await s.run_tests()
            (draft / "solution" / "solve.sh").write_text(lf.new_solution())
            fixed = await s.run_tests()
            empty = await s.run_tests(with_solution=False)
            return broken, fixed, empty, s.opened

    broken, fixed, empty, opened = asyncio.run(main())
    assert "\nreward 0" in broken and "exfil_datasets" in broken, broken
    assert "\nreward 1" in fixed and "solve.sh exited 0" in fixed, fixed
    assert "\nreward 0" in empty and "solve.sh" not in empty.split("\n", 2)[1], empty
    assert opened == 3  # every run starts from a fresh container, as a trial does
