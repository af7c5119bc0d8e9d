"""verifiers' HarborTaskset (how prime-rl loads Harbor tasks) accepts what `envevo export --images` writes: the agent's
image from `[environment] docker_image`, a separate verifier's own image, and the verifier's no-network policy; it
refuses the same export without images, because it cannot build a Dockerfile (issue 23)."""

from __future__ import annotations

import shutil

import pytest

taskset = pytest.importorskip("verifiers.v1.tasksets.harbor.taskset", reason="make taskset-venv")

from envevo.evolve.engines.procedural import compose, random_chain  # noqa: E402
from envevo.sandbox._publish import _name_images  # noqa: E402
from envevo.task import save  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

AGENT = "127.0.0.1:5000/envevo/{}@sha256:" + "a" * 64
VERIFIER = "127.0.0.1:5000/envevo/{}-verifier@sha256:" + "b" * 64


def _export(tmp_path):
    out = tmp_path / "tasks"
    save(compose(random_chain(None, 2, 5)), out / "proc__g00")
    shutil.copytree(FIXTURES / "realistic" / "separate-verifier", out / "sep__g00")
    return out


def _parse(task_dir):
    return taskset.parse_task(task_dir, 0, taskset.HarborConfig())


def test_a_plain_export_is_refused_for_its_dockerfile(tmp_path):
    out = _export(tmp_path)
    for d in out.iterdir():
        with pytest.raises(ValueError, match="needs a pullable docker_image"):
            _parse(d)


def test_an_images_export_loads_with_its_pinned_images(tmp_path):
    out = _export(tmp_path)
    _name_images(out / "proc__g00", AGENT.format("proc__g00"), None)
    _name_images(out / "sep__g00", AGENT.format("sep__g00"), VERIFIER.format("sep__g00"))
    proc, sep = _parse(out / "proc__g00"), _parse(out / "sep__g00")
    assert proc.image == AGENT.format("proc__g00")
    assert sep.image == AGENT.format("sep__g00")
    assert sep.verifier_image == VERIFIER.format("sep__g00")
    # The verifier's box keeps the task's policy: no network (Harbor's default would allow it).
    assert sep.verifier is not None and sep.verifier.network_allow == []
