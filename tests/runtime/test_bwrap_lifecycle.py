"""A bwrap sandbox starts and stops off the event loop's thread (host-side, no sandbox started): starts in one
thread that lives as long as the process (the holder's pdeathsig and bwrap's --die-with-parent watch the thread
that started them; tests/runtime/test_bwrap_sandbox.py's kill -9 test shows they still die with envevo), and a stop
ends every process before it returns, the upper dir going right after."""

from __future__ import annotations

import asyncio
import subprocess
import threading

import pytest

pytest.importorskip("harbor")

from envevo.runtime import _bwrap_env, _bwrap_sandbox  # noqa: E402
from envevo.runtime._bwrap_sandbox import BwrapSandbox  # noqa: E402


def test_every_start_runs_in_one_long_lived_thread_not_the_loops(monkeypatch, tmp_path):
    monkeypatch.setattr(_bwrap_sandbox, "trials_root", lambda: tmp_path)
    seen: list[int] = []
    monkeypatch.setattr(BwrapSandbox, "open", lambda self, workdir=None: seen.append(threading.get_ident()))
    monkeypatch.setattr(BwrapSandbox, "start_init", lambda self: seen.append(threading.get_ident()))

    async def main() -> int:
        for _ in range(3):
            box = BwrapSandbox("/nonexistent")
            await box.open_async("/app")
            await box.start_init_async()
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    other = asyncio.run(main())  # a later event loop of the same process: the same thread
    assert loop_thread not in seen and other not in seen
    assert len(set(seen)) == 1, "sandboxes were started from more than one thread"


def test_a_stop_ends_every_process_before_it_returns_and_the_upper_dir_goes_after(monkeypatch, tmp_path):
    monkeypatch.setattr(_bwrap_sandbox, "trials_root", lambda: tmp_path)
    box = BwrapSandbox("/nonexistent")
    (box.dir / "upper" / "deep").mkdir(parents=True)
    (box.dir / "upper" / "deep" / "f").write_text("x")
    (box.dir / "upper" / "link").symlink_to(tmp_path.parent)  # removed, never followed
    holder = subprocess.Popen(["sleep", "300"], stderr=subprocess.PIPE)
    box._holder = holder

    asyncio.run(box.close_async())
    assert holder.poll() is not None, "the holder outlived the stop"
    _bwrap_sandbox._REMOVER.submit(lambda: None).result(timeout=30)  # the removals queued before it are done
    assert not box.dir.exists()
    assert tmp_path.parent.is_dir()


def test_an_images_env_workdir_and_user_come_from_one_engine_call(monkeypatch):
    calls: list[tuple[str, ...]] = []

    async def fake_run(*argv, timeout):
        calls.append(argv)
        return 0, '["PATH=/usr/bin","LANG=C.UTF-8"]\n/app\nnobody\n', ""

    monkeypatch.setattr(_bwrap_env, "_run", fake_run)
    monkeypatch.setattr(_bwrap_env, "_CONFIG", {})
    first = asyncio.run(_bwrap_env._image_config("img:1"))
    again = asyncio.run(_bwrap_env._image_config("img:1"))
    assert first == again == (["PATH=/usr/bin", "LANG=C.UTF-8"], "/app", "nobody")
    assert len(calls) == 1


def test_an_image_whose_config_cannot_be_read_runs_as_no_known_user(monkeypatch):
    async def failing(*argv, timeout):
        return 125, "", "no such image"

    monkeypatch.setattr(_bwrap_env, "_run", failing)
    monkeypatch.setattr(_bwrap_env, "_CONFIG", {})
    assert asyncio.run(_bwrap_env._image_config("gone:1")) == ([], "", "?")
