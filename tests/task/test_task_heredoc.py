"""BuildKit heredocs rewritten into instructions podman 4.3 knows: the text, and what the shell makes of it."""

import json
import subprocess

import pytest

from envevo.errors import TaskError
from envevo.task import Task, TaskFile, find_heredocs, rewrite_heredocs, rewrite_task_heredocs


def _exec_args(line: str) -> list[str]:
    return json.loads(line[line.index(' ["') + 1:])


def _runs(text: str) -> list[list[str]]:
    return [_exec_args(ln) for ln in text.splitlines() if ln.startswith("RUN ") and " [\"" in ln]


def _sh(args: list[str], env: dict[str, str] | None = None) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True, env=env).stdout


def test_a_command_with_a_quoted_heredoc_goes_to_the_shell_unchanged():
    df = "FROM python:3.12-slim\nENV X=1\nRUN python3 - <<'PY'\nimport os\nprint('x=$X', os.environ['X'])\nPY\nRUN echo done\n"
    out = rewrite_heredocs(df)
    assert out.count == 1 and "<<'PY'" in out.text and "RUN echo done" in out.text and "\nPY\n" not in out.text
    (run,) = _runs(out.text)
    assert run[:2] == ["/bin/sh", "-c"]
    # The shell applies the heredoc's rules: quoted, so `$X` stays literal.
    assert _sh(run, {"X": "1", "PATH": "/usr/bin:/bin"}) == "x=$X 1\n"


def test_an_unquoted_heredoc_expands_and_dash_strips_tabs():
    df = "FROM debian\nRUN cat <<-EOF > /dev/stdout\n\thello $WHO\n\t\tindented\n\tEOF\n"
    (run,) = _runs(rewrite_heredocs(df).text)
    assert _sh(run, {"WHO": "world", "PATH": "/usr/bin:/bin"}) == "hello world\nindented\n"


def test_a_bare_run_heredoc_is_the_shell_script_and_the_stage_shell_is_kept():
    df = ('FROM debian\nSHELL ["/bin/bash", "-o", "pipefail", "-c"]\nRUN <<EOF\nset -e\necho "${BASH_VERSION%%.*}"\n'
          "echo second\nEOF\nFROM debian AS two\nRUN <<EOF\necho plain\nEOF\n")
    out = rewrite_heredocs(df)
    first, second = _runs(out.text)
    assert first[:4] == ["/bin/bash", "-o", "pipefail", "-c"] and first[4].startswith("set -e\n")
    assert second == ["/bin/sh", "-c", "echo plain\n"]  # FROM starts a new stage with the default shell
    assert _sh(first).splitlines()[1] == "second"


def test_a_shebang_heredoc_runs_as_a_file():
    df = "FROM python:3.12-slim\nRUN <<EOF\n#!/usr/bin/env python3\nprint(6 * 7)\nEOF\n"
    (run,) = _runs(rewrite_heredocs(df).text)
    assert _sh(run) == "42\n"


def test_run_flags_and_continuations_are_kept():
    df = "FROM debian\nRUN --mount=type=cache,target=/root/.cache \\\n    echo a && cat <<'EOF'\nbody\nEOF\n"
    out = rewrite_heredocs(df)
    line = next(ln for ln in out.text.splitlines() if ln.startswith("RUN"))
    assert line.startswith("RUN --mount=type=cache,target=/root/.cache [")
    args = json.loads(line.split(" ", 2)[2])
    assert _sh(args) == "a\nbody\n"


def test_copy_heredocs_become_generated_files_with_the_flags_kept():
    df = ("FROM debian\nCOPY --chmod=755 <<'EOF' /usr/local/bin/hi\n#!/bin/sh\necho $1\nEOF\n"
          "COPY <<-A <<B /etc/conf/\n\tfirst\n\tA\nsecond\nB\n")
    out = rewrite_heredocs(df)
    assert out.count == 3
    copies = [ln for ln in out.text.splitlines() if ln.startswith("COPY")]
    assert copies == ["COPY --chmod=755 envevo-heredoc/0/EOF /usr/local/bin/hi",
                      "COPY envevo-heredoc/1/A /etc/conf/", "COPY envevo-heredoc/2/B /etc/conf/"]
    assert out.files == {"envevo-heredoc/0/EOF": b"#!/bin/sh\necho $1\n", "envevo-heredoc/1/A": b"first\n",
                         "envevo-heredoc/2/B": b"second\n"}


def test_an_unquoted_copy_body_with_variables_expands_them_at_build_time(tmp_path):
    df = "FROM debian\nCOPY --chmod=600 <<EOF " + str(tmp_path / "out" / "info") + "\nunit: ${UNIT}, cost: $(date)\nEOF\n"
    (run,) = _runs(rewrite_heredocs(df).text)
    _sh(run, {"UNIT": "crates", "PATH": "/usr/bin:/bin"})
    target = tmp_path / "out" / "info"
    assert target.read_text() == "unit: crates, cost: $(date)\n"  # command substitution stays literal, as in BuildKit
    assert target.stat().st_mode & 0o777 == 0o600


def test_what_is_not_a_heredoc_is_left_alone():
    df = ("FROM debian\n# RUN <<EOF in a comment\nRUN cat <<< \"herestring\"\nRUN echo 'a <<b' \"c <<d\"\n"
          'RUN ["sh", "-c", "cat <<EOF"]\nRUN echo $((1 << 2))\n')
    out = rewrite_heredocs(df)
    assert out.count == 0 and out.text == df
    assert find_heredocs("python3 - <<'PY' && cat <<-\"E2\"")[1][2].name == "E2"


def test_an_unterminated_heredoc_is_the_tasks_error():
    task = Task(files={"environment/Dockerfile": TaskFile(data=b"FROM debian\nRUN <<EOF\necho hi\n")})
    with pytest.raises(TaskError, match="environment/Dockerfile: unterminated heredoc <<EOF"):
        rewrite_task_heredocs(task)


def test_a_task_copy_gets_the_generated_files_beside_its_dockerfile():
    df = b"FROM debian\nCOPY <<EOF /app/x\nx\nEOF\nRUN <<EOF\ntrue\nEOF\n"
    task = Task(files={"environment/Dockerfile": TaskFile(data=df), "tests/test.sh": TaskFile(data=b"cat <<EOF\nEOF\n")})
    new, count = rewrite_task_heredocs(task)
    assert count == 2 and task.files["environment/Dockerfile"].data == df  # the original is untouched
    assert new.files["environment/envevo-heredoc/0/EOF"].data == b"x\n"
    assert new.files["tests/test.sh"] == task.files["tests/test.sh"]  # only Dockerfiles
    assert rewrite_task_heredocs(new)[1] == 0
