"""Layering: only envevo/runtime/ and envevo/sandbox/ start podman or docker processes (docs/architecture.md).

Every other module reaches containers through `envevo.runtime` (trials, `open_session`), so that it works on every
environment verification works on, and leaves no sandbox behind. A pure source scan, no engine needed: each module
is parsed and every process start is checked for an engine program.

What counts as a process start: subprocess.run/call/check_call/check_output/Popen/getoutput/getstatusoutput,
asyncio.create_subprocess_exec/_shell, a loop's subprocess_exec/_shell, os.system/popen/exec*/spawn*/posix_spawn*,
under any import alias, and a module's own wrapper that passes its first parameter to one of those (one level of
helpers such as `_exec(*argv)`, also imported from another module). What counts as an engine program: the string
"podman"/"docker" (or a path or shell line starting with it, or podman-compose/docker-compose), a name that says
engine/podman/docker (`self.engine`, `ENGINE`), a variable assigned one of those, and an argv list headed by one.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "envevo"
ALLOWED = ("envevo/runtime/", "envevo/sandbox/")
ENGINES = {"podman", "docker", "podman-compose", "docker-compose"}
_ENGINE_NAME = re.compile(r"(^|_)(engine|engines|podman|docker)(_|$)", re.IGNORECASE)

_SUBPROCESS = {"run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput"}
# qualified spawn function -> index of the program argument
SPAWNS: dict[str, int] = {
    **{f"subprocess.{n}": 0 for n in _SUBPROCESS},
    "asyncio.create_subprocess_exec": 0,
    "asyncio.create_subprocess_shell": 0,
    "asyncio.subprocess.create_subprocess_exec": 0,
    "asyncio.subprocess.create_subprocess_shell": 0,
    "os.system": 0,
    "os.popen": 0,
    "os.posix_spawn": 0,
    "os.posix_spawnp": 0,
    **{f"os.{n}": 0 for n in ("execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe")},
    **{f"os.{n}": 1 for n in ("spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe")},
}
_METHOD_SPAWNS = {"subprocess_exec": 1, "subprocess_shell": 1}  # loop.subprocess_exec(protocol_factory, *args)


@dataclass
class Violation:
    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


@dataclass
class _Module:
    path: str
    name: str
    tree: ast.Module
    source: str
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> dotted origin
    spawners: dict[str, int] = field(default_factory=dict)  # function name -> program parameter index
    functions: list = field(default_factory=list)
    calls: dict[int, list[ast.Call]] = field(default_factory=dict)  # id(function or module) -> its own calls


def _module_name(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _aliases(tree: ast.Module, module: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: -node.level] if not module.endswith("__init__") else module.split(".")
                base = ".".join([*parts, *([base] if base else [])])
            for a in node.names:
                out[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
    return out


def _dotted(expr: ast.expr, aliases: dict[str, str]) -> str | None:
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    head = aliases.get(expr.id, expr.id)
    return ".".join([head, *reversed(parts)])


class _Scope:
    """Assignments visible to a call: its function's and the module's."""

    def __init__(self, *assign_maps: dict[str, list[ast.expr]]):
        self.maps = assign_maps

    def values(self, name: str) -> list[ast.expr]:
        return [v for m in self.maps for v in m.get(name, [])]


def _assignments(body: ast.AST, *, nested: bool) -> dict[str, list[ast.expr]]:
    """name -> assigned values, in `body` (not descending into nested functions unless `nested`)."""
    out: dict[str, list[ast.expr]] = {}

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if not nested and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(child, ast.Assign):
                for t in child.targets:
                    if isinstance(t, ast.Name):
                        out.setdefault(t.id, []).append(child.value)
            elif isinstance(child, (ast.AnnAssign, ast.AugAssign)) and isinstance(child.target, ast.Name) and child.value:
                out.setdefault(child.target.id, []).append(child.value)
            visit(child)

    visit(body)
    return out


def _is_engine(expr: ast.expr | None, scope: _Scope, seen: frozenset[str] = frozenset()) -> bool:
    """Does `expr` evaluate to an engine program (a string, or a name holding one)?"""
    if expr is None:
        return False
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        words = expr.value.split()
        return bool(words) and words[0].rsplit("/", 1)[-1] in ENGINES
    if isinstance(expr, ast.JoinedStr):
        return bool(expr.values) and _is_engine(
            expr.values[0].value if isinstance(expr.values[0], ast.FormattedValue) else expr.values[0], scope, seen)
    if isinstance(expr, ast.Name):
        if _ENGINE_NAME.search(expr.id):
            return True
        if expr.id in seen:
            return False
        return any(_is_engine(v, scope, seen | {expr.id}) for v in scope.values(expr.id))
    if isinstance(expr, ast.Attribute):
        return bool(_ENGINE_NAME.search(expr.attr))
    if isinstance(expr, ast.Subscript):
        return _is_engine(expr.value, scope, seen)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _is_engine(expr.left, scope, seen)
    if isinstance(expr, ast.IfExp):
        return _is_engine(expr.body, scope, seen) or _is_engine(expr.orelse, scope, seen)
    if isinstance(expr, ast.Call) and isinstance(expr.func, (ast.Name, ast.Attribute)):
        name = expr.func.id if isinstance(expr.func, ast.Name) else expr.func.attr
        return name == "which" and bool(expr.args) and _is_engine(expr.args[0], scope, seen)
    return False


def _is_engine_argv(expr: ast.expr, scope: _Scope, seen: frozenset[str] = frozenset()) -> bool:
    """Does `expr` evaluate to an argv list headed by an engine?"""
    if isinstance(expr, (ast.List, ast.Tuple)):
        return bool(expr.elts) and _program_is_engine(expr.elts[0], scope, seen)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _is_engine_argv(expr.left, scope, seen)
    if isinstance(expr, ast.Name) and expr.id not in seen:
        return any(_is_engine_argv(v, scope, seen | {expr.id}) for v in scope.values(expr.id))
    return False


def _program_is_engine(arg: ast.expr, scope: _Scope, seen: frozenset[str] = frozenset()) -> bool:
    """`arg` in program position: a program, an argv list, or `*argv`."""
    if isinstance(arg, ast.Starred):
        return _is_engine_argv(arg.value, scope, seen)
    return _is_engine(arg, scope, seen) or _is_engine_argv(arg, scope, seen)


def _program_arg(call: ast.Call, index: int) -> ast.expr | None:
    """The program argument at positional `index`; a `*argv` before it stands for it."""
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred) or i == index:
            return a
    for kw in call.keywords:
        if kw.arg in ("args", "program", "cmd", "command", "file", "path"):
            return kw.value
    return None


def _spawn_index(call: ast.Call, mod: _Module, spawners: dict[str, int]) -> int | None:
    """The program argument's index if `call` starts a process (directly or through a known wrapper)."""
    func = call.func
    dotted = _dotted(func, mod.aliases)
    if dotted in SPAWNS:
        return SPAWNS[dotted]
    if isinstance(func, ast.Attribute) and func.attr in _METHOD_SPAWNS:
        return _METHOD_SPAWNS[func.attr]
    # A wrapper: a function of this module (or a method, via self.), or one imported from another module.
    if isinstance(func, ast.Name):
        if func.id in mod.spawners:
            return mod.spawners[func.id]
        origin = mod.aliases.get(func.id)
        if origin in spawners:
            return spawners[origin]
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls") and func.attr in mod.spawners:
            return mod.spawners[func.attr]
        if dotted in spawners:
            return spawners[dotted]
    return None


