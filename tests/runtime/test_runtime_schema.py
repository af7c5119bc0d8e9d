"""Harbor's schema checked when a task is prepared: one line per problem, safe fixes applied and stated."""

from envevo.runtime import harbor_schema


def test_a_plain_task_name_is_fixed_and_stated():
    check = harbor_schema({"task": {"name": "chromatic-sorting-matrix"}, "verifier": {"timeout_sec": 60}})
    assert not check.problems
    assert check.config["task"]["name"] == "local/chromatic-sorting-matrix"
    assert check.fixes == ['[task] name "chromatic-sorting-matrix" → "local/chromatic-sorting-matrix" '
                           "(Harbor 0.26 asks for org/name)"]


def test_a_valid_config_is_left_alone():
    config = {"task": {"name": "org/task"}, "environment": {"cpus": 2, "network_mode": "no-network"}}
    check = harbor_schema(config)
    assert check.config == config and not check.fixes and not check.problems


def test_each_problem_is_one_line_with_the_field_the_rule_and_the_fix():
    check = harbor_schema({"task": {"name": "a b/c"}, "environment": {"cpus": "two"}, "verifier": {"timeout_sec": "x"}})
    lines = {p.field: str(p) for p in check.problems}
    assert set(lines) == {"task.name", "environment.cpus", "verifier.timeout_sec"}  # a union's members: one line
    assert "org/name" in lines["task.name"] and 'fix: write it as "org/name"' in lines["task.name"]
    assert lines["environment.cpus"].startswith("task.toml environment.cpus: Input should be a valid integer")
    assert lines["environment.cpus"].endswith("fix: set environment.cpus to an integer")
    assert lines["verifier.timeout_sec"].endswith("fix: set verifier.timeout_sec to a number")
    assert all("validation error" not in line for line in lines.values())
