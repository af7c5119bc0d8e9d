"""The fixture runner: a standalone stdlib script shipped into every procedural task, fed typed fixture ops."""

import ast
import gzip
import json
import shutil
import sqlite3
import stat
import subprocess
import sys
import tarfile

import pytest
from pydantic import TypeAdapter, ValidationError

from envevo.catalog import Op, fixture_script, random_chain
from envevo.catalog import _fixtures as F
from envevo.evolve.engines.procedural import compose


def _run(tmp_path, ops):
    script = tmp_path / "fixtures.py"
    script.write_text(fixture_script(ops))
    return subprocess.run([sys.executable, "-I", "-S", str(script)], capture_output=True, text=True, cwd=tmp_path)


def test_the_runner_is_a_stdlib_only_script():
    tree = ast.parse(F.RUNNER_FILE.read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert names and names <= set(sys.stdlib_module_names)
    # With its empty SPEC it runs and does nothing.
    out = subprocess.run([sys.executable, "-I", "-S", str(F.RUNNER_FILE)], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == out.stderr == ""


def test_the_shipped_script_is_the_runner_with_the_task_spec():
    ops = [F.write("/app/a.txt", "x\n"), F.mkdir("/app/d")]
    text = fixture_script(ops)
    runner = F.RUNNER_FILE.read_text()
    spec = "SPEC = [{'op': 'write', 'path': '/app/a.txt', 'text': 'x\\n', 'mode': 420}, {'op': 'mkdir', 'path': '/app/d', 'mode': 493}]\n"
    assert text == runner.replace(F.SPEC_LINE, spec)
    assert text.startswith("#!/usr/bin/env python3\n")
    chain = random_chain("backup-recovery", 3, 5)
    task = compose(chain)
    for step in chain.steps:  # one copy of the runner per step, named by its scenario
        assert task.read_text(f"environment/fixtures/{step.scenario}.py").startswith(runner.split(F.SPEC_LINE)[0] + "SPEC = [{'op': ")


def test_ops_are_typed_and_round_trip_through_their_discriminator():
    adapter = TypeAdapter(list[Op])
    ops = [F.write("/a", "t"), F.gzip_file("/b.gz", "t"), F.tar_gz("/c.tgz", [("m", "t")]), F.sqlite("/d.db", "SELECT 1;"),
           F.git_repo("/r", [F.GitCommit(files={"f": "t"}, message="m", author="A <a@x>", date="2024-01-01T00:00:00Z")]),
           F.cert("cn", "org", 1, "20230101000000Z", "20250101000000Z", "/c.pem"), F.chmod("/a", 0o600), F.mkdir("/e")]
    assert adapter.validate_python(adapter.dump_python(ops)) == ops
    with pytest.raises(ValidationError):
        adapter.validate_python([{"op": "format_disk", "path": "/"}])
    with pytest.raises(ValidationError):
        F.WriteOp(path="/a")  # no text


def test_the_runner_builds_files_archives_databases_and_modes(tmp_path):
    root = tmp_path / "app"
    ops = [F.write(f"{root}/data/a.txt", "alpha\n", 0o640), F.gzip_file(f"{root}/logs/b.gz", "beta\n"),
           F.tar_gz(f"{root}/backup.tar.gz", [("srv/x.dat", "one\n"), ("srv/y.dat", "two\n")]),
           F.sqlite(f"{root}/db/t.db", "CREATE TABLE t (k TEXT, v INTEGER);\nINSERT INTO t VALUES ('a', 1);\n"),
           F.mkdir(f"{root}/empty", 0o700), F.chmod(f"{root}/data/a.txt", 0o600)]
    out = _run(tmp_path, ops)
    assert out.returncode == 0, out.stderr
    assert (root / "data/a.txt").read_text() == "alpha\n"
    assert stat.S_IMODE((root / "data/a.txt").stat().st_mode) == 0o600
    assert gzip.decompress((root / "logs/b.gz").read_bytes()) == b"beta\n"
    with tarfile.open(root / "backup.tar.gz") as tar:
        assert {m.name: tar.extractfile(m).read() for m in tar.getmembers()} == {"srv/x.dat": b"one\n", "srv/y.dat": b"two\n"}
        assert {m.mtime for m in tar.getmembers()} == {1714521600}
    assert sqlite3.connect(root / "db/t.db").execute("SELECT k, v FROM t").fetchall() == [("a", 1)]
    assert stat.S_IMODE((root / "empty").stat().st_mode) == 0o700


def test_the_runner_is_deterministic(tmp_path):
    ops = [F.gzip_file(f"{tmp_path}/o/b.gz", "beta\n"), F.tar_gz(f"{tmp_path}/o/t.tgz", [("m", "x\n")])]
    assert _run(tmp_path, ops).returncode == 0
    first = [(tmp_path / "o" / n).read_bytes() for n in ("b.gz", "t.tgz")]
    shutil.rmtree(tmp_path / "o")
    assert _run(tmp_path, ops).returncode == 0
    assert [(tmp_path / "o" / n).read_bytes() for n in ("b.gz", "t.tgz")] == first


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_runner_writes_git_history_with_authors_dates_and_tags(tmp_path):
    repo = tmp_path / "repo"
    commits = [F.GitCommit(files={"s/a.toml": "v = 1\n"}, message="chore: import", author="Ana Souza <ana@example.com>",
                           date="2024-02-01T09:00:00+00:00", tag="v1.0"),
               F.GitCommit(files={"s/a.toml": "v = 2\n"}, message="fix(a): raise v", author="Ben Okafor <ben@example.com>",
                           date="2024-02-02T10:00:00+00:00")]
    out = _run(tmp_path, [F.git_repo(str(repo), commits)])
    assert out.returncode == 0, out.stderr
    log = subprocess.run(["git", "-C", str(repo), "log", "--format=%an|%ae|%aI|%s"], capture_output=True, text=True).stdout
    assert log.splitlines() == ["Ben Okafor|ben@example.com|2024-02-02T10:00:00+00:00|fix(a): raise v",
                                "Ana Souza|ana@example.com|2024-02-01T09:00:00+00:00|chore: import"]
    shown = subprocess.run(["git", "-C", str(repo), "show", "v1.0:s/a.toml"], capture_output=True, text=True).stdout
    assert shown == "v = 1\n"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_the_runner_issues_certificates_with_exact_dates_and_private_keys(tmp_path):
    ops = [F.cert("web.example.internal", "edge", 4242, "20230101000000Z", "20240315000000Z", f"{tmp_path}/c/web.crt",
                  f"{tmp_path}/k/web.key", header="# web\n")]
    out = _run(tmp_path, ops)
    assert out.returncode == 0, out.stderr
    pem = (tmp_path / "c/web.crt").read_text()
    assert pem.startswith("# web\n-----BEGIN CERTIFICATE-----")
    info = subprocess.run(["openssl", "x509", "-in", str(tmp_path / "c/web.crt"), "-noout", "-enddate", "-serial", "-subject"],
                          capture_output=True, text=True).stdout
    assert "notAfter=Mar 15 00:00:00 2024 GMT" in info and "serial=1092" in info and "web.example.internal" in info
    assert stat.S_IMODE((tmp_path / "k/web.key").stat().st_mode) == 0o600


def test_an_unknown_op_stops_the_build(tmp_path):
    script = tmp_path / "fixtures.py"
    script.write_text(F.RUNNER_FILE.read_text().replace(F.SPEC_LINE, "SPEC = [{'op': 'format_disk'}]\n"))
    out = subprocess.run([sys.executable, "-I", "-S", str(script)], capture_output=True, text=True)
    assert out.returncode != 0 and "unknown fixture op 'format_disk'" in out.stderr


def test_dict_style_reads_of_ops_still_work():
    op = F.write("/a", "t")
    assert op["path"] == op.get("path") == "/a" and F.cert("c", "o", 1, "a", "b", "/c").get("path") is None
    assert json.loads(op.model_dump_json())["op"] == "write"
