"""Reading task.toml tables that may be missing or malformed: envevo.task.value_at."""

from __future__ import annotations

from envevo.task import value_at


def test_value_at_walks_nested_tables_and_gives_none_where_a_level_is_missing_or_not_a_table():
    config = {"verifier": {"environment": {"env": {"KEY": "v"}}, "timeout_sec": 60}, "steps": [{"name": "a"}]}
    assert value_at(config, "verifier", "environment", "env") == {"KEY": "v"}
    assert value_at(config, "verifier", "timeout_sec") == 60
    assert value_at(config, "verifier", "timeout_sec", "x") is None  # 60 is no table
    assert value_at(config, "agent", "timeout_sec") is None
    assert value_at(config, "steps", "name") is None  # an array of tables is not a table
    assert value_at("not a table", "verifier") is None
    assert value_at(config) is config
