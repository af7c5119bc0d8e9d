"""The lineage store: an SQLite index (WAL) over immutable, content-addressed task versions, plus analyses
(mutation rates) and exports (Harbor dataset folder, JSONL/Parquet index).

Layout of a run directory::

    RUN_DIR/store.sqlite          the index: run config, lineages, versions, tries, plans, candidates,
                                  verifications, rollouts, usage
    RUN_DIR/tasks/<hash>/         one full Harbor task dir per stored task version, never modified
"""

from envevo.store._export import FLAT_COLUMNS, export_flat, export_harbor, export_name, export_rl, flat_path, flat_rows, version_fields
from envevo.store._models import (
    Candidate,
    GenerationTry,
    Lineage,
    LineageStatus,
    Plan,
    Rollout,
    StoreError,
    TryStatus,
    Usage,
    UsageTotal,
    Verification,
    Version,
)
from envevo.store._paths import RunPaths
from envevo.store._schema import SCHEMA_VERSION
from envevo.store._stats import (
    RATE_COMPONENTS,
    TOTAL_COMPONENTS,
    DirectionRates,
    GenerationRates,
    MutationStats,
    Transition,
    mutation_rates,
    rates_of,
)
from envevo.store._store import LineageStore, slugify

__all__ = [
    "FLAT_COLUMNS",
    "RATE_COMPONENTS",
    "SCHEMA_VERSION",
    "TOTAL_COMPONENTS",
    "Candidate",
    "DirectionRates",
    "GenerationRates",
    "GenerationTry",
    "Lineage",
    "LineageStatus",
    "LineageStore",
    "MutationStats",
    "Plan",
    "Rollout",
    "RunPaths",
    "StoreError",
    "Transition",
    "TryStatus",
    "Usage",
    "UsageTotal",
    "Verification",
    "Version",
    "export_flat",
    "export_harbor",
    "export_rl",
    "version_fields",
    "export_name",
    "flat_path",
    "flat_rows",
    "mutation_rates",
    "rates_of",
    "slugify",
]