def _functions(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _calls_in(func: ast.AST):
    """Calls in `func`'s own body (nested functions are visited on their own)."""
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _find_spawners(mod: _Module, spawners: dict[str, int]) -> bool:
    """Mark functions that pass their program parameter to a process start; True if any was added."""
    added = False
    for fn in mod.functions:
        if fn.name in mod.spawners:
            continue
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args) if a.arg not in ("self", "cls")]
        first = params[0] if params else None
        star = fn.args.vararg.arg if fn.args.vararg else None
        for call in mod.calls[id(fn)]:
            index = _spawn_index(call, mod, spawners)
            arg = _program_arg(call, index) if index is not None else None
            if arg is None:
                continue
            head = arg.value if isinstance(arg, ast.Starred) else arg
            if isinstance(head, (ast.List, ast.Tuple)) and head.elts:
                head = head.elts[0].value if isinstance(head.elts[0], ast.Starred) else head.elts[0]
            if isinstance(head, ast.Name) and head.id in (first, star):
                mod.spawners[fn.name] = 0
                added = True
                break
    return added


def _load(files: dict[str, str]) -> list[_Module]:
    mods = []
    for path, source in files.items():
        name = _module_name(path)
        tree = ast.parse(source, filename=path)
        mod = _Module(path, name, tree, source, _aliases(tree, name), functions=list(_functions(tree)))
        mod.calls = {id(body): list(_calls_in(body)) for body in (tree, *mod.functions)}
        mods.append(mod)
    return mods


def check_sources(files: dict[str, str], allowed: tuple[str, ...] = ALLOWED) -> list[Violation]:
    """Engine process starts in `files` ({repo-relative path: source}) outside the `allowed` folders."""
    mods = _load(files)
    spawners: dict[str, int] = {}
    changed = True
    while changed:  # wrappers of wrappers, also across modules
        changed = False
        for mod in mods:
            if _find_spawners(mod, spawners):
                changed = True
            for fn, index in mod.spawners.items():
                if f"{mod.name}.{fn}" not in spawners:
                    spawners[f"{mod.name}.{fn}"] = index
                    changed = True
    found = []
    for mod in mods:
        if mod.path.startswith(allowed):
            continue
        module_scope: dict[str, list[ast.expr]] | None = None
        for body in (mod.tree, *mod.functions):
            for call in mod.calls[id(body)]:
                index = _spawn_index(call, mod, spawners)
                arg = _program_arg(call, index) if index is not None else None
                if arg is None:
                    continue
                if module_scope is None:
                    module_scope = _assignments(mod.tree, nested=False)
                own = {} if body is mod.tree else _assignments(body, nested=False)
                if _program_is_engine(arg, _Scope(own, module_scope)):
                    line = mod.source.splitlines()[call.lineno - 1].strip()
                    found.append(Violation(mod.path, call.lineno, line))
    return sorted(found, key=lambda v: (v.path, v.line))


