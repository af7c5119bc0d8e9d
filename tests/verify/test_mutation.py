"""The mutation verifier: near-miss solutions (a step's wrong variant or omission, solve.sh cut short) must score 0."""

import asyncio
import time

import pytest

from envevo.catalog import build_blocks, chain_from_task, random_chain, solve_script
from envevo.evolve import EvolveConfig
from envevo.evolve.engines.procedural import compose, write_task
from envevo.runtime import ErrorKind, TrialOutcome
from envevo.task import dir_hash, load_task, save
from envevo.verify import (
    MutationVerifier,
    choose_mutants,
    default_verifiers,
    no_effect,
    parse_mutation,
    prefix_mutants,
    procedural_mutants,
    survivors,
    task_mutants,
    top_level_commands,
    verify_tasks,
)
from tests.conftest import FIXTURES

SCRIPT = """#!/bin/bash
set -euo pipefail
cd /app
# set up
f() {
  echo "$1"
}
cat > /app/a.py <<'EOF'
print("x")
(not a bracket
EOF
if [ -f a ]; then
  echo a |
    tee b
fi
for x in 1 2; do echo $x; done
echo "multi
line" && \\
  echo more
case $x in
  a) echo a;;
esac
echo last
"""


def test_top_level_commands_respect_quotes_heredocs_and_compound_commands():
    lines = SCRIPT.splitlines()
    units = ["\n".join(lines[a:b]) for a, b in top_level_commands(SCRIPT)]
    assert units[:3] == ["set -euo pipefail", "cd /app", 'f() {\n  echo "$1"\n}']
    assert units[3].startswith("cat > /app/a.py <<'EOF'") and units[3].endswith("EOF")
    assert units[4].startswith("if [ -f a ]") and units[4].endswith("fi")
    assert units[5] == "for x in 1 2; do echo $x; done"
    assert units[6].startswith('echo "multi') and units[6].endswith("echo more")
    assert units[7].startswith("case") and units[7].endswith("esac")
    assert units[8] == "echo last" and len(units) == 9


def test_prefix_mutants_skip_setup_only_prefixes_and_the_full_script():
    mutants = prefix_mutants(SCRIPT)
    # set, cd and the function definition are setup: a prefix of them alone is the empty solution (invalid-test);
    # dropping only the closing `echo last` (it writes nothing) leaves the full solution.
    assert [m.id for m in mutants] == [f"prefix-{k}of9" for k in range(4, 8)]
    assert all(m.kind == "prefix" and SCRIPT.startswith(m.script) and m.script != SCRIPT for m in mutants)
    assert mutants[-1].diff == "the last 2 command(s) left out, from line 20: case $x in"
    assert prefix_mutants("#!/bin/bash\nset -e\npython3 - <<'PY'\nprint(1)\nPY\n") == []  # one command: none
    # Self-checks and read-only reports at the end are not cut off alone; a command that writes is.
    tail = "#!/bin/bash\nmake\n./tool data > report.txt\nmake test\ncat report.txt\ngit log --oneline -3\n"
    assert [m.id for m in prefix_mutants(tail)] == ["prefix-1of5"]
    assert [no_effect(c) for c in ("make test", "cat r.txt", "echo hi > f", "find . -exec rm {} +", "ls 2>/dev/null")] == [
        True, True, False, False, True]


def test_procedural_mutants_are_each_step_wrong_or_skipped():
    chain = random_chain(None, 2, 3)
    task = compose(chain)
    mutants = procedural_mutants(task)
    assert mutants is not None
    blocks = build_blocks(chain)
    ids = [m.id for m in mutants]
    assert ids == [i for b in blocks for i in ([f"step{b.index + 1}-wrong"] if b.wrong_sh != b.oracle_sh else [])
                   + [f"step{b.index + 1}-skip"]]
    reference = task.read_text("solution/solve.sh")
    assert solve_script(chain, blocks=blocks) == reference
    for m in mutants:
        assert m.script != reference and m.step in (1, 2)
        block = blocks[m.step - 1]
        if m.kind == "wrong":
            assert m.script == solve_script(chain, wrong={m.step - 1}) and block.wrong_sh in m.script
            assert m.diff and f"{block.scenario}/{block.skill}" in m.label
        else:
            assert block.oracle_sh not in m.script and "# (skipped)" in m.script
    # A task whose solve.sh is no longer its chain's gets prefix mutants instead.
    task.write("solution/solve.sh", reference + "echo extra >> /app/output/x\n")
    assert procedural_mutants(task) is None
    assert task_mutants(task)[1] == "prefix"


def test_mutation_setting_and_sampling():
    assert parse_mutation("off") == (False, None) and parse_mutation("on") == (True, None)
    assert parse_mutation("sample:3") == (True, 3)
    for bad in ("sample:0", "x"):
        with pytest.raises(ValueError, match="--mutation"):
            parse_mutation(bad)
    assert EvolveConfig().mutation == "sample:4"
    assert [v.name for v in default_verifiers(1, mutation="on")] == ["oracle", "invalid_test", "mutation"]
    task = compose(random_chain(None, 4, 1))
    mutants, _ = task_mutants(task)
    picked = choose_mutants(task, mutants, 3)
    assert len(picked) == 3 and picked == choose_mutants(task, mutants, 3)  # deterministic
    assert all(m.kind == "wrong" for m in picked)  # plausible mistakes before omissions


