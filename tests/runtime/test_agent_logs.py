"""envevo's agents write their logs into the trial's agent dir, which Harbor's compose environments bind-mount into
the task's container: what the container planted at a log name is replaced, never followed or waited on."""

from __future__ import annotations

import asyncio
import json
import os
import threading

from harbor.environments.base import ExecResult

from envevo.runtime._scripted_agent import SCRIPT_LOG, SCRIPT_RESULT, ScriptedAgent


class _Env:
    async def exec(self, **_kw):
        return ExecResult(stdout="ran\n", stderr="", return_code=0)


class _Context:
    metadata = None


def test_a_symlink_or_fifo_at_a_log_name_is_replaced_not_followed(tmp_path):
    logs, outside = tmp_path / "agent", tmp_path / "host-file"
    logs.mkdir()
    outside.write_text("host\n")
    os.symlink(outside, logs / SCRIPT_LOG)  # a container's link to a host file
    os.mkfifo(logs / SCRIPT_RESULT)  # a write that would wait for a reader forever
    agent = ScriptedAgent(logs_dir=logs, script="true", label="t")
    done = threading.Event()

    def run():
        asyncio.run(agent.run("", _Env(), _Context()))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(20), "the agent blocked on a FIFO at its log name"
    assert outside.read_text() == "host\n"
    assert not os.path.islink(logs / SCRIPT_LOG) and (logs / SCRIPT_LOG).read_text() == "ran\n"
    assert json.loads((logs / SCRIPT_RESULT).read_text())["return_code"] == 0
