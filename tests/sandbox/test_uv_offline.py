"""Issue 36: the TB2 uv convention offline: astral.sh's installer becomes PyPI's uv in the runnable copy, stated."""

from __future__ import annotations

import pytest

from envevo.sandbox import _uv_offline
from envevo.sandbox._uv_offline import INSTALLER, offline_uv, own_python, uv_fetches
from envevo.task import load_task
from tests.conftest import FIXTURES

REALISTIC = FIXTURES / "realistic"


@pytest.fixture(autouse=True)
def fake_wheel(monkeypatch):
    monkeypatch.setattr(_uv_offline, "uv_binaries",
                        lambda v: (f"uv-{v}-py3-none-musllinux_1_1_x86_64.whl", {"uv.gz": b"U", "uvx.gz": b"X"}))


@pytest.mark.parametrize(("line", "replaced"), [
    ("curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh", "sh /opt/envevo-uv/0.9.7/install.sh"),
    ("curl -LsSf https://astral.sh/uv/0.9.7/install.sh | bash -s -- --quiet", "sh /opt/envevo-uv/0.9.7/install.sh"),
    ("wget -qO- https://astral.sh/uv/0.9.7/install.sh | env UV_INSTALL_DIR=/usr/local/bin sh",
     "env UV_INSTALL_DIR=/usr/local/bin sh /opt/envevo-uv/0.9.7/install.sh"),
])
def test_installer_spellings(line, replaced):
    m = INSTALLER.search(f"RUN apt-get update && {line} && uv --version")
    assert m and m["ver"] == "0.9.7"
    assert INSTALLER.sub(lambda m: f"{m['env']}sh /opt/envevo-uv/{m['ver']}/install.sh", line) == replaced


def test_build_and_test_time_fetches_are_served_from_pypis_uv_and_stated():
    task = load_task(REALISTIC / "uv-installer")
    assert uv_fetches(task) == {"environment/Dockerfile": ["0.9.7"], "tests/test.sh": ["0.9.7"]}
    copy, stated = offline_uv(task, reachable=False)
    (line,) = stated
    assert line.startswith("uv 0.9.7 from PyPI's uv-0.9.7-py3-none-musllinux_1_1_x86_64.whl (sha256 checked), "
                           "installed where https://astral.sh/uv/0.9.7/install.sh puts it ($HOME/.local/bin")
    assert "environment/Dockerfile, tests/test.sh" in line
    dockerfile = copy.files["environment/Dockerfile"].data.decode()
    assert "astral.sh" not in dockerfile and "astral.sh" not in copy.files["tests/test.sh"].data.decode()
    lines = dockerfile.splitlines()
    run = next(i for i, ln in enumerate(lines) if ln.startswith("RUN apt-get"))
    assert lines[run - 1] == "COPY envevo-uv/0.9.7/ /opt/envevo-uv/0.9.7/"  # before the step that installs it
    assert lines[-1] == "COPY envevo-uv/0.9.7/ /opt/envevo-uv/0.9.7/"  # and for the test script's install
    assert "sh /opt/envevo-uv/0.9.7/install.sh" in lines[run + 1]
    install = copy.files["environment/envevo-uv/0.9.7/install.sh"].data.decode()
    assert '${UV_INSTALL_DIR:-${XDG_BIN_HOME:-$HOME/.local/bin}}' in install and '"$dir/env"' in install
    assert task.files["tests/test.sh"].data.decode().count("astral.sh") == 1  # the user's task is untouched


def test_a_host_that_reaches_astral_keeps_the_task_as_written():
    task = load_task(REALISTIC / "uv-installer")
    assert offline_uv(task, reachable=True) == (task, [])
    plain = load_task(REALISTIC / "python-slim")
    assert offline_uv(plain, reachable=False) == (plain, [])


def test_uv_python_install_of_the_standins_own_python_is_served_by_it_and_stated():
    task = load_task(REALISTIC / "uv-installer")
    dockerfile = task.files["environment/Dockerfile"]
    text = dockerfile.data.decode() + "RUN uv python install 3.13 && uv python install 3.11 && uv venv --python 3.13\n"
    task.files["environment/Dockerfile"] = dockerfile.model_copy(update={"data": text.encode()})
    said = ["python:3.13-slim-bookworm → Debian trixie, Python 3.13.5 (tag names bookworm, …)"]
    copy, stated = own_python(task, said, reachable=False)
    out = copy.files["environment/Dockerfile"].data.decode()
    assert ": uv python install 3.13 served by the stand-in's own Python 3.13 && uv python install 3.11" in out
    assert stated and stated[0].startswith("uv python install 3.13 in environment/Dockerfile: the stand-in's own Python")
    assert own_python(task, said, reachable=True) == (task, [])
