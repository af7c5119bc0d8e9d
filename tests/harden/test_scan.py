"""Host-side reading of a task's tests: what test.sh downloads while grading, which tests ask a running process,
and which paths the tests name."""

from __future__ import annotations

from pathlib import Path

from envevo.harden import grading_downloads, live_probes, named_paths, uvx_warmup
from envevo.task import load_task

ROOT = Path(__file__).resolve().parents[1] / "fixtures"
TB2_RUNNER = (ROOT / "realistic" / "missing-runner" / "tests" / "test.sh").read_text()


def test_the_canonical_tb2_runner_is_moved_to_build_time() -> None:
    found = {d.line: d for d in grading_downloads(TB2_RUNNER)}
    assert found[4].kind == "apt" and found[4].action == "moved"  # apt-get update
    assert found[5].kind == "apt" and found[5].action == "moved"  # apt-get install -y curl
    assert found[6].kind == "uv-installer" and found[6].action == "moved"
    assert found[7].kind == "path-setup" and found[7].action == "replayed"
    assert found[8].kind == "uvx" and found[8].action == "replayed"


def test_offline_wheels_and_venvs_are_left_alone() -> None:
    script = (ROOT / "realistic" / "tb2-canonical" / "tests" / "test.sh").read_text()
    kinds = {d.kind: d for d in grading_downloads(script)}
    assert kinds["offline"].action == "kept"  # --no-index --find-links /tests/wheels needs no network
    assert kinds["venv"].action == "replayed"
    assert "pip" not in kinds


def test_pip_forms_and_constructs() -> None:
    script = "\n".join([
        "pip install pytest==8.3.5",
        "python3 -m pip install -q requests",
        "if ! pip install x; then exit 1; fi",
        "uv pip install --system pytest",
        "curl -sSL https://example.com/data.csv -o /tmp/data.csv",
        "pip install -r /tests/requirements.txt",
        "# pip install commented",
        "echo pip install is not a command here",
    ])
    found = {d.line: d for d in grading_downloads(script)}
    assert found[1].action == "moved" and found[2].action == "moved"
    assert found[3].action == "replayed"  # part of an if: installed at build time, the line stays
    assert found[4].kind == "uv" and found[4].action == "moved"
    assert found[5].kind == "other" and found[5].action == "kept" and "URL" in found[5].note
    assert found[6].action == "kept" and "/tests" in found[6].note
    assert 7 not in found and 8 not in found


def test_continuation_lines_are_one_command() -> None:
    found = grading_downloads("pip install \\\n    pytest \\\n    pytest-json-ctrf\necho done\n")
    assert len(found) == 1 and found[0].line == 1 and "pytest-json-ctrf" in found[0].command


def test_uvx_warmup_resolves_the_same_tools_without_the_tests() -> None:
    line = "uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest --ctrf /logs/verifier/ctrf.json /tests/t.py -rA"
    assert uvx_warmup(line) == "uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest --version"
    assert uvx_warmup("uvx --with=pytest-cov pytest -q || true") == "uvx --with=pytest-cov pytest --version"
    assert uvx_warmup("echo hi") is None


def test_served_port_is_found_with_its_evidence() -> None:
    task = load_task(ROOT / "public" / "served-port")
    probes = live_probes(task)
    assert probes and probes[0].file == "tests/test.sh" and probes[0].what == "port 8000 on localhost"
    assert "urlopen" in probes[0].text and probes[0].line == 6


def test_process_and_socket_probes(tmp_path: Path) -> None:
    task = load_task(ROOT / "public" / "multi-output")
    assert live_probes(task) == []  # files only
    for text, what in [("pgrep -f worker || exit 1", "process list (pgrep)"),
                       ("nc -z 127.0.0.1 6379", "a connection to a local service"),
                       ("requests.get('http://127.0.0.1:5000/health')", "port 5000 on localhost"),
                       ("s = socket.create_connection(('localhost', 9000))", "port 9000 on localhost"),
                       ("ps aux | grep nginx", "process list (ps")]:
        task.write("tests/test_live.py", text + "\n")
        probes = live_probes(task)
        assert probes and what in probes[0].what, (text, probes)


def test_named_paths_come_with_where_they_are_named() -> None:
    absolute, names = named_paths(load_task(ROOT / "public" / "multi-output"))
    assert absolute["/app/out/report.json"].startswith("tests/test.sh:")
    assert {"/etc/app.conf", "/root/result.txt"} <= set(absolute)
    assert not any(p.startswith("/logs") for p in absolute)  # the verifier's own output is never an artifact