def package_sources() -> dict[str, str]:
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))}


# ---- the tree ----------------------------------------------------------------------------------------------------
def test_only_the_runtime_and_sandbox_layers_start_container_engines():
    violations = check_sources(package_sources())
    assert not violations, (
        "these modules start podman/docker themselves; go through envevo.runtime (run_trials, open_session):\n"
        + "\n".join(map(str, violations)))


def test_the_layers_themselves_are_seen_starting_engines():
    """The scan is not vacuous: without the exemption it finds the runtime's and the sandbox layer's engine calls."""
    found = {v.path for v in check_sources(package_sources(), allowed=())}
    assert "envevo/runtime/_local_env.py" in found and "envevo/runtime/_cleanup.py" in found
    assert all(p.startswith(ALLOWED) for p in found)


# ---- the checker on planted violations ---------------------------------------------------------------------------
PLANTED = {
    "literal argv": 'import subprocess\ndef f():\n    subprocess.run(["podman", "ps"])\n',
    "alias and path": 'import subprocess as sp\nsp.check_output(["/usr/bin/docker", "images"])\n',
    "from import": 'from subprocess import Popen\nPopen(("podman", "run", "x"))\n',
    "engine attribute": ('import asyncio\nclass S:\n    async def go(self):\n'
                         '        await asyncio.create_subprocess_exec(self.engine, "run", "--rm", "img")\n'),
    "engine constant": 'import subprocess\nTOOL = "podman"\ndef f(tag):\n    subprocess.run([TOOL, "rmi", tag])\n',
    "argv variable": ('import asyncio\nasync def f(engine_name):\n    argv = [engine_name, "exec"]\n    argv += ["c"]\n'
                      '    await asyncio.create_subprocess_exec(*argv)\n'),
    "shell line": 'import os\nos.system("podman rm -f $(podman ps -aq)")\n',
    "f-string shell": 'import subprocess\ndef f(engine):\n    subprocess.run(f"{engine} ps -a", shell=True)\n',
    "which": 'import shutil, subprocess\nsubprocess.run([shutil.which("docker"), "ps"])\n',
    "wrapper": ('import asyncio\nasync def _exec(*argv, timeout):\n'
                '    p = await asyncio.create_subprocess_exec(*argv)\n    return await p.wait()\n'
                'class Shell:\n    engine = "podman"\n    async def run(self):\n'
                '        await _exec(self.engine, "run", "--rm", "img", timeout=5)\n'),
    "method wrapper": ('import subprocess\nclass C:\n    def _sh(self, *a):\n        return subprocess.run(a)\n'
                       '    def go(self):\n        self._sh("docker", "ps")\n'),
    "loop method": ('import asyncio\nasync def f(loop, proto):\n'
                    '    await loop.subprocess_exec(proto, "podman", "ps")\n'),
}


def test_the_checker_catches_planted_violations():
    for what, source in PLANTED.items():
        found = check_sources({"envevo/llm/_planted.py": source})
        assert len(found) == 1, f"{what}: {found}"
        assert found[0].path == "envevo/llm/_planted.py"


def test_a_runtime_helper_called_from_outside_is_caught_and_inside_is_allowed():
    runtime = ('import asyncio\nasync def _run(*argv):\n    p = await asyncio.create_subprocess_exec(*argv)\n'
               '    return await p.wait()\nasync def ok():\n    await _run("podman", "ps")\n')
    outside = 'from envevo.runtime._local_env import _run\nasync def f():\n    await _run("podman", "rm", "-f", "x")\n'
    found = check_sources({"envevo/runtime/_local_env.py": runtime, "envevo/evolve/_planted.py": outside})
    assert [(v.path, v.line) for v in found] == [("envevo/evolve/_planted.py", 3)]


def test_the_checker_leaves_other_processes_and_mere_mentions_alone():
    clean = (
        'import subprocess, sys, shutil, asyncio\n'
        'from envevo.runtime import open_session\n'
        'HELP = "use podman or docker"\n'
        'def f(repo):\n'
        '    subprocess.run(["git", "-C", repo, "status"], check=True)\n'
        '    subprocess.run([sys.executable, "-m", "envevo.cli", "--env", "podman"])\n'
        '    have = shutil.which("podman") is not None\n'
        '    print(f"podman run {repo}")\n'
        'async def g(task):\n'
        '    async with open_session(task, env="podman") as s:\n'
        '        await s.exec("docker ps")\n'
        '    await asyncio.create_subprocess_exec("tar", "-xf", "a.tar")\n'
    )
    assert check_sources({"envevo/llm/_clean.py": clean}) == []
