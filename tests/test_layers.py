"""The house rules of docs/architecture.md, checked on the syntax tree of every module under envevo/.

- A package imports only packages on lower floors (so there is no import circle among packages).
- No package imports another package's private module (`envevo.x._y` from outside `envevo.x`); public names are
  re-exported from the package `__init__`.
- Only envevo/runtime/ imports Harbor.
- No module is over 400 lines.
- docs/architecture.md lists the floors of FLOORS, in order.

Imports inside `if TYPE_CHECKING:` count too: a type annotation is a dependency a reader has to follow. Plugins on
a higher floor are reached through lazy registries that hold `"module:attr"` strings (or lazy maps to a bare module
name). Those are edges too: each one that points up, or into another package's private module, must be a named
plugin edge in PLUGIN_EDGES.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "envevo"

# Low to high. Packages on one floor must not import each other.
FLOORS: list[tuple[str, ...]] = [
    ("errors", "_process", "_registry", "_home"),
    ("task",),
    ("trace",),
    ("catalog",),
    ("runtime",),
    ("sandbox", "verify"),
    ("llm", "harden"),
    ("store",),
    ("evolve",),
    ("rollout",),
    ("analysis",),
    ("report",),
    ("schedule",),
    ("trainers",),
    ("api",),
    ("cli",),
]
FLOOR = {pkg: i for i, names in enumerate(FLOORS) for pkg in names}
MAX_LINES = 400

# (importing module, imported module): each a named, commented exception. Keep this list short.
EXEMPT: set[tuple[str, str]] = set()

# Registry strings that point up a floor: (registry module, target module) -> why the plugin lives up there.
# Nothing else may: a string edge up a floor, or into another package's private module, fails the test.
PLUGIN_EDGES: dict[tuple[str, str], str] = {
    ("envevo.trace._estimators", "envevo.catalog"):
        "the catalog prior weighs the catalog's own scenarios and skills; trace, which defines ξ, sits below it",
    ("envevo.trace._task_xi", "envevo.catalog"):
        "a procedural task carries its chain, not ξ; only the catalog reads a chain (its final scenario)",
    ("envevo.trace._estimators", "envevo.evolve"):
        "the corpus p_T estimator reads labels that engines extract from a corpus",
    ("envevo.trace._estimators", "envevo.llm"): "the llm p_T estimator asks a reference model",
    ("envevo.trace._estimators", "envevo.evolve.engines.llm"): "the LLM engine's own label prior",
    ("envevo.verify.exploits", "envevo.llm"): "the LLM hacker exploit drives a model in the sandbox",
}
_REGISTRY_STRING = re.compile(r"^(envevo(?:\.\w+)+):[A-Za-z_][\w.]*$")
_MODULE_STRING = re.compile(r"^envevo(?:\.\w+)+$")  # a lazy map's bare module name, if such a module exists


@dataclass(frozen=True)
class Import:
    path: str  # relative to the repo root
    line: int
    source: str  # the importing module, dotted
    target: str  # the imported module, dotted (a from-import's names are tried as submodules too)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[Import]:
    source = _module_name(path)
    is_pkg = path.name == "__init__.py"
    rel = str(path.relative_to(ROOT))
    out: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
        if isinstance(node, ast.Import):
            out += [Import(rel, node.lineno, source, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = source.split(".") if is_pkg else source.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append(Import(rel, node.lineno, source, mod))
            # `from envevo.x import _y` imports the private module envevo.x._y
            out += [Import(rel, node.lineno, source, f"{mod}.{a.name}") for a in node.names
                    if (PACKAGE.parent / (f"{mod}.{a.name}".replace(".", "/") + ".py")).exists()
                    or (PACKAGE.parent / f"{mod}.{a.name}".replace(".", "/") / "__init__.py").exists()]
    return out


def _is_module(dotted: str) -> bool:
    base = ROOT / dotted.replace(".", "/")
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def registry_edges(path: Path) -> list[Import]:
    """The `"envevo.x.y:attr"` strings of a module, and its strings that name an envevo module: where its lazy
    registries and lazy maps load code from."""
    rel = str(path.relative_to(ROOT))
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        if m := _REGISTRY_STRING.match(node.value):
            out.append(Import(rel, node.lineno, _module_name(path), m.group(1)))
        elif _MODULE_STRING.match(node.value) and _is_module(node.value):
            out.append(Import(rel, node.lineno, _module_name(path), node.value))
    return out


def unnamed_plugin_edges(edges: list[Import]) -> list[str]:
    """Registry strings that point up a floor or into a private module without a PLUGIN_EDGES entry."""
    named = {(src, dst) for src, dst in PLUGIN_EDGES}
    edges = [e for e in edges if (e.source, e.target) not in named]
    return upward_imports(edges) + private_imports(edges)


def _all_imports() -> list[Import]:
    return [imp for path in sorted(PACKAGE.rglob("*.py")) for imp in _imports(path)]


def _package(dotted: str) -> str | None:
    parts = dotted.split(".")
    if parts[0] != "envevo" or len(parts) < 2:
        return None
    return parts[1]


def _cross_package(imports: list[Import]) -> Iterator[tuple[Import, str, str]]:
    """Each import from one envevo package into another that is not exempt, with both package names."""
    for imp in imports:
        src, dst = _package(imp.source), _package(imp.target)
        if src is not None and dst is not None and src != dst and (imp.source, imp.target) not in EXEMPT:
            yield imp, src, dst


def upward_imports(imports: list[Import]) -> list[str]:
    bad = []
    for imp, src, dst in _cross_package(imports):
        if src not in FLOOR or dst not in FLOOR:
            bad.append(f"{imp.path}:{imp.line}: {imp.target}: package not on any floor (add it to FLOORS)")
        elif FLOOR[dst] >= FLOOR[src]:
            bad.append(f"{imp.path}:{imp.line}: {src} (floor {FLOOR[src]}) imports {imp.target} (floor {FLOOR[dst]})")
    return bad


def private_imports(imports: list[Import]) -> list[str]:
    bad = []
    for imp, _src, dst in _cross_package(imports):
        if any(part.startswith("_") for part in imp.target.split(".")[2:]):
            bad.append(f"{imp.path}:{imp.line}: {imp.source} imports {dst}'s private {imp.target}")
    return bad


def harbor_imports(imports: list[Import]) -> list[str]:
    return [f"{imp.path}:{imp.line}: {imp.target}" for imp in imports
            if imp.target.split(".")[0] == "harbor" and _package(imp.source) != "runtime"]


def long_modules() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            out.append(f"{path.relative_to(ROOT)}: {n} lines")
    return out


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return _all_imports()


def test_every_package_is_on_a_floor() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    packages |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert packages - set(FLOOR) == set(), "add new packages to FLOORS and to docs/architecture.md"


def test_packages_import_only_lower_floors(imports: list[Import]) -> None:
    bad = upward_imports(imports)
    assert not bad, "upward or sideways imports:\n" + "\n".join(bad)


def test_no_private_cross_package_imports(imports: list[Import]) -> None:
    bad = private_imports(imports)
    assert not bad, "re-export these names from the package __init__:\n" + "\n".join(bad)


def test_only_runtime_imports_harbor(imports: list[Import]) -> None:
    bad = harbor_imports(imports)
    assert not bad, "Harbor imports outside envevo/runtime/:\n" + "\n".join(bad)


def test_registry_strings_point_down_or_are_named_plugins() -> None:
    edges = [e for path in sorted(PACKAGE.rglob("*.py")) for e in registry_edges(path)]
    bad = unnamed_plugin_edges(edges)
    assert not bad, "name these plugin edges in PLUGIN_EDGES, with why:\n" + "\n".join(bad)
    stale = set(PLUGIN_EDGES) - {(e.source, e.target) for e in edges}
    assert not stale, f"PLUGIN_EDGES no registry uses any more: {sorted(stale)}"


def documented_floors(text: str) -> list[tuple[str, ...]]:
    """The floors as docs/architecture.md lists them: `N. **`pkg`** …`, the packages named in bold."""
    floors = []
    for line in text.splitlines():
        if m := re.match(r"^(\d+)\. (\*\*.*)", line):
            assert int(m.group(1)) == len(floors), f"floors out of order in docs/architecture.md: {line}"
            bold = re.findall(r"\*\*(.+?)\*\*", m.group(2))
            floors.append(tuple(name for span in bold for name in re.findall(r"`(\w+)`", span)))
    return floors


def test_the_documented_order_is_the_enforced_one() -> None:
    assert documented_floors((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")) == FLOORS


def test_no_module_over_400_lines() -> None:
    bad = long_modules()
    assert not bad, "split these modules:\n" + "\n".join(bad)


# The checker itself: planted violations must be caught.
def _planted(tmp_path: Path, files: dict[str, str]) -> list[Import]:
    global ROOT, PACKAGE
    saved = ROOT, PACKAGE
    ROOT, PACKAGE = tmp_path, tmp_path / "envevo"
    try:
        for rel, text in files.items():
            p = tmp_path / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        return _all_imports()
    finally:
        ROOT, PACKAGE = saved


def test_checker_catches_planted_violations(tmp_path: Path) -> None:
    imps = _planted(tmp_path, {
        "envevo/__init__.py": "",
        "envevo/task/__init__.py": "from envevo.store import LineageStore\n",
        "envevo/task/_x.py": "from ..trace._model import Trace\nimport harbor.models\n",
        "envevo/trace/__init__.py": "",
        "envevo/trace/_model.py": "",
        "envevo/store/__init__.py": "",
        "envevo/cli/__init__.py": "from envevo.trace import _model\nfrom envevo.task import _x\n",
        "envevo/runtime/__init__.py": "import harbor\n",
    })
    up = upward_imports(imps)
    assert any("task (floor 1) imports envevo.store" in b for b in up)
    assert any("imports envevo.trace._model" in b and "task/_x.py" in b for b in up)
    priv = private_imports(imps)
    assert any("envevo/cli/__init__.py" in b and "envevo.trace._model" in b for b in priv)
    (tmp_path / "envevo/trace/_reg.py").write_text(
        'R = {"x": "envevo.store:LineageStore", "y": "envevo.task._x:f", "z": "envevo.store", "w": "envevo.toml"}\n')
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        planted = unnamed_plugin_edges(registry_edges(tmp_path / "envevo/trace/_reg.py"))
    finally:
        ROOT = saved
    assert sum("trace (floor 2) imports envevo.store" in b for b in planted) == 2  # "module:attr" and bare module
    assert any("private envevo.task._x" in b for b in planted)
    assert not any("envevo.toml" in b for b in planted)  # a file name, not a module
    assert any("envevo/cli/__init__.py" in b and "envevo.task._x" in b for b in priv)
    harb = harbor_imports(imps)
    assert harb == ["envevo/task/_x.py:2: harbor.models"]
