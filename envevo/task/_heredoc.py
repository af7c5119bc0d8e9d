"""BuildKit heredocs rewritten into plain Dockerfile instructions, for builders that do not know them.

podman before 5 (buildah before 1.33/1.35) stops at ``RUN python3 - <<'PY'`` with ``Unknown instruction``. The rewrite
does what BuildKit does with a heredoc (moby/buildkit, dockerfile2llb), spelled in instructions every builder knows:

- ``RUN <<EOF`` alone: the body runs as the shell's script: ``RUN ["/bin/sh", "-c", "<body>"]``; a body that starts
  with ``#!`` is written to a temporary file and executed, as BuildKit does;
- ``RUN cmd <<'PY' …``: the command and its bodies go to the shell unchanged (exec form, JSON newlines), so the shell
  itself applies the heredoc's rules: a quoted delimiter expands nothing, ``<<-`` strips leading tabs;
- ``COPY``/``ADD <<EOF dest``: each body becomes a generated file next to the Dockerfile (in its build context),
  copied with the instruction's own flags; an unquoted delimiter whose body has ``$`` expands the build's
  variables through ``cat`` in a ``RUN`` (command substitution stays literal, as in BuildKit).

The current ``SHELL`` of each stage is kept. Only the temporary copy of a task is rewritten, never the user's files.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

GENERATED_DIR = "envevo-heredoc"
_INSTRUCTION = re.compile(r"^(?P<indent>\s*)(?P<cmd>RUN|COPY|ADD)(?P<rest>\s.*)?$", re.IGNORECASE)
_FROM = re.compile(r"^\s*FROM\s", re.IGNORECASE)
_SHELL = re.compile(r"^\s*SHELL\s+(?P<json>\[.*\])\s*$", re.IGNORECASE)
_FLAGS = re.compile(r"^\s*((?:--\S+\s+)*)(.*)$", re.DOTALL)
_DEFAULT_SHELL = ["/bin/sh", "-c"]
_WORD_END = set(" \t;|&<>()")


@dataclass
class Heredoc:
    name: str  # the delimiter
    quoted: bool  # <<'EOF' / <<"EOF": no expansion
    chomp: bool  # <<-EOF: leading tabs stripped
    lines: list[str] = field(default_factory=list)  # the raw body, one line each, without newlines

    @property
    def data(self) -> str:
        """The body as BuildKit hands it over (``<<-`` strips every line's leading tabs)."""
        return "".join((ln.lstrip("\t") if self.chomp else ln) + "\n" for ln in self.lines)


@dataclass
class HeredocRewrite:
    text: str
    count: int = 0  # heredocs rewritten
    files: dict[str, bytes] = field(default_factory=dict)  # generated files, relative to the Dockerfile's dir


def find_heredocs(command: str) -> list[tuple[int, int, Heredoc]]:
    """Every ``<<[-]WORD`` marker outside quotes in ``command``: (start, end, Heredoc). ``<<<`` is a herestring."""
    found: list[tuple[int, int, Heredoc]] = []
    quote = ""
    i = 0
    while i < len(command):
        c = command[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c == "\\":
            i += 2
            continue
        elif c in "'\"":
            quote = c
        elif command.startswith("<<", i) and (i == 0 or command[i - 1] in " \t0123456789") and command[i + 2:i + 3] != "<":
            j = i + 2
            chomp = command[j:j + 1] == "-"
            j += chomp
            word, quoted = "", False
            while j < len(command) and command[j] not in _WORD_END:
                if command[j] in "'\"":
                    end = command.find(command[j], j + 1)
                    if end < 0:
                        break
                    word += command[j + 1:end]
                    quoted = True
                    j = end + 1
                else:
                    word += command[j]
                    j += 1
            if word:
                found.append((i, j, Heredoc(name=word, quoted=quoted, chomp=chomp)))
                i = j
                continue
        i += 1
    return found


def _exec_form(args: list[str]) -> str:
    return json.dumps(args, ensure_ascii=False)


def _unique_delimiter(body: str) -> str:
    delim = "ENVEVO_HEREDOC"
    while delim in body:
        delim += "_"
    return delim


def _rewrite_run(flags: str, command: str, docs: list[Heredoc], shell: list[str]) -> str:
    if len(docs) == 1 and re.fullmatch(r"\s*\d*<<-?\S+\s*", command):
        data = docs[0].data
        if data.startswith("#!"):  # BuildKit writes the script to a file and executes it
            delim = _unique_delimiter(data)
            script = (f"f=$(mktemp) && cat > \"$f\" <<'{delim}'\n{data}{delim}\n"
                      "chmod +x \"$f\" && \"$f\"; s=$?; rm -f \"$f\"; exit $s")
            return f"RUN {flags}{_exec_form([*_DEFAULT_SHELL, script])}"
        return f"RUN {flags}{_exec_form([*shell, data])}"
    full = command.rstrip() + "".join("\n" + "".join(ln + "\n" for ln in d.lines) + d.name for d in docs)
    return f"RUN {flags}{_exec_form([*shell, full])}"


def _rewrite_copy(cmd: str, flags: str, command: str, docs: list[Heredoc], marks: list[tuple[int, int, Heredoc]],
                  files: dict[str, bytes], shell: list[str]) -> list[str]:
    # Sources other than the heredocs stay one instruction; each heredoc becomes a file of its own.
    rest = command
    for start, end, _ in reversed(marks):
        rest = rest[:start] + rest[end:]
    words = rest.split()
    if not words:
        raise ValueError(f"{cmd} with heredocs but no destination")
    dest = words[-1]
    out = [f"{cmd} {flags}{' '.join(words)}"] if len(words) > 1 else []
    for d in docs:
        data = d.data
        if not d.quoted and "$" in data:
            # BuildKit expands the build's variables here: the shell does, with command substitution kept literal.
            target = dest.rstrip("/") + "/" + d.name if dest.endswith("/") or len(docs) > 1 else dest
            body = data.replace("\\", "\\\\").replace("`", "\\`").replace("$(", "\\$(")
            delim = _unique_delimiter(body)
            script = f"mkdir -p \"$(dirname '{target}')\" && cat > '{target}' <<{delim}\n{body}{delim}"
            for flag in flags.split():
                if flag.startswith("--chmod="):
                    script += f"\nchmod {flag.split('=', 1)[1]} '{target}'"
                elif flag.startswith("--chown="):
                    script += f"\nchown {flag.split('=', 1)[1]} '{target}'"
            out.append(f"RUN {_exec_form([*shell, script])}")
            continue
        src = f"{GENERATED_DIR}/{len(files)}/{d.name}"
        files[src] = data.encode("utf-8")
        out.append(f"{cmd} {flags}{src} {dest}")
    return out


def rewrite_heredocs(text: str) -> HeredocRewrite:
    """``text`` (a Dockerfile) with every RUN/COPY/ADD heredoc rewritten; ``count`` is how many heredocs there were."""
    lines = text.replace("\r\n", "\n").split("\n")
    result = HeredocRewrite(text=text)
    out: list[str] = []
    shell = list(_DEFAULT_SHELL)
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FROM.match(line):
            shell = list(_DEFAULT_SHELL)
        elif (s := _SHELL.match(line)) is not None:
            try:
                shell = [str(a) for a in json.loads(s["json"])]
            except ValueError:
                pass
        m = _INSTRUCTION.match(line)
        if m is None or line.lstrip().startswith("#"):
            out.append(line)
            i += 1
            continue
        # The instruction's logical line: backslash continuations joined as the Dockerfile parser joins them.
        j, joined = i, line
        while joined.endswith("\\") and j + 1 < len(lines) and not find_heredocs(joined):
            j += 1
            joined = joined[:-1] + lines[j]
        rest = _INSTRUCTION.match(joined)
        assert rest is not None
        fm = _FLAGS.match(rest["rest"] or "")
        assert fm is not None
        flags, command = " ".join(fm[1].split()) + (" " if fm[1].strip() else ""), fm[2]
        marks = find_heredocs(command)
        if not marks or command.lstrip().startswith("["):
            out.extend(lines[i:j + 1])
            i = j + 1
            continue
        k = j + 1
        docs = [h for _, _, h in marks]
        for d in docs:
            while k < len(lines) and (lines[k].lstrip("\t") if d.chomp else lines[k]) != d.name:
                d.lines.append(lines[k])
                k += 1
            if k >= len(lines):
                raise ValueError(f"unterminated heredoc <<{d.name} in {m['cmd'].upper()} at line {i + 1}")
            k += 1
        cmd = m["cmd"].upper()
        if cmd == "RUN":
            out.append(m["indent"] + _rewrite_run(flags, command, docs, shell))
        else:
            out.extend(m["indent"] + s for s in _rewrite_copy(cmd, flags, command, docs, marks, result.files, shell))
        result.count += len(docs)
        i = k
    if result.count:
        result.text = "\n".join(out)
    return result


def without_heredoc_bodies(text: str) -> str:
    """``text`` (a Dockerfile) with every heredoc body and its terminator blanked, line numbers kept: what readers of
    instructions see, as the builder does (``from x import y`` in a ``RUN python - <<EOF`` body is no FROM). A heredoc
    left unterminated keeps the rest of the file blank, as BuildKit then reads it as body too."""
    lines = text.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        m = _INSTRUCTION.match(lines[i])
        if m is None or lines[i].lstrip().startswith("#"):
            i += 1
            continue
        j, joined = i, lines[i]
        while joined.endswith("\\") and j + 1 < len(lines) and not find_heredocs(joined):
            j += 1
            joined = joined[:-1] + lines[j]
        fm = _FLAGS.match(_INSTRUCTION.match(joined)["rest"] or "")  # type: ignore[index]
        command = fm[2] if fm else ""
        marks = [] if command.lstrip().startswith("[") else find_heredocs(command)
        k = j + 1
        for _, _, d in marks:
            while k < len(lines) and (lines[k].lstrip("\t") if d.chomp else lines[k]) != d.name:
                lines[k] = ""
                k += 1
            if k < len(lines):
                lines[k] = ""
                k += 1
        i = k
    return "\n".join(lines)
