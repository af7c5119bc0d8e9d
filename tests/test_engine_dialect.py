"""The local engines' differences live in one object each (envevo/runtime/_engine_dialect.py): no other module of
envevo/ names an engine, so a new engine is one dialect, and the argv each one gets is the one its CLI takes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from envevo.runtime import DEFAULT_ENGINE, DIALECTS, LOCAL_ENGINES, dialect_of

PACKAGE = Path(__file__).resolve().parent.parent / "envevo"
DIALECT_MODULE = PACKAGE / "runtime" / "_engine_dialect.py"


def _engine_literals(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in LOCAL_ENGINES]


def test_no_module_but_the_dialect_names_an_engine():
    found = {str(p.relative_to(PACKAGE.parent)): lines for p in sorted(PACKAGE.rglob("*.py"))
             if p != DIALECT_MODULE and (lines := _engine_literals(p))}
    assert found == {}, f"engine-name literals outside {DIALECT_MODULE.name} (ask dialect_of(engine) instead): {found}"


def test_the_literal_scan_sees_a_comparison(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('def f(engine):\n    """Runs on podman or docker."""\n    return engine == "podman"\n')
    assert _engine_literals(probe) == [3]  # the comparison, not the docstring


def test_each_engine_gets_the_argv_its_cli_takes():
    podman, docker = dialect_of("podman"), dialect_of("docker")
    assert podman.rm("a", "b") == ["podman", "rm", "-f", "--time", "0", "a", "b"]
    assert docker.rm("a") == ["docker", "rm", "-f", "a"]  # docker's rm -f kills at once and has no --time
    assert podman.stop("c") == ["podman", "stop", "--time", "0", "c"]
    assert docker.stop("c") == ["docker", "stop", "-t", "0", "c"]
    assert podman.push("r/x:1", tls_verify=False, digest_file="/d") == [
        "podman", "push", "--tls-verify=false", "--digestfile", "/d", "r/x:1"]
    assert docker.push("r/x:1", tls_verify=False, digest_file="/d") == ["docker", "push", "r/x:1"]


def test_the_default_is_a_local_engine_and_others_are_refused():
    assert DEFAULT_ENGINE in DIALECTS
    with pytest.raises(ValueError, match="not a local engine"):
        dialect_of("modal")


def test_the_heredoc_rewrite_asks_the_dialect(monkeypatch):
    from envevo.sandbox import _preflight

    monkeypatch.setattr(_preflight, "engine_version", lambda engine: (4, 9))
    assert not _preflight.builder_knows_heredocs("podman")  # buildah before podman 5 gets them wrong
    assert _preflight.builder_knows_heredocs("docker")  # BuildKit
    assert _preflight.builder_knows_heredocs("modal")  # not a local builder: nothing to rewrite for
    monkeypatch.setattr(_preflight, "engine_version", lambda engine: (5, 0))
    assert _preflight.builder_knows_heredocs("podman")
