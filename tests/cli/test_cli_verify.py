"""`envevo verify` end to end: the seeds are sound, each broken fixture is caught for the right reason."""

import json

import pytest

from envevo.verify import failure_classes
from tests.conftest import FIXTURES, ROOT, run_cli

BROKEN = FIXTURES / "broken"
# What `verify --json` must say about each broken fixture: (failing verifier, words its reason contains).
EXPECTED = {
    "oracle-fails": ("oracle", "scored 0.0"),
    "passes-on-nop": ("invalid_test", "pass on an untouched environment"),
    "env-build-fails": ("oracle", "environment_build_failure"),
    "no-reward": ("invalid_test", "wrote no reward"),
}


@pytest.mark.sandbox
def test_broken_fixtures_are_classified(sandbox, tmp_path):
    proc = run_cli("verify", *(str(BROKEN / n) for n in EXPECTED), "--json", "--jobs-dir", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    verdicts = {v["task"]: v for v in json.loads(proc.stdout)}
    assert set(verdicts) == set(EXPECTED)
    for name, (verifier, words) in EXPECTED.items():
        v = verdicts[name]
        assert v["ok"] is False, name
        assert v[verifier]["passed"] is False, name
        assert any(words in r for r in v[verifier]["reasons"]), (name, v[verifier]["reasons"])
    # Faults are attributed, not smeared: a sound half stays sound.
    assert verdicts["oracle-fails"]["invalid_test"]["passed"] is True
    assert verdicts["passes-on-nop"]["oracle"]["passed"] is True
    assert verdicts["env-build-fails"]["invalid_test"]["passed"] is False


@pytest.mark.sandbox
def test_every_seed_is_sound(sandbox, tmp_path):
    # The defaults: oracle ×2, the empty solution, the red team and the mutation verifier (sample:4). This one run is
    # also where every seed gets its mutation score (what `envevo audit` records from the same verdict: it runs
    # verify_tasks too); running `audit` over the seeds as well cost 121 s of CI for the same trials.
    seeds = ROOT / "examples" / "seeds"
    proc = run_cli("verify", str(seeds), "--json", "--jobs-dir", str(tmp_path))
    verdicts = json.loads(proc.stdout)
    assert sorted(v["task"] for v in verdicts) == sorted(p.name for p in seeds.iterdir() if (p / "task.toml").is_file())
    assert len(verdicts) >= 6
    bad = {v["task"]: v for v in verdicts if not v["ok"]}
    assert not bad, json.dumps(bad, indent=1)[:4000]
    assert proc.returncode == 0
    for v in verdicts:
        assert len(v["oracle"]["runs"]) == 2 and all(r["reward"] == 1.0 for r in v["oracle"]["runs"])
        assert v["invalid_test"]["runs"][0]["reward"] == 0.0
        assert v["red_team"]["passed"] and not v["red_team"]["inconclusive"], v["task"]
        # Every mutant run is killed: the seeds' tests check every step they sample.
        m = v["mutation"]["metrics"]
        assert m["run"] >= 1 and m["killed"] == m["run"] and m["survived"] == 0, (v["task"], m)
        assert v["survivors"] == [] and failure_classes(v) == [], v["task"]


def test_not_a_directory_is_one_line(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    proc = run_cli("verify", str(f))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_missing_instruction_is_one_line(tmp_path):
    task = tmp_path / "t"
    (task / "tests").mkdir(parents=True)
    (task / "environment").mkdir()
    (task / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\n")
    proc = run_cli("verify", str(task))
    assert proc.returncode == 2
    assert "instruction.md" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_image_map_is_one_line():
    proc = run_cli("verify", str(FIXTURES / "runtime" / "hello"), "--image-map", "no-equals-sign")
    assert proc.returncode == 2
    assert "image" in proc.stderr.lower() and "Traceback" not in proc.stderr
