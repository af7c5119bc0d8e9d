"""What a task's tests reveal before any container runs: the downloads its test script makes while grading, the
live state (a served port, a running process) its tests query, and the paths they name.

Host-side only: the tests are read as text, never run. A line is a *logical* line (backslash continuations
joined) and carries the number of its first physical line, so evidence points where a reader looks.
"""

from __future__ import annotations

import re
import shlex
from typing import Literal

from pydantic import BaseModel

from envevo.task import Task

DownloadAction = Literal["moved", "replayed", "kept"]
DownloadKind = Literal["pip", "uv", "uvx", "uv-installer", "apt", "venv", "path-setup", "offline", "other"]
_MAX_TEST_FILE_BYTES = 1_000_000  # a bigger "test" file is data, not code: not scanned


class Download(BaseModel):
    """One line of the test script that fetches (or prepares for) something while grading."""

    file: str
    line: int
    command: str
    kind: DownloadKind
    # moved: installed at build time and made a no-op at test time; replayed: run at build time and kept (a venv,
    # PATH set-up, a uvx warm-up); kept: left as it is (offline already, or cannot move: `note` says why)
    action: DownloadAction
    note: str = ""


class LiveProbe(BaseModel):
    """A test line that asks a running process (a served port, a daemon) rather than a file."""

    file: str
    line: int
    text: str
    what: str  # "port 8000 on localhost", "process list (pgrep)"


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) for each shell line, backslash continuations joined."""
    out: list[tuple[int, str]] = []
    buf, start = "", 0
    for i, raw in enumerate(text.splitlines(), 1):
        if not buf:
            start = i
        if raw.endswith("\\"):
            buf += raw[:-1] + " "
            continue
        out.append((start, buf + raw))
        buf = ""
    if buf:
        out.append((start, buf))
    return out


# A command's position: the line's start, after a shell operator or keyword, after VAR=value assignments.
_CMD_START = r"(?:^|[;&|(`!]|\b(?:then|do|if|else|sudo|exec|time)\s)\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*"
_PIP = re.compile(_CMD_START + r"(?:\S*/)?(?:pip3?(?:\.\d+)?|python3?(?:\.\d+)?\s+-m\s+pip)\s+install\b")
_UV_PIP = re.compile(_CMD_START + r"(?:\S*/)?uv\s+(?:pip\s+install|add|sync|tool\s+install)\b")
_UVX = re.compile(_CMD_START + r"(?:\S*/)?(?:uvx|uv\s+tool\s+run)\s")
_UV_RUN_WITH = re.compile(_CMD_START + r"(?:\S*/)?uv\s+run\b.*--with\b")
_UV_INSTALLER = re.compile(r"\b(?:curl|wget)\b.*astral\.sh/uv")
_APT = re.compile(_CMD_START + r"apt(?:-get)?\s+(?:-\S+\s+)*(?:update|install)\b")
_VENV = re.compile(r"-m\s+venv\b|" + _CMD_START + r"(?:uv\s+venv|virtualenv)\b")
_PATH_SETUP = re.compile(r"^\s*(?:source|\.)\s+\S*(?:\.local/bin/env|\.cargo/env)\b|^\s*export\s+PATH=")
_OTHER_FETCH = re.compile(_CMD_START + r"(?:curl|wget)\b[^\n]*\bhttps?://(?!localhost|127\.0\.0\.1|0\.0\.0\.0)")
_OFFLINE = re.compile(r"--no-index\b|--offline\b")
_READS_TESTS = re.compile(r"(?:^|[\s=])(?:/tests\b|\$\{?TEST_DIR\b)")
# A line that opens or continues a shell construct cannot be blanked without breaking the script.
_STRUCTURE = re.compile(r"(?:\bthen|\bdo|\{|\(|&&|\|\||\|)\s*$|^\s*(?:if|while|until|for|elif)\b")
_FIRST_WORD_FETCH = re.compile(r"^\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:sudo\s+)?(?:\S*/)?(?:pip3?(?:\.\d+)?|python3?(?:\.\d+)?"
                               r"|uv|apt-get|apt|curl|wget)\b")


# The first pattern that matches a line says its kind (the order matters: a uv installer is fetched with curl).
_KINDS: tuple[tuple[re.Pattern[str], DownloadKind], ...] = (
    (_UV_INSTALLER, "uv-installer"), (_APT, "apt"), (_UV_PIP, "uv"), (_PIP, "pip"), (_UVX, "uvx"),
    (_UV_RUN_WITH, "uvx"), (_VENV, "venv"), (_PATH_SETUP, "path-setup"), (_OTHER_FETCH, "other"))


def _kind(cmd: str) -> DownloadKind | None:
    return next((kind for pattern, kind in _KINDS if pattern.search(cmd)), None)


def _action(cmd: str, kind: DownloadKind) -> tuple[DownloadKind, DownloadAction, str]:
    """(kind, what harden does with the line, why) for a test-script line that fetches."""
    if kind in ("pip", "uv") and _OFFLINE.search(cmd):
        return "offline", "kept", "installs offline already (--no-index / --offline)"
    if kind in ("pip", "uv", "apt", "uv-installer", "venv") and _READS_TESTS.search(cmd):
        return kind, "kept", "reads the tests' own files (/tests), which the build context does not hold"
    if kind == "other":
        return kind, "kept", ("fetches a URL envevo does not know how to install at build time; the verifier keeps "
                              "the task's network for it")
    if kind in ("venv", "path-setup", "uvx"):
        return kind, "replayed", "run at build time too (the tools' cache and PATH), kept at test time"
    if _STRUCTURE.search(cmd) or not _FIRST_WORD_FETCH.match(cmd):
        return kind, "replayed", ("installed at build time; the line stays (it is part of a larger shell construct) "
                                  "and finds everything installed")
    return kind, "moved", ""


def grading_downloads(script: str, file: str = "tests/test.sh") -> list[Download]:
    """The test script's lines that fetch something while grading, each with what harden does about it."""
    found: list[Download] = []
    for line_no, text in logical_lines(script):
        cmd = text.strip()
        if not cmd or cmd.startswith("#") or (kind := _kind(cmd)) is None:
            continue
        kind, action, note = _action(cmd, kind)
        found.append(Download(file=file, line=line_no, command=cmd, kind=kind, action=action, note=note))
    return found


