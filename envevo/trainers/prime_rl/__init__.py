"""prime-rl / verifiers: an envevo scheduler behind prime-rl's ``TaskSampler`` protocol (``EnvevoTaskSampler``).

The rollouts run in verifiers' ``HarborTaskset``, which cannot build a Dockerfile: it needs the prebuilt images of
``envevo export --images`` (``envevo export --runner verifiers-harbor`` refuses an export without them, and verifiers
refuses a task without ``docker_image`` itself).
"""

from envevo.trainers._lazy import lazy_names
from envevo.trainers._runner import Capability as C
from envevo.trainers._runner import RunnerSpec, no, yes

VERIFIERS_HARBOR = RunnerSpec(
    "verifiers-harbor", "verifiers 0.4 `HarborTaskset` (prime-rl)", "prime_rl",
    {C.BUILDS_IMAGES: no("needs `export --images`"), C.PREBUILT_IMAGES: yes(),
     C.SEPARATE_VERIFIER: yes("the verifier's own image, no network"), C.ARTIFACTS: yes("declared artifacts"),
     C.NO_NETWORK: yes()},
    tested="loads an `--images` export, refuses a plain one; on podman, verifiers' own runtime and grading with a "
    "scripted agent on a hardened procedural export: reference 1.0, nothing 0.0, `python3` shim 0.0, about 30 s per "
    "episode (`tests/trainers/test_adapters_taskset.py`)",
    remedy="export with `--images`")
RUNNERS = (VERIFIERS_HARBOR,)

__getattr__ = lazy_names(__name__, {"EnvevoTaskSampler": "_sampler", "default_env_id": "_sampler"})

__all__ = ["RUNNERS", "VERIFIERS_HARBOR", "EnvevoTaskSampler", "default_env_id"]  # noqa: F822
