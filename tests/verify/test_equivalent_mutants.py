"""Equivalent near misses and weak tasks (issue 36), host side: the end-state file a trial leaves is read as hostile
bytes, compared with the full solution's, and decides equivalent / survivor; a survivor makes a task envevo did not
write `weak` (exit 4), and fails it when judged strictly. Trials are faked (`set_trial_runner`); the sandbox side is
tests/verify/test_equivalent_mutants_sandbox.py."""

import asyncio
import os
from pathlib import Path

import pytest

from envevo.cli._common import verdicts_exit_code
from envevo.errors import ExitCode
from envevo.runtime import END_STATE, TrialOutcome, TrialSpec, set_trial_runner
from envevo.task import load_task
from envevo.verify import (
    MutationVerifier,
    Verdict,
    VerifierReport,
    default_verifiers,
    killed_keys,
    mutation_strict,
    parse_mutation,
    trial_line,
    verify_tasks,
)
from envevo.verify._end_state import end_state_differences, parse_end_state, read_bounded, read_end_state
from tests.conftest import FIXTURES

HEADER = b"envevo-end-state/1\n"
SHA_A, SHA_B = "a" * 64, "b" * 64
REALISTIC = FIXTURES / "realistic"


def state(*records: bytes, last: bytes = b"end") -> bytes:
    return HEADER + b"".join(r + b"\0" for r in records) + last + b"\0"


# ---- the file ------------------------------------------------------------------------------------------------------

def test_records_keep_odd_names_whole():
    data = state(f"f 644 {SHA_A} /app/a b.txt".encode(), f"f 644 {SHA_B} /app/new\nline".encode(),
                 b"f 644 " + SHA_A.encode() + b" /app/\xff\xfe", f"l 777 l{SHA_A} /app/link".encode(),
                 b"absent - - /etc/issue", b"d 755 - /app/out dir")
    got = parse_end_state(data)
    assert got is not None and got["/app/a b.txt"] == ("f", "644", SHA_A)
    assert got["/app/new\nline"] == ("f", "644", SHA_B)  # a newline in a name is part of the name, not a record
    assert ("/app/" + b"\xff\xfe".decode("utf-8", "surrogateescape")) in got
    assert got["/app/link"] == ("l", "777", "l" + SHA_A) and got["/etc/issue"] == ("absent", "-", "-")


@pytest.mark.parametrize("data", [
    b"", b"garbage", HEADER,  # empty, not ours, no end
    state(f"f 644 {SHA_A} /a".encode(), last=b"truncated"),  # more paths than the container listed
    HEADER + f"f 644 {SHA_A} /a\0".encode(),  # cut short before `end`
    state(b"f 644 nothex /a"), state(b"x 644 - /a"), state(f"f 9999 {SHA_A} /a".encode()),  # out of shape
    state(f"f 644 {SHA_A} relative".encode()), state(b"f 644"),
    state(f"f 644 {SHA_A} /a".encode(), f"f 600 {SHA_A} /a".encode()),  # a path twice: not find's listing
])
def test_anything_out_of_shape_is_unknown_never_a_guess(data):
    assert parse_end_state(data) is None


def test_the_host_reads_only_a_bounded_regular_file_never_a_link_or_fifo(tmp_path):
    real = tmp_path / "real"
    real.write_bytes(state(f"f 644 {SHA_A} /a".encode()))
    assert read_bounded(real) is not None
    (tmp_path / "link").symlink_to(real)
    assert read_bounded(tmp_path / "link") is None
    os.mkfifo(tmp_path / "fifo")
    assert read_bounded(tmp_path / "fifo") is None  # returns at once: no writer is waited for
    huge = tmp_path / "huge"
    with huge.open("wb") as f:
        f.truncate(8 * 1024**3)  # sparse 8 GiB: never read
    assert read_bounded(huge) is None
    trial = tmp_path / "trial"
    (trial / "agent").mkdir(parents=True)
    (trial / "agent" / END_STATE).symlink_to(real)
    assert read_end_state(trial) is None and read_end_state(None) is None


