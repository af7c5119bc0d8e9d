"""The lineage store: an SQLite index (WAL) over immutable, content-addressed task versions, and the dataset
exports of its lineages (Harbor dataset folder, JSONL/Parquet index). Analyses over it live in envevo.analysis;
the trainers' export in envevo.schedule.

Layout of a run directory (:class:`RunPaths`)::

    RUN_DIR/store.sqlite          the index: run config, lineages, versions, tries, plans, candidates,
                                  verifications, rollouts, usage
    RUN_DIR/tasks/<hash>/         one full Harbor task dir per stored task version, never modified
"""

from envevo.store._export import FLAT_COLUMNS, export_flat, export_harbor, export_name, flat_path, flat_rows, version_fields
from envevo.store._lineages import slugify
from envevo.store._models import (
    Candidate,
    GenerationTry,
    Lineage,
    LineageStatus,
    NewRollout,
    Plan,
    Rollout,
    StoreError,
    TryStatus,
    Usage,
    UsageTotal,
    Verification,
    Version,
    VersionCommit,
)
from envevo.store._overwrite import EXPORT_MARKER, check_replaceable, run_store_under, write_marker
from envevo.store._paths import RunPaths
from envevo.store._schema import SCHEMA_VERSION
from envevo.store._store import LineageStore

__all__ = [
    "EXPORT_MARKER",
    "FLAT_COLUMNS",
    "SCHEMA_VERSION",
    "Candidate",
    "GenerationTry",
    "Lineage",
    "LineageStatus",
    "LineageStore",
    "NewRollout",
    "Plan",
    "Rollout",
    "RunPaths",
    "StoreError",
    "TryStatus",
    "Usage",
    "UsageTotal",
    "Verification",
    "Version",
    "VersionCommit",
    "check_replaceable",
    "export_flat",
    "export_harbor",
    "export_name",
    "flat_path",
    "flat_rows",
    "run_store_under",
    "slugify",
    "version_fields",
    "write_marker",
]
