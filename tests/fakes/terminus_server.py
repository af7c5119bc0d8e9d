"""A scripted model for Harbor's terminus-2 agent, served by the local fake OpenAI-compatible server.

terminus-2 (harbor/agents/terminus_2) sends one chat completion per episode: the first user message is its
prompt template ("You are an AI assistant tasked with solving command-line tasks …") with the task instruction
and the terminal screen; later user messages are the new terminal output. It parses the assistant's text as
JSON {analysis, plan, commands: [{keystrokes, duration}], task_complete} and types each `keystrokes` into a
tmux pane in the task container. The first `task_complete: true` is not final: terminus-2 answers with
"Are you sure you want to mark the task as complete? …" and ends only when the next reply says it again.

`TerminusScript` serves its turns in order and answers that confirmation round itself. Every reply carries
token usage (computed from the request), so the agent's token counts are real numbers. The model runs on the
host, in the Harbor process (LiteLLM), so the server listens on 127.0.0.1; only keystrokes enter the container.

    python -m tests.fakes.terminus_server [--script solve|wrong]

serves the log-forensics script and prints its URL, for a manual `envevo rollout … --base-url URL`.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

from tests.fakes.openai_server import FakeOpenAI, Reply, error, last_user_text, text

PROMPT_MARK = "You are an AI assistant tasked with solving command-line tasks"
CONFIRM_MARK = "Are you sure you want to mark the task as complete?"


@dataclass
class Turn:
    """One terminus-2 reply: commands as (keystrokes, seconds to wait), and whether the task is done."""

    commands: list[tuple[str, float]] = field(default_factory=list)
    analysis: str = ""
    plan: str = ""
    task_complete: bool = False

    def content(self) -> str:
        return json.dumps({"analysis": self.analysis, "plan": self.plan,
                           "commands": [{"keystrokes": k, "duration": d} for k, d in self.commands],
                           "task_complete": self.task_complete}, indent=2)


def first_user_text(request: dict) -> str:
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    content = users[0].get("content") if users else ""
    return content if isinstance(content, str) else json.dumps(content)


class TerminusScript:
    """Serve scripted turns to terminus-2, in order; confirm `task_complete` when asked.

    A script that runs out answers `task_complete` with no commands (and counts it in `exhausted`), so a short
    script ends the episode cleanly instead of looping on errors.
    """

    def __init__(self, turns: list[Turn]):
        self.turns = list(turns)
        self.served = 0
        self.confirmations = 0
        self.exhausted = 0
        self.prompts: list[str] = []  # the first user message of every terminus-2 request
        self._lock = threading.Lock()

    def __call__(self, request: dict) -> Reply:
        prompt = first_user_text(request)
        if PROMPT_MARK not in prompt:
            return error(400, "fake terminus server: this is not a terminus-2 request")
        with self._lock:
            self.prompts.append(prompt)
            if CONFIRM_MARK in last_user_text(request):
                self.confirmations += 1
                turn = Turn(analysis="The work is done and checked.", plan="Confirm completion.", task_complete=True)
            elif self.served < len(self.turns):
                turn = self.turns[self.served]
                self.served += 1
            else:
                self.exhausted += 1
                turn = Turn(analysis="Nothing left to try.", plan="Stop.", task_complete=True)
        return text(turn.content()).render(request)


# examples/seeds/log-forensics, solved the way a model would: look, analyse with one Python run, check, finish.
_ANALYSIS = r"""mkdir -p /app/incident && python3 - <<'PY'
import glob, gzip, json, re
from collections import Counter
from datetime import datetime, timezone

def lines(pattern):
    for path in sorted(glob.glob(pattern)):
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            yield from f

LINE = re.compile(r'^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) (\S+) [^"]*" (\d{3}) (\d+) "[^"]*" "[^"]*" rid=(\w+)$')
hits = {}
for line in lines("/app/logs/nginx/access.log*"):
    m = LINE.match(line.rstrip("\n"))
    if m:
        ip, ts, method, path, status, size, rid = m.groups()
        when = datetime.strptime(ts, "%d/%b/%Y:%H:%M:%S %z").astimezone(timezone.utc)
        login = method == "POST" and path.split("?")[0] == "/api/login"
        hits[rid] = dict(ip=ip, ts=when, login=login, status=int(status), size=int(size), rid=rid)
app = [json.loads(l) for l in lines("/app/logs/app/app.log*") if l.strip()]
by_rid = {r["rid"]: r for r in app}

ip, failed = Counter(h["ip"] for h in hits.values() if h["login"] and h["status"] == 401).most_common(1)[0]
first = min((h for h in hits.values() if h["ip"] == ip and h["login"] and h["status"] == 200), key=lambda h: h["ts"])
user, session = by_rid[first["rid"]]["user"], by_rid[first["rid"]]["session"]
good = [hits[r["rid"]] for r in app if r.get("event") == "export" and r.get("session") == session]
good = [h for h in good if h["status"] == 200]
report = {"attacker_ip": ip, "failed_logins": failed, "compromised_user": user, "session_id": session,
          "first_success_utc": first["ts"].strftime("%Y-%m-%dT%H:%M:%SZ"),
          "exfil_requests": len(good), "exfil_bytes": sum(h["size"] for h in good),
          "exfil_ips": sorted({h["ip"] for h in good})}
with open("/app/incident/report.json", "w") as f:
    json.dump(report, f, indent=2)
print("report written")
PY
"""

SOLVE_LOG_FORENSICS = [
    Turn([("ls -la /app/logs/nginx /app/logs/app\n", 0.5)],
         analysis="Fresh shell. The task needs the rotated nginx logs and the JSON application log.",
         plan="List both log directories to see the rotated and compressed files."),
    Turn([(_ANALYSIS, 8.0)],
         analysis="nginx logs access.log* (older ones gzipped) and app.log* JSON lines, joined by rid.",
         plan="Parse every rotated file with Python: most failed logins by IP, the first successful login, the "
              "session's successful exports; write the report."),
    Turn([("cat /app/incident/report.json\n", 0.5)], task_complete=True,
         analysis="The script printed 'report written'.",
         plan="Show the report, then mark the task complete."),
]

# The same task, answered carelessly: a report with made-up values. The verifier must score it 0.
WRONG_LOG_FORENSICS = [
    Turn([("mkdir -p /app/incident && echo '{\"attacker_ip\": \"10.0.0.1\", \"failed_logins\": 1}' "
           "> /app/incident/report.json\n", 0.5)], task_complete=True,
         analysis="Guessing the attacker.", plan="Write a report without reading the logs."),
]

SCRIPTS = {"solve": SOLVE_LOG_FORENSICS, "wrong": WRONG_LOG_FORENSICS}


def serve(turns: list[Turn]) -> FakeOpenAI:
    """A fake server answering terminus-2 with `turns`: `with serve(turns) as server:` (script: server.handler)."""
    return FakeOpenAI(TerminusScript(turns))


if __name__ == "__main__":
    import argparse
    import time

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", choices=sorted(SCRIPTS), default="solve")
    args = parser.parse_args()
    with serve(SCRIPTS[args.script]) as server:
        print(f"serving terminus-2 script {args.script!r} at {server.url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
