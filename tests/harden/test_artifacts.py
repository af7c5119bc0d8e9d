"""Artifacts from the sandbox's listing: hostile names dropped and said, noise dropped, narrowed to what the tests
name, grouped as a directory when many."""

from __future__ import annotations

from envevo.harden import Changed, choose_artifacts, is_noise, parse_listing


def _listing(*entries: tuple[str, int, str]) -> str:
    return "".join(f"{t}\t{s}\t{p}\0" for t, s, p in entries)


def test_hostile_names_are_dropped_and_said() -> None:
    raw = _listing(("f", 3, "/app/ok.txt"), ("f", 1, "/app/new\nline"), ("f", 1, "/app/../etc/passwd"),
                   ("f", 1, "/app//double"), ("f", 1, "relative"), ("f", 1, "/app/tab\there"))
    changed, dropped, truncated = parse_listing(raw)
    assert [c.path for c in changed] == ["/app/ok.txt"]
    assert len(dropped) == 5 and all("unusual name" in d for d in dropped)
    assert not truncated
    assert "\\n" in dropped[0]  # shown escaped, never printed raw


def test_a_cut_listing_is_said() -> None:
    changed, _, truncated = parse_listing(_listing(("f", 1, "/app/a")) + "f\t1\t/app/b")
    assert truncated and [c.path for c in changed] == ["/app/a"]


def test_noise() -> None:
    assert is_noise("/app/__pycache__/x.cpython-313.pyc") and is_noise("/root/.cache/pip/x")
    assert is_noise("/var/log/dpkg.log") and is_noise("/tmp/x")
    assert not is_noise("/etc/app.conf") and not is_noise("/app/out/report.json")


def test_narrowed_to_what_the_tests_name() -> None:
    changed = [Changed(path=p, type="f", size=10) for p in
               ("/app/out/report.json", "/etc/app.conf", "/root/result.txt", "/app/notes.txt", "/app/solve.log",
                "/root/.cache/scratch/tmp", "/app/__pycache__/m.pyc")]
    named = {"/app/out/report.json": "tests/test.sh:5", "/etc/app.conf": "tests/test.sh:7",
             "/root/result.txt": "tests/test.sh:8"}
    choice = choose_artifacts(changed, named, {})
    assert [a.path for a in choice.artifacts] == ["/app/out/report.json", "/etc/app.conf", "/root/result.txt"]
    assert choice.artifacts[0].why == "named in tests/test.sh:5"
    assert choice.dropped == ["/app/notes.txt: changed by the solution, but the tests never name it"]


def test_symlinks_fifos_and_giants_are_never_declared() -> None:
    changed = [Changed(path="/app/link", type="l", size=10), Changed(path="/app/pipe", type="p", size=0),
               Changed(path="/app/huge", type="f", size=1 << 40), Changed(path="/app/result", type="f", size=2)]
    named = {p: "tests/test.sh:1" for p in ("/app/link", "/app/pipe", "/app/huge", "/app/result")}
    choice = choose_artifacts(changed, named, {})
    assert [a.path for a in choice.artifacts] == ["/app/result"]
    assert any("symlink" in d for d in choice.dropped) and any("FIFO" in d for d in choice.dropped)
    assert any("MiB bound" in d for d in choice.dropped)


def test_many_files_under_a_named_dir_become_the_dir() -> None:
    changed = [Changed(path=f"/app/out/part-{i}.csv", type="f", size=5) for i in range(20)]
    choice = choose_artifacts(changed, {"/app/out": "tests/test_outputs.py:3"}, {})
    assert [a.path for a in choice.artifacts] == ["/app/out"]
    few = choose_artifacts(changed[:2], {"/app/out": "tests/test_outputs.py:3"}, {})
    assert [a.path for a in few.artifacts] == ["/app/out/part-0.csv", "/app/out/part-1.csv"]


def test_a_bare_file_name_counts_and_nothing_named_declares_all() -> None:
    changed = [Changed(path="/app/count.txt", type="f", size=2), Changed(path="/app/other", type="f", size=2)]
    by_name = choose_artifacts(changed, {}, {"count.txt": "tests/test_outputs.py:5"})
    assert [a.path for a in by_name.artifacts] == ["/app/count.txt"]
    unnamed = choose_artifacts(changed, {}, {})
    assert [a.path for a in unnamed.artifacts] == ["/app/count.txt", "/app/other"]
    assert "name none" in unnamed.artifacts[0].why
