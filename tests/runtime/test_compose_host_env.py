"""A compose task cannot read the host's secrets through `${VAR}` in its compose file (issue 36 item 8): the compose
tool interpolates from its own environment, so it runs with the tool's settings and the passed variables only."""

from __future__ import annotations

from envevo.runtime._compose_env import PodmanComposeEnvironment, _NoNetworkCompose, compose_host_env


def test_the_compose_tool_sees_no_host_secret_unless_passed() -> None:
    host = {"PATH": "/usr/bin", "HOME": "/root", "CONTAINERS_CONF": "/x/containers.conf", "LC_ALL": "C.UTF-8",
            "https_proxy": "http://proxy:3128", "OPENAI_API_KEY": "sk-host-secret", "AWS_SECRET_ACCESS_KEY": "s3cr3t",
            "JUDGE_KEY": "passed-on-purpose", "ENVEVO_PASS_ENV": "JUDGE_KEY"}
    seen = compose_host_env(host)
    assert "OPENAI_API_KEY" not in seen and "AWS_SECRET_ACCESS_KEY" not in seen
    assert seen["JUDGE_KEY"] == "passed-on-purpose"  # --pass-env JUDGE_KEY
    for tool in ("PATH", "HOME", "CONTAINERS_CONF", "LC_ALL", "https_proxy"):
        assert seen[tool] == host[tool]


def test_the_environment_class_hands_the_tool_only_that(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    monkeypatch.delenv("ENVEVO_PASS_ENV", raising=False)

    class Base:
        def _compose_env_vars(self, include_os_env: bool = True) -> dict[str, str]:
            import os

            return {**(dict(os.environ) if include_os_env else {}), "MAIN_IMAGE_NAME": "hb__task"}

    assert _NoNetworkCompose in PodmanComposeEnvironment.__mro__  # the override Harbor's compose command calls
    env = type("Probe", (_NoNetworkCompose, Base), {})()._compose_env_vars(include_os_env=True)
    assert "OPENAI_API_KEY" not in env and env["MAIN_IMAGE_NAME"] == "hb__task" and "PATH" in env
