"""The SQLite schema and its migrations.

Each migration is a list of statements applied in one transaction; ``schema_version`` records what has
been applied. Add a migration by appending to ``MIGRATIONS``; never edit a released one.
"""

from __future__ import annotations

# Plans and candidates are both attempts inside a generation try, so they open with the same columns.
_ATTEMPT_COLUMNS = """
        id INTEGER PRIMARY KEY,
        try_id INTEGER NOT NULL REFERENCES generation_tries(id),
        lineage_id TEXT NOT NULL REFERENCES lineages(id),
        generation INTEGER NOT NULL,
        direction TEXT NOT NULL,
        attempt INTEGER NOT NULL,"""

_V1 = [
    """CREATE TABLE IF NOT EXISTS schema_version (
        version INTEGER PRIMARY KEY,
        applied_at TEXT NOT NULL
    )""",
    # The evolve settings of the run (engine, effort, generations, seed, …), so --resume can reuse them.
    """CREATE TABLE run (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        config TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
    """CREATE TABLE lineages (
        id TEXT PRIMARY KEY,
        seed_name TEXT NOT NULL UNIQUE,
        seed_hash TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'done', 'terminated', 'budget_exhausted')),
        reason TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
    # One try at producing generation g of a lineage. A process killed mid-generation leaves its try
    # 'open'; the next try of the same generation marks it 'abandoned'. Plans and candidates hang off a try,
    # so rows of an unfinished generation stay as history and are never taken for a committed version.
    """CREATE TABLE generation_tries (
        id INTEGER PRIMARY KEY,
        lineage_id TEXT NOT NULL REFERENCES lineages(id),
        generation INTEGER NOT NULL CHECK (generation >= 0),
        status TEXT NOT NULL CHECK (status IN ('open', 'committed', 'abandoned', 'failed')),
        pid INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT
    )""",
    "CREATE INDEX generation_tries_lg ON generation_tries (lineage_id, generation)",
    """CREATE TABLE plans (""" + _ATTEMPT_COLUMNS + """
        proposal TEXT,
        review TEXT,
        accepted INTEGER NOT NULL CHECK (accepted IN (0, 1)),
        feedback TEXT,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX plans_lg ON plans (lineage_id, generation)",
    """CREATE TABLE candidates (""" + _ATTEMPT_COLUMNS + """
        plan_id INTEGER REFERENCES plans(id),
        task_hash TEXT,
        accepted INTEGER NOT NULL CHECK (accepted IN (0, 1)),
        reasons TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX candidates_lg ON candidates (lineage_id, generation)",
    """CREATE TABLE verifications (
        id INTEGER PRIMARY KEY,
        candidate_id INTEGER NOT NULL REFERENCES candidates(id),
        verifier TEXT NOT NULL,
        passed INTEGER NOT NULL CHECK (passed IN (0, 1)),
        reasons TEXT NOT NULL DEFAULT '[]',
        runs TEXT NOT NULL DEFAULT '[]',
        wall_seconds REAL,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX verifications_candidate ON verifications (candidate_id)",
    # Committed generations. Generation 0 is the seed. L and D_T duplicate the JSON for plain-SQL queries.
    """CREATE TABLE versions (
        id INTEGER PRIMARY KEY,
        lineage_id TEXT NOT NULL REFERENCES lineages(id),
        generation INTEGER NOT NULL CHECK (generation >= 0),
        task_hash TEXT NOT NULL,
        parent_hash TEXT,
        direction TEXT,
        effort TEXT,
        trace TEXT,
        difficulty TEXT,
        L INTEGER,
        D_T REAL,
        mutated TEXT NOT NULL DEFAULT '[]',
        verified INTEGER NOT NULL CHECK (verified IN (0, 1)),
        candidate_id INTEGER REFERENCES candidates(id),
        try_id INTEGER REFERENCES generation_tries(id),
        created_at TEXT NOT NULL,
        UNIQUE (lineage_id, generation),
        CHECK ((generation = 0) = (parent_hash IS NULL))
    )""",
    "CREATE INDEX versions_hash ON versions (task_hash)",
    # Room for later: rollouts of agents on task versions, and LLM token/cost accounting.
    # model is '' when there is none, so (task, agent, model, k) is a real key and re-runs replace.
    """CREATE TABLE rollouts (
        id INTEGER PRIMARY KEY,
        task_hash TEXT NOT NULL,
        agent TEXT NOT NULL,
        model TEXT NOT NULL DEFAULT '',
        k INTEGER NOT NULL CHECK (k >= 0),
        reward REAL,
        turns INTEGER,
        input_tokens INTEGER,
        output_tokens INTEGER,
        cost_usd REAL,
        duration_s REAL,
        error_kind TEXT,
        simulated INTEGER NOT NULL CHECK (simulated IN (0, 1)),
        trial_dir TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (task_hash, agent, model, k)
    )""",
    """CREATE TABLE usage (
        id INTEGER PRIMARY KEY,
        lineage_id TEXT REFERENCES lineages(id),
        generation INTEGER,
        role TEXT NOT NULL,
        model TEXT,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX usage_lineage ON usage (lineage_id, generation)",
]

# Semantic drift of each committed version (envevo/trace/_drift.py): cosine similarities of its goal and
# instruction to the seed's and the parent's. Written in the commit transaction of the version; versions of runs
# made before this table existed get theirs from `envevo analyze drift` (reads never write it). `measure` names
# the method, encoder and weights; `detail` is the whole `Drift` as JSON.
_V2 = [
    """CREATE TABLE version_drift (
        version_id INTEGER PRIMARY KEY REFERENCES versions(id),
        goal_seed REAL NOT NULL CHECK (goal_seed BETWEEN -1 AND 1),
        goal_parent REAL CHECK (goal_parent BETWEEN -1 AND 1),
        instruction_seed REAL NOT NULL CHECK (instruction_seed BETWEEN -1 AND 1),
        instruction_parent REAL CHECK (instruction_parent BETWEEN -1 AND 1),
        measure TEXT NOT NULL,
        detail TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
]

# A verifier's whole report: `inconclusive` (no evidence either way: a runner that never ran, an exploit that never
# reached the tests, a machine limit) was stored as a plain failure before; `notes` (what is no finding against the
# task) and `metrics` (the mutation verifier's score) were dropped. Rows of older stores read as conclusive, with none.
_V3 = [
    "ALTER TABLE verifications ADD COLUMN inconclusive INTEGER NOT NULL DEFAULT 0 CHECK (inconclusive IN (0, 1))",
    "ALTER TABLE verifications ADD COLUMN notes TEXT NOT NULL DEFAULT '[]'",
    "ALTER TABLE verifications ADD COLUMN metrics TEXT NOT NULL DEFAULT '{}'",
]

# A verifier's findings, typed (`envevo.verify.Finding` as JSON: source, kind, exploit, evidence, trial dir): what
# `reasons` say in words. Rows of older stores read as none.
_V4 = [
    "ALTER TABLE verifications ADD COLUMN findings TEXT NOT NULL DEFAULT '[]'",
]

# Usage rows whose tokens were estimated, not reported by the server (an answer abandoned at its wall-clock cap is
# metered from what arrived). Rows of older stores read as reported.
_V5 = [
    "ALTER TABLE usage ADD COLUMN estimated INTEGER NOT NULL DEFAULT 0 CHECK (estimated IN (0, 1))",
]

#: (version, statements), in order. The store refuses a database whose version is newer than the last one.
MIGRATIONS: list[tuple[int, list[str]]] = [(1, _V1), (2, _V2), (3, _V3), (4, _V4), (5, _V5)]
SCHEMA_VERSION = MIGRATIONS[-1][0]
