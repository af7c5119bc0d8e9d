"""One event loop per command, started by the command: no library function under envevo/ calls asyncio.run.

Harbor keeps loop-bound locks at module level, so a library function that starts its own loop breaks when a caller
already runs one (a test, a notebook, a trainer) and splits one command's work over several loops. The CLI commands
(envevo/cli/) own the one asyncio.run of each command; the only other owners are process entry points: the Ray
worker's task functions and the live-trial worker process.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "envevo"

# Process entry points, each the top of its own process: (path relative to envevo/) -> why.
ENTRY_POINTS: dict[str, str] = {
    "evolve/_ray.py": "a Ray worker runs one generation or trial per task, in its own process",
    "trainers/_live_worker.py": "the live-trial worker is a process of its own (its main loop)",
}


def asyncio_runs(path: Path) -> list[int]:
    """Lines of `path` that call asyncio.run (as `asyncio.run(...)`, or `run(...)` imported from asyncio)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and node.module == "asyncio" for a in node.names if a.name == "run"}
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr == "run" and isinstance(f.value, ast.Name)
                and f.value.id == "asyncio") or (isinstance(f, ast.Name) and f.id in names):
            lines.append(node.lineno)
    return lines


def library_asyncio_runs(package: Path) -> list[str]:
    """`path:line` of every asyncio.run in `package` outside cli/ and the process entry points."""
    bad = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith("cli/") or rel in ENTRY_POINTS:
            continue
        bad += [f"envevo/{rel}:{line}" for line in asyncio_runs(path)]
    return bad


def test_no_library_function_starts_an_event_loop() -> None:
    bad = library_asyncio_runs(PACKAGE)
    assert not bad, "make these async and let the command's asyncio.run await them:\n" + "\n".join(bad)


def test_the_entry_points_exist() -> None:
    assert all((PACKAGE / rel).is_file() for rel in ENTRY_POINTS)


def test_the_scan_catches_planted_calls(tmp_path: Path) -> None:
    files = {
        "rollout/_a.py": "import asyncio\n\ndef f():\n    return asyncio.run(g())\n",
        "analysis/_b.py": "from asyncio import run as go\n\ndef f():\n    go(g())\n",
        "cli/c.py": "import asyncio\nasyncio.run(main())\n",
        "evolve/_ray.py": "import asyncio\nasyncio.run(main())\n",
        "trace/_d.py": "async def f():\n    await asyncio.sleep(0)  # asyncio.run( in a comment is no call\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert library_asyncio_runs(tmp_path) == ["envevo/analysis/_b.py:4", "envevo/rollout/_a.py:4"]
