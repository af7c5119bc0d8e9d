"""`envevo export --images --registry … --push` against a real registry on loopback (Debian's docker-registry):
every exported task names a pinned image, the verifier's too when it runs separately, and a pull by that digest
works from the registry alone (issue 23)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import tomllib
import urllib.request

import pytest

from envevo.store import LineageStore
from envevo.task import load_task
from tests.conftest import FIXTURES, run_cli

pytestmark = pytest.mark.sandbox


@pytest.fixture
def registry(tmp_path):
    binary = shutil.which("docker-registry")
    if binary is None:
        pytest.skip("Debian's docker-registry is not installed (.ci/run installs it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "registry.yml"
    config.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {tmp_path / 'blobs'}\n"
                      f"http:\n  addr: 127.0.0.1:{port}\n")
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def untag_afterwards(registry):
    yield
    listed = subprocess.run(["podman", "images", "--digests", "--format", "{{.Repository}} {{.Tag}} {{.Digest}}"],
                            capture_output=True, text=True).stdout.splitlines()
    # Tagged ones by tag; the one pulled by digest has no tag.
    mine = [f"{repo}:{tag}" if tag != "<none>" else f"{repo}@{digest}"
            for repo, tag, digest in (line.split() for line in listed) if repo.startswith(f"{registry}/")]
    if mine:
        subprocess.run(["podman", "rmi", *mine], capture_output=True)


def test_export_pushes_pinned_images_that_pull_by_digest(sandbox, registry, untag_afterwards, procedural_run):
    run, _ = procedural_run
    with LineageStore.open(run) as store:  # a hardened task with a separate verifier beside the procedural lineage
        store.create_lineage("sep", load_task(FIXTURES / "realistic" / "separate-verifier"), verified=True)
    out = run.parent / "export"
    result = run_cli("export", str(run), "--out", str(out), "--format", "rl", "--images",
                     "--registry", f"{registry}/envevo", "--push", "--json", timeout=1800)
    assert result.returncode == 0, result.stderr
    tasks = {p.name: tomllib.loads((p / "task.toml").read_text()) for p in (out / "tasks").iterdir()
             if p.is_dir()}  # beside export's own marker file
    assert (out / "tasks" / ".envevo-export.json").is_file()
    assert len(tasks) == 4
    for name, config in tasks.items():
        image = config["environment"]["docker_image"]
        assert image.startswith(f"{registry}/envevo/{name.lower()}@sha256:"), image
    sep = tasks["sep__g00"]
    verifier_env = sep["verifier"]["environment"]
    assert verifier_env["docker_image"].startswith(f"{registry}/envevo/sep__g00-verifier@sha256:")
    # The verifier keeps the task's limits: no network, same memory (not Harbor's defaults).
    assert verifier_env["network_mode"] == "no-network" and verifier_env["memory_mb"] == sep["environment"]["memory_mb"]
    # A pull by digest needs nothing but the registry: the local tag is gone first.
    image = sep["environment"]["docker_image"]
    repo = image.split("@")[0]
    tags = subprocess.run(["podman", "images", "--format", "{{.Repository}}:{{.Tag}}", repo], capture_output=True,
                          text=True).stdout.split()
    subprocess.run(["podman", "rmi", *tags], capture_output=True)
    pulled = subprocess.run(["podman", "pull", "--tls-verify=false", image], capture_output=True, text=True)
    assert pulled.returncode == 0, pulled.stderr
    ran = subprocess.run(["podman", "run", "--rm", image, "sh", "-c", "test -d /app && echo ok"], capture_output=True,
                         text=True)
    assert ran.stdout.strip() == "ok", ran.stderr


def test_images_flags_refuse_what_they_cannot_do(procedural_run):
    run, _ = procedural_run
    out = run.parent / "x"
    for args, words in ((["--push"], "--registry and --push go with --images"),
                        (["--images", "--format", "jsonl"], "--images needs --format harbor or rl"),
                        (["--images", "--push"], "--push needs --registry HOST[:PORT]/PREFIX")):
        r = run_cli("export", str(run), "--out", str(out), *args)
        assert r.returncode == 2 and words in r.stderr, r.stderr
