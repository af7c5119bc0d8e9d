"""The cached image build against a fake engine on PATH (no container runs)."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from envevo.runtime._image_cache import build_cached_image

FAKE = f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
log = os.environ["FAKE_ENGINE_LOG"]
with open(log, "a") as f:
    f.write(json.dumps(args) + "\\n")
if args[:2] == ["image", "exists"]:
    sys.exit(1)
if args[0] == "build":
    builds = sum(1 for line in open(log) if json.loads(line)[0] == "build")
    if builds <= int(os.environ["FAKE_RACES"]):
        print("Error: checking if cached image exists from a previous build: getting top layer info: layer not known")
        sys.exit(125)
"""


def _engine(tmp_path, monkeypatch, races: int):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "podman").write_text(FAKE)
    (bin_dir / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_ENGINE_LOG", str(tmp_path / "engine.log"))
    monkeypatch.setenv("FAKE_RACES", str(races))
    env_dir = tmp_path / "environment"
    env_dir.mkdir()
    (env_dir / "Dockerfile").write_text("FROM scratch\n")
    return env_dir, lambda: [json.loads(line)[0] for line in (tmp_path / "engine.log").read_text().splitlines()]


def test_a_layer_pruned_under_the_build_by_another_process_is_built_again(tmp_path, monkeypatch):
    """Two envevo processes share one podman store: a prune in one can remove a layer the other's build had just
    found in its cache. That build fails with "layer not known"; built once more, it succeeds."""
    env_dir, verbs = _engine(tmp_path, monkeypatch, races=1)
    ok, _tag, _output = asyncio.run(build_cached_image("podman", env_dir))
    assert ok and verbs().count("build") == 2


def test_a_build_that_keeps_failing_is_not_retried_forever(tmp_path, monkeypatch):
    env_dir, verbs = _engine(tmp_path, monkeypatch, races=5)
    ok, _tag, output = asyncio.run(build_cached_image("podman", env_dir))
    assert not ok and "layer not known" in output and verbs().count("build") == 2