_UVX_VALUE_OPTS = {"-p", "--python", "-w", "--with", "--from", "--with-requirements", "--with-editable", "--index",
                   "--index-url", "--extra-index-url", "--default-index", "-i", "--constraints", "-c", "--overrides",
                   "--cache-dir", "--directory", "--project", "--config-file", "--python-preference"}


def uvx_warmup(cmd: str) -> str | None:
    """`uvx [opts] tool args…` as `uvx [opts] tool --version`: the same tool environment, resolved into uv's cache
    at build time, without running the tests. None when the line is not a plain uvx call."""
    try:
        lexer = shlex.shlex(cmd, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return None
    for i, tok in enumerate(tokens):
        if tok.rsplit("/", 1)[-1] == "uvx":
            start, j = i, i + 1
            break
        if tok.rsplit("/", 1)[-1] == "uv" and tokens[i + 1:i + 3] == ["tool", "run"]:
            start, j = i, i + 3
            break
    else:
        return None
    while j < len(tokens):
        tok = tokens[j]
        if tok in {";", "&&", "||", "|", ">", ">>", "&"}:
            return None
        if tok.startswith("-"):
            j += 2 if (tok in _UVX_VALUE_OPTS and "=" not in tok) else 1
            continue
        return shlex.join([*tokens[start:j + 1], "--version"])
    return None


# ---- live state --------------------------------------------------------------------------------------------
_LOCAL_HOST = r"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])"
_URL = re.compile(r"https?://" + _LOCAL_HOST + r"(?::(\d{1,5}))?")
_HOST_PORT = re.compile(r"""(?<![\w.])""" + _LOCAL_HOST + r"""['"]?\s*[:,]\s*(\d{2,5})\b""")
_NET_TOOL = re.compile(r"(?:^|[\s;&|(`])(?:nc|ncat|netcat|telnet|redis-cli|psql|mysql)\b[^\n]*\b" + _LOCAL_HOST
                       + r"|socket\.(?:create_connection|socket)|/dev/tcp/")
_PROCESS = re.compile(r"(?:^|[\s;&|(`'\"\[])(pgrep|pidof|pkill|ps\s+(?:aux|-ef|-e|ax|-A)|systemctl\s+(?:is-active|status)"
                      r"|service\s+\S+\s+status|supervisorctl|netstat|ss\s+-\w*l\w*|lsof\s+-i)|psutil\.\w+"
                      r"|/proc/(?:\d+|\[0-9\])")


def live_probes(task: Task) -> list[LiveProbe]:
    """Every test line that queries a process the solution left running, with which port or process."""
    probes: list[LiveProbe] = []
    for path, text in read_test_files(task):
        for i, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("#"):
                continue
            what = None
            if (m := _URL.search(line)) or (m := _HOST_PORT.search(line)):
                port = m.group(1)
                what = f"port {port} on localhost" if port else "a server on localhost"
            elif _NET_TOOL.search(line):
                what = "a connection to a local service"
            elif m := _PROCESS.search(line):
                what = f"the process list ({(m.group(1) or m.group(0)).split()[0]})"
            if what:
                probes.append(LiveProbe(file=path, line=i, text=line.strip()[:200], what=what))
    return probes


# ---- paths the tests name ----------------------------------------------------------------------------------
_ABS_PATH = re.compile(r"""(?<![\w$}.:/~-])(/(?:[A-Za-z0-9_.@+-]+/)*[A-Za-z0-9_.@+-]+)/?""")
_QUOTED_NAME = re.compile(r"""['"]([A-Za-z0-9_.@+-]+\.[A-Za-z0-9]{1,8})['"]""")


def read_test_files(task: Task) -> list[tuple[str, str]]:
    """(path, text) of each text file under tests/ (wheels and other binaries skipped)."""
    out = []
    for path in sorted(p for p in task.files if p.startswith("tests/")):
        data = task.files[path].data
        if len(data) > _MAX_TEST_FILE_BYTES or path.endswith((".whl", ".tar.gz", ".zip")):
            continue
        try:
            out.append((path, task.read_text(path)))
        except Exception:  # noqa: BLE001 (binary: not a test's code)
            continue
    return out


def named_paths(task: Task) -> tuple[dict[str, str], dict[str, str]]:
    """(absolute paths, bare file names) the tests mention, each with the first place it appears ("file:line")."""
    absolute: dict[str, str] = {}
    names: dict[str, str] = {}
    for path, text in read_test_files(task):
        for i, line in enumerate(text.splitlines(), 1):
            for m in _ABS_PATH.finditer(line):
                p = m.group(1).rstrip(".")
                if p not in ("/", "") and not p.startswith(("/tests", "/logs", "/dev/", "/proc/", "/usr/bin", "/bin/")):
                    absolute.setdefault(p, f"{path}:{i}")
            for m in _QUOTED_NAME.finditer(line):
                names.setdefault(m.group(1), f"{path}:{i}")
    return absolute, names
