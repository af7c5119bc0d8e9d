"""`envevo serve EXPORT`: an rl export as OpenEnv environments, each episode a live trial verified by the task."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from envevo.cli._common import err, user_errors
from envevo.errors import UserError
from envevo.runtime import DEFAULT_ENGINE


@user_errors
def serve(
    export: Annotated[Path, typer.Argument(help="An `envevo export RUN --format rl --out DIR` folder.")],
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
    env: Annotated[str, typer.Option("--env", help="Sandbox engine of the trials: podman or docker.")] = DEFAULT_ENGINE,
    max_sessions: Annotated[int, typer.Option("--max-sessions", min=1, help="Episodes served at once.")] = 8,
    idle_timeout: Annotated[float, typer.Option("--idle-timeout", min=1, help="Seconds without a call after which "
                                                "an episode's sandbox is removed.")] = 300,
    timeout_sec: Annotated[int, typer.Option("--timeout", min=1, help="Seconds per command.")] = 180,
) -> None:
    """Serve an rl export to OpenEnv clients (OpenEnv 0.10, WebSocket sessions): reset starts a live trial of a task,
    a step runs a bash command in its sandbox, submit returns the reward of the task's own verifier mode.

    Needs the openenv extra (`pip install 'envevo[openenv]'`); the trials run in ENVEVO_RUNTIME_PYTHON when this
    interpreter has no Harbor. A client that disconnects or stays idle frees its sandbox."""
    from envevo.trainers import check_port

    check_port(host, port)  # before OpenEnv (gradio, fastmcp) takes its seconds to import
    try:
        from envevo.trainers.openenv import serve as run_server
    except ImportError as exc:
        raise UserError(f"`envevo serve` needs OpenEnv ({exc.name} is missing): pip install 'envevo[openenv]'") from None
    run_server(export, host=host, port=port, env=env, max_sessions=max_sessions, idle_timeout=idle_timeout,
               timeout_sec=timeout_sec, announce=lambda url: err.print(
                   f"serving {export} on {url} (OpenEnv; Ctrl-C stops and removes every sandbox)", soft_wrap=True))