# ---- the comparison ------------------------------------------------------------------------------------------------

FULL = {"/app/out.txt": ("f", "644", SHA_A), "/app/run.py": ("f", "755", SHA_B)}


def test_equal_end_states_are_equivalent_and_each_difference_is_named():
    assert end_state_differences(dict(FULL), [FULL]) == []
    assert end_state_differences({"/app/run.py": FULL["/app/run.py"]}, [FULL]) == ["/app/out.txt (not written)"]
    assert end_state_differences({**FULL, "/app/out.txt": ("f", "644", SHA_B)}, [FULL]) == ["/app/out.txt (content)"]
    chmod = {**FULL, "/app/run.py": ("f", "644", SHA_B)}  # a chmod +x cut off: a test could check the mode
    assert end_state_differences(chmod, [FULL]) == ["/app/run.py (mode 644, the solution's 755)"]
    left = {**FULL, "/app/partial.tmp": ("f", "644", SHA_A)}
    assert end_state_differences(left, [FULL]) == ["/app/partial.tmp (changed; the solution leaves it as it was)"]
    odd = {**FULL, "/app/new\nline": ("f", "644", SHA_A)}
    assert end_state_differences(odd, [FULL]) == ["/app/new\\nline (changed; the solution leaves it as it was)"]


def test_unknown_is_never_equal():
    assert end_state_differences(None, [FULL]) is None
    assert end_state_differences(dict(FULL), []) is None
    assert end_state_differences(dict(FULL), [FULL, None]) is None  # one oracle run without its fingerprint


def test_a_separate_verifier_sees_only_the_artifacts():
    mutant = {**FULL, "/app/run.py": ("f", "644", SHA_A)}
    assert end_state_differences(mutant, [FULL], roots=["/app/out.txt"]) == []
    assert end_state_differences(mutant, [FULL], roots=["/app"]) == ["/app/run.py (content)"]
    assert end_state_differences(mutant, [FULL], roots=["/tmp/out"]) is None  # the fingerprint leaves /tmp out


def test_what_the_solution_itself_varies_is_compared_by_presence_only():
    stamped = [{**FULL, "/app/stamp": ("f", "644", SHA_A)}, {**FULL, "/app/stamp": ("f", "644", SHA_B)}]
    assert end_state_differences({**FULL, "/app/stamp": ("f", "644", "c" * 64)}, stamped) == []
    assert end_state_differences(dict(FULL), stamped) == ["/app/stamp (not written)"]


# ---- the verifier, the verdict and the commands' exit codes -------------------------------------------------------

def _fake_runner(end_states: dict[str, bytes | None], rewards: dict[str, float]):
    """A trial runner that writes what a trial leaves: the reward, the tests' output, the end-state file. Keys: a
    mutant id, `oracle` or `nop`."""
    async def run(spec: TrialSpec) -> TrialOutcome:
        name = spec.trial_name or f"{spec.task_dir.name}__{spec.agent}__{id(spec):x}"
        key = name.split("__mut-", 1)[1].rsplit("__", 1)[0] if "__mut-" in name else spec.agent
        assert spec.fingerprint == (spec.agent == "oracle"), name  # the full solution and every mutant, alike
        trial = spec.trials_dir / name
        (trial / "verifier").mkdir(parents=True)
        (trial / "agent").mkdir()
        (trial / "verifier" / "test-stdout.txt").write_text("PASS summary\n" if rewards[key] else "FAIL summary: missing\n")
        if end_states.get(key) is not None:
            (trial / "agent" / END_STATE).write_bytes(end_states[key])  # type: ignore[arg-type]
        return TrialOutcome(task=spec.task_dir.name, agent=spec.agent, reward=rewards[key], trial_dir=trial)
    return run


def _verify(tmp_path, task: str, end_states, rewards, strict=False, verifiers=None) -> Verdict:
    set_trial_runner(_fake_runner(end_states, rewards))
    try:
        (v,) = asyncio.run(verify_tasks([(task, REALISTIC / task)], tmp_path / "jobs", strict=strict,
                                        verifiers=verifiers or default_verifiers(1, mutation="on")))
    finally:
        set_trial_runner(None)
    return v


