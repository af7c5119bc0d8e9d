"""The canonical-TB2-style fixture ships binary files with its tests (the pinned wheels its test.sh installs
offline); the red team's exploits read a task's test files as text and must skip those, not crash."""

from envevo.task import load_task
from envevo.verify.exploits import EXPLOITS
from envevo.verify.exploits import _base as exploit_base
from tests.conftest import FIXTURES

SEED = FIXTURES / "realistic" / "tb2-canonical"


def test_binary_test_files_are_skipped_when_exploits_read_the_tests():
    task = load_task(SEED)
    texts = exploit_base.test_texts(task)
    assert "tests/test.sh" in texts and "tests/test_outputs.py" in texts
    assert not any(p.endswith(".whl") for p in texts)
    assert any(p.endswith(".whl") for p in task.paths())


def test_every_scripted_exploit_reads_the_fixture_without_crashing():
    import importlib

    task = load_task(SEED)
    for ref in EXPLOITS.values():
        module, _, cls = ref.partition(":")
        exploit = getattr(importlib.import_module(module), cls)()
        if exploit.kind == "trial":
            assert exploit.script(task) is None or "planted" in exploit.script(task)
        elif exploit.kind == "static":
            assert exploit.inspect(task) == []  # nothing of solution/ or tests/ reaches the image
