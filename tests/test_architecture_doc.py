"""docs/architecture.md stays true where a test can check it: every file or folder it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
# `envevo/x/_y.py`, `tests/…`, `docs/…`, or a package folder such as `verify/` or `evolve/engines/*` (under envevo/)
_PATH = re.compile(r"`((?:envevo/|tests/|docs/)?[a-z_]+(?:/[\w.*<>]+)*/?)`")


def _named_paths(text: str) -> list[str]:
    return [m for m in _PATH.findall(text) if "/" in m or m.endswith(".py")]


def _exists(name: str) -> bool:
    if "<" in name:  # a pattern such as envevo/evolve/engines/<name>/: its folder must exist
        name = name.split("<", 1)[0].rsplit("/", 1)[0]
    name = name.rstrip("*").rstrip("/") or "."
    candidates = [ROOT / name] if name.startswith(("envevo", "tests", "docs")) else [ROOT / "envevo" / name]
    return any(c.exists() for c in candidates)


def test_every_path_the_architecture_doc_names_exists():
    names = _named_paths(DOC.read_text(encoding="utf-8"))
    assert len(names) > 30  # the doc names the floors' packages and the plugin modules
    missing = sorted({n for n in names if not _exists(n)})
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"


def test_a_wrong_path_is_caught():
    assert not _exists("envevo/verify/_no_such_module.py")
    assert not _exists("nosuchpackage/")
    assert _named_paths("see `evolve/_loop.py` and `verify/`") == ["evolve/_loop.py", "verify/"]
