"""Harden a third-party task: tests moved to a separate verifier, artifacts inferred from the reference solution's
run and proved, test-time downloads moved to build time, and the copy proved by the verifiers (oracle, nop, the red
team, mutation) before it is written. What cannot move (a test that asks a running process) is reported with the
evidence, never hidden."""

from envevo.harden._artifacts import Artifact, Changed, Choice, choose_artifacts, is_noise, parse_listing
from envevo.harden._harden import harden_task
from envevo.harden._keep import declared_artifacts, is_hardened, lost_hardening, unseen_outputs
from envevo.harden._out import MARKER, OutFolder, check_dest, check_out, out_name, write_marker
from envevo.harden._preview import HardenPreview, preview_harden
from envevo.harden._result import HardenResult, HardenStatus, ProofSide
from envevo.harden._rewrite import harden_config, is_separate, move_downloads, record_provenance
from envevo.harden._scan import Download, LiveProbe, grading_downloads, live_probes, named_paths, uvx_warmup

__all__ = [
    "MARKER",
    "Artifact",
    "Changed",
    "Choice",
    "Download",
    "HardenPreview",
    "HardenResult",
    "OutFolder",
    "HardenStatus",
    "LiveProbe",
    "ProofSide",
    "check_dest",
    "check_out",
    "choose_artifacts",
    "declared_artifacts",
    "harden_config",
    "harden_task",
    "is_noise",
    "is_hardened",
    "is_separate",
    "live_probes",
    "lost_hardening",
    "move_downloads",
    "named_paths",
    "out_name",
    "parse_listing",
    "preview_harden",
    "record_provenance",
    "grading_downloads",
    "unseen_outputs",
    "uvx_warmup",
    "write_marker",
]