SUMMARY = state(f"f 644 {SHA_A} /app/summary.txt".encode())
HEAD_ONLY = state(f"f 644 {SHA_B} /app/summary.txt".encode())


def test_a_survivor_whose_end_state_equals_the_solutions_is_equivalent_and_the_task_ok(tmp_path):
    v = _verify(tmp_path, "partial-output", {"oracle": SUMMARY, "prefix-2of3": SUMMARY},
                {"oracle": 1.0, "nop": 0.0, "prefix-2of3": 1.0})
    m = v.reports["mutation"]
    assert v.status == "ok" and m.passed and not m.weak
    assert m.metrics["equivalent"] == 1 and m.metrics["survived"] == 0 and m.metrics["score"] is None
    assert v.summary()["equivalent"] == ["prefix-2of3"] and v.summary()["survivors"] == []
    assert any("prefix-2of3: equivalent" in n for n in m.notes)


def test_a_survivor_that_differs_makes_a_user_task_weak_naming_the_path_and_strict_fails_it(tmp_path):
    runs = ({"oracle": SUMMARY, "prefix-2of3": HEAD_ONLY}, {"oracle": 1.0, "nop": 0.0, "prefix-2of3": 1.0})
    v = _verify(tmp_path, "partial-output", *runs)
    m = v.reports["mutation"]
    assert v.status == "weak" and not v.ok and m.weak and not m.passed and m.metrics["survived"] == 1
    assert "its end state differs from the solution's at: /app/summary.txt (content)" in m.reasons[0]
    s = v.summary()
    assert s["status"] == "weak" and s["survivors"] == ["prefix-2of3"] and s["mutation"]["weak"]
    strict = _verify(tmp_path / "s", "partial-output", *runs, strict=True)
    assert strict.status == "fail"
    # No fingerprint from the mutant's trial: judged as before the end states existed, a survivor.
    unknown = _verify(tmp_path / "u", "partial-output", {"oracle": SUMMARY}, runs[1])
    assert unknown.status == "weak" and unknown.reports["mutation"].metrics["equivalent"] == 0


def test_weak_never_hides_a_failure_or_an_inconclusive_verdict():
    weak = VerifierReport(name="mutation", passed=False, weak=True, reasons=["prefix-1of2: survived: …"])
    ok = VerifierReport(name="oracle", passed=True)
    failed = VerifierReport(name="red_team", passed=False, reasons=["reward_forgery: …"])
    unknown = VerifierReport(name="invalid_test", passed=False, inconclusive=True, reasons=["inconclusive: …"])

    def status(*reports, strict=False):
        return Verdict(task="t", task_dir=Path("t"), ok=False, reports={r.name: r for r in reports}, strict=strict).status

    assert status(ok, weak) == "weak" and status(ok, weak, strict=True) == "fail"
    assert status(weak, failed) == "fail" and status(weak, unknown) == "inconclusive"
    assert [verdicts_exit_code(s) for s in (["ok"], ["ok", "weak"], ["weak", "inconclusive"], ["weak", "fail"], [])] == [
        ExitCode.OK, ExitCode.WEAK, ExitCode.INCONCLUSIVE, ExitCode.FAIL, ExitCode.OK]
    assert (ExitCode.WEAK, ExitCode.INCONCLUSIVE, ExitCode.ALL_SEEDS_REJECTED) == (4, 3, 5)


def test_strict_is_a_mutation_setting_of_its_own():
    assert parse_mutation("strict") == (True, None) and mutation_strict("strict") and not mutation_strict("on")
    with pytest.raises(ValueError, match="use on, strict, off or sample:N"):
        parse_mutation("sometimes")


