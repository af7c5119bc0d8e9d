"""OpenEnv 0.10: an rl export served as OpenEnv environments (``envevo serve``, ``create_export_app``), each episode a
live trial verified with the task's own verifier mode; ``EnvevoEnvClient`` is OpenEnv's client for it."""

from envevo.trainers._lazy import lazy_names
from envevo.trainers._runner import LIVE_TRIAL, RunnerSpec

SERVER = RunnerSpec(
    "openenv", "OpenEnv 0.10 + `envevo serve` (a live trial per episode)", "openenv",
    LIVE_TRIAL,
    tested="OpenEnv's own async client (3 concurrent sessions) and sync client on an export of the same fixture: "
    "reference 1.0, `tr` shim 0.0, forged `reward.txt`/`reward.json` 0.0, nothing 0.0; a client killed mid-episode "
    "and one left idle: no sandbox 9 s after the kill (idle timeout 6 s); a changed task dir and a port in use "
    "refused in one line (`tests/trainers/test_adapters_openenv.py`: 6 trials, 90–200 s here depending on the host's "
    "load)")
RUNNERS = (SERVER,)

_SERVER_NAMES = ("EnvevoAction", "EnvevoEnvClient", "EnvevoObservation", "EnvevoState", "EnvevoTaskEnvironment", "check_port",
                 "create_export_app", "serve")
__getattr__ = lazy_names(__name__, dict.fromkeys(_SERVER_NAMES, "_server"))

__all__ = ["RUNNERS", "SERVER", *_SERVER_NAMES]
