"""Harden a third-party task: tests moved to a separate verifier, artifacts inferred from the reference solution's
run and proved, test-time downloads moved to build time, and the copy proved by the verifiers (oracle, nop, the red
team, mutation) before it is written. What cannot move (a test that asks a running process) is reported with the
evidence, never hidden."""

from envevo.harden._artifacts import Artifact, Changed, Choice, choose_artifacts, is_noise, parse_listing
from envevo.harden._harden import harden_task
from envevo.harden._out import MARKER, check_dest, check_out, write_marker
from envevo.harden._result import HardenResult, HardenStatus, ProofSide
from envevo.harden._rewrite import harden_config, is_separate, move_downloads, record_provenance
from envevo.harden._scan import Download, LiveProbe, grading_downloads, live_probes, named_paths, uvx_warmup

__all__ = [
    "MARKER",
    "Artifact",
    "Changed",
    "Choice",
    "Download",
    "HardenResult",
    "HardenStatus",
    "LiveProbe",
    "ProofSide",
    "check_dest",
    "check_out",
    "choose_artifacts",
    "harden_config",
    "harden_task",
    "is_noise",
    "is_separate",
    "live_probes",
    "move_downloads",
    "named_paths",
    "parse_listing",
    "record_provenance",
    "grading_downloads",
    "uvx_warmup",
    "write_marker",
]