def test_an_equivalent_verdict_is_reused_only_beside_the_same_full_solution(tmp_path):
    v = _verify(tmp_path, "partial-output", {"oracle": SUMMARY, "prefix-2of3": SUMMARY},
                {"oracle": 1.0, "nop": 0.0, "prefix-2of3": 1.0})
    keys = killed_keys(v.reports["mutation"].metrics)
    assert keys and all(k.startswith("equivalent:") for k in keys)
    child = MutationVerifier()
    child.inherit(REALISTIC / "partial-output", keys)
    assert child.trial_specs(REALISTIC / "partial-output", "podman", tmp_path / "c") == []  # nothing to run again
    rep = child.judge_task(REALISTIC / "partial-output", [])
    assert rep.passed and rep.metrics["equivalent"] == 1 and rep.metrics["reused"] == 1
    assert rep.metrics["equivalent_keys"] == sorted(k.removeprefix("equivalent:") for k in keys)
    # Another full solution (one more command at its end): the same prefix is not equivalent by inheritance.
    task = load_task(REALISTIC / "partial-output")
    task.write("solution/solve.sh", task.read_text("solution/solve.sh") + "echo done >> /app/summary.txt\n",
               executable=True)
    from envevo.task import save

    other = save(task, tmp_path / "other")
    again = MutationVerifier()
    again.inherit(other, keys)
    assert any("prefix-2of4" in s.trial_name for s in again.trial_specs(other, "podman", tmp_path / "o"))


def test_progress_lines_name_the_verifier_and_the_near_miss(tmp_path):
    def outcome(name, agent="oracle", reward=0.0):  # what a trial tried is its spec's subject (the runtime copies it)
        subject = name.split("__")[1].split("-", 1)[1] if name.count("__") == 2 else None
        return TrialOutcome(task="t", agent=agent, reward=reward, trial_dir=tmp_path / name, subject=subject)

    (tmp_path / "t__mut-prefix-2of4__ab12" / "verifier").mkdir(parents=True)
    (tmp_path / "t__mut-prefix-2of4__ab12" / "verifier" / "test-stdout.txt").write_text("FAIL\n")
    assert trial_line(outcome("t__mut-prefix-2of4__ab12")) == "mutant prefix-2of4 → killed (0.0)"
    assert trial_line(outcome("t__rt-reward_forgery__ab12", "envevo.runtime._scripted_agent:ScriptedAgent")) == (
        "exploit reward_forgery → resisted (0.0)")
    assert trial_line(outcome("t__x", reward=1.0)) == "oracle (reference solution) → passed (1.0)"
    assert trial_line(outcome("t__y", "nop")) == "invalid-test (empty solution) → failed, as it should (0.0)"
    assert "oracle" not in trial_line(outcome("t__mut-prefix-2of4__ab12"))


def test_a_fingerprinted_oracle_trial_runs_harbors_oracle_with_the_end_state_step(tmp_path):
    from envevo.runtime._trial import FINGERPRINT_ORACLE, _agent_config

    plain = _agent_config(TrialSpec(task_dir=tmp_path, agent="oracle", trials_dir=tmp_path))
    marked = _agent_config(TrialSpec(task_dir=tmp_path, agent="oracle", trials_dir=tmp_path, fingerprint=True))
    assert plain.name == "oracle" and plain.import_path is None
    assert marked.import_path == FINGERPRINT_ORACLE and marked.kwargs["task_dir"] == str(tmp_path.resolve())
    from harbor.agents.oracle import OracleAgent

    from envevo.runtime._fingerprint_agent import FingerprintOracle

    assert issubclass(FingerprintOracle, OracleAgent)  # solve.sh runs exactly as Harbor's oracle runs it


def test_a_long_listing_parses_and_one_over_the_cap_is_refused(tmp_path):
    many = state(*(f"f 644 {SHA_A} /usr/lib/pkg/file{i}.py".encode() for i in range(20_000)))
    assert len(parse_end_state(many) or {}) == 20_000
    big = tmp_path / "big"
    big.write_bytes(many + b"x" * (16 * 1024 * 1024))  # a regular file past 16 MiB: refused unread
    assert read_bounded(big) is None
