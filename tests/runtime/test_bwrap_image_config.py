"""What a bwrap sandbox takes from its image (host-side, no sandbox started): the env, working dir and user come from
one engine call per image and process (each generation is a new image); an image whose config cannot be read runs
as no known user, so a command fails rather than running as root."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("harbor")

from envevo.runtime import _bwrap_env  # noqa: E402


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