def _outcome(tmp_path, mid, reward, kind=ErrorKind.OK, stdout="FAIL lines /app/output/report.txt\n0 of 1 checks passed\n"):
    d = tmp_path / f"t__mut-{mid}__abc123"
    (d / "verifier").mkdir(parents=True)
    (d / "verifier" / "test-stdout.txt").write_text(stdout)
    return TrialOutcome(task="t", agent="oracle", reward=reward, error_kind=kind, trial_dir=d)


def test_judge_names_the_surviving_mutant_with_its_diff_and_the_tests_output(tmp_path):
    task_dir = write_task(random_chain(None, 2, 3), tmp_path / "task")
    before = dir_hash(task_dir)
    v = MutationVerifier()
    specs = v.trial_specs(task_dir, "podman", tmp_path / "trials")
    mutants, source = v.plan(task_dir)
    assert source == "procedural" and len(specs) == len(mutants)
    for spec, m in zip(specs, mutants, strict=True):
        assert spec.agent == "oracle" and f"__mut-{m.id}__" in spec.trial_name
        assert load_task(spec.task_dir).read_text("solution/solve.sh") == m.script  # a copy, the only change
        assert (tmp_path / "trials") in spec.task_dir.parents
    assert dir_hash(task_dir) == before  # the task itself is never touched
    runs = [_outcome(tmp_path, m.id, 1.0 if m.id == "step2-wrong" else 0.0) for m in mutants]
    rep = v.judge_task(task_dir, runs)
    assert not rep.passed and not rep.inconclusive and survivors(rep) == ["step2-wrong"]
    assert "done with its wrong variant" in rep.reasons[0] and "diff:" in rep.reasons[0] and "FAIL lines" in rep.reasons[0]
    assert rep.metrics["killed"] == len(mutants) - 1 and rep.metrics["survived"] == 1
    assert rep.metrics["score"] == pytest.approx((len(mutants) - 1) / len(mutants))
    # All killed: a pass with score 1; a mutant that never reached the tests: inconclusive, never a pass.
    ok = v.judge_task(task_dir, [_outcome(tmp_path / "k", m.id, 0.0) for m in mutants])
    assert ok.passed and ok.metrics["score"] == 1.0
    broken = v.judge_task(task_dir, [_outcome(tmp_path / "b", m.id, None, ErrorKind.ENVIRONMENT_BUILD_FAILURE, "")
                                     for m in mutants])
    assert not broken.passed and broken.inconclusive and broken.metrics["score"] is None


def test_a_task_without_mutants_passes_with_a_note(tmp_path):
    task = load_task(FIXTURES / "hackable" / "peeking")
    task.write("solution/solve.sh", "#!/bin/bash\necho 42 > /app/answer.txt\n")
    task_dir = save(task, tmp_path / "one")
    v = MutationVerifier()
    assert v.trial_specs(task_dir, "podman", tmp_path / "trials") == []
    rep = v.judge_task(task_dir, [])
    assert rep.passed and rep.notes and "no mutants" in rep.notes[0] and rep.metrics["score"] is None


def _weaken(task_dir, step: int, dest):
    """A copy of a procedural task whose tests no longer check step `step` (1-based)."""
    task = load_task(task_dir)
    block = build_blocks(chain_from_task(task))[step - 1]
    text = task.read_text("tests/test_outputs.py")
    import ast

    tree = ast.parse(text)
    assign = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "CHECKS")
    checks = [c for c in ast.literal_eval(assign.value) if c["path"] not in block.produces]
    start, end = assign.lineno - 1, assign.end_lineno
    lines = text.splitlines()
    task.write("tests/test_outputs.py", "\n".join(lines[:start] + [f"CHECKS = {checks!r}"] + lines[end:]) + "\n")
    return save(task, dest)


@pytest.mark.sandbox
def test_a_procedural_tasks_mutants_are_killed_and_an_unchecked_step_is_caught(sandbox, tmp_path):
    task_dir = write_task(random_chain(None, 2, 5), tmp_path / "sound")
    weak = _weaken(task_dir, 2, tmp_path / "weak")
    t0 = time.monotonic()
    sound, weakened = asyncio.run(verify_tasks([("sound", task_dir), ("weak", weak)], tmp_path / "trials",
                                               verifiers=[MutationVerifier()], concurrency=3))
    print(f"mutation sandbox test: {time.monotonic() - t0:.0f} s")
    rep = sound.reports["mutation"]
    assert rep.passed, rep.reasons
    assert rep.metrics["score"] == 1.0 and rep.metrics["killed"] == rep.metrics["run"] >= 3
    rep = weakened.reports["mutation"]
    assert not weakened.ok and not rep.passed
    assert "step2-skip" in survivors(rep)
    assert all(name.startswith("step2-") for name in survivors(rep))
    assert rep.metrics["score"] < 1.0
