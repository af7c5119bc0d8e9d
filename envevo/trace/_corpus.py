"""The corpus estimator: p_T from how often scenarios and skills occur in a reference corpus of tasks.

The corpus is what the user supplies: task dirs, folders of them (searched recursively), and RUN dirs of
`envevo evolve` (every committed version). Runs are read through a `RunSource` the caller passes in (the store
lives on a higher floor; `envevo.evolve.corpus_prior` passes the store-backed one). Each contributes its ξ:
procedural tasks carry their exact chain, other tasks carry `[metadata.envevo].trace`, run versions their stored
trace. Tasks without ξ are skipped and counted
(extracting ξ with a model is not done here: it costs a model call per task; extract once, store the trace).
The same task (same content hash) counted twice counts once.

Labels are free text, so counting them as strings would split "a SQLite inventory database" and "an sqlite db of
inventory". Every label is embedded (envevo/trace/_embed.py, all-MiniLM-L6-v2 by default, unit vectors) and
counted *softly*:

    k(a, b) = clip((cos(a, b) − lo) / (hi − lo), 0, 1)            lo = 0.55, hi = 0.85

so labels at cosine ≥ hi count as the same label, unrelated ones (cosine ≤ lo, e.g. "passwd file" vs "cron
table" at 0.03) not at all, and related-but-different ones ("nginx access log" vs "an Apache access log", 0.62)
a little.

Goal conditioning is soft: the corpus occurrences j (one per pair of ξ, from trace t(j) with goal g_j) are
weighted by how close their goal is to the query goal g,

    w_j(g) = (1 − λ) + λ · k(g, g_j)                              λ = 0.5

so an occurrence under a similar goal counts up to twice as much as one under an unrelated goal; λ = 0 ignores
the goal.

Scenario novelty, with soft count n_g(σ) = Σ_j w_j(g) k(σ, σ_j) and total mass N_g = Σ_j w_j(g):

    p(σ | g) = (n_g(σ) + α) / (N_g + α · V_σ)                     α = 0.1

V_σ = K_σ + U is the vocabulary: K_σ = Σ_j 1 / Σ_i k(σ_j, σ_i), the soft number of distinct scenarios in
the corpus (exactly the number of clusters when labels cluster cleanly), plus U = 1000 slots for labels the
corpus has never seen. With hard clusters this is additive smoothing and sums to 1 over the K seen clusters
and U unseen slots. An unseen label costs log((N_g + α V)/α), the most of any label; a label costs less the
more often it (or a near-duplicate) occurs.

Skill rarity is conditioned on the scenario: occurrences count by how well both their scenario and their skill
match, and the skill's marginal p(κ | g) (the same formula over skills) is the prior with strength β = 1:

    p(κ | σ, g) = (Σ_j w_j k(σ, σ_j) k(κ, κ_j) + β p(κ | g)) / (Σ_j w_j k(σ, σ_j) + β)

An unseen scenario falls back to p(κ | g). Both probabilities are < 1, so every −log p is finite and > 0.

The estimator's name records the model, the corpus size and a digest of the corpus and the parameters, e.g.
`corpus-v1:all-MiniLM-L6-v2:120t:3f2a9c1d`, so figures from different corpora are never mixed up.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from envevo.errors import UserError
from envevo.trace._corpus_source import RunSource
from envevo.trace._model import Trace

LO, HI = 0.55, 0.85
ALPHA = 0.1
OPEN_VOCAB = 1000
BETA = 1.0
GOAL_WEIGHT = 0.5


# ------------------------------------------------------------------------------------------------ the corpus

@dataclass
class Corpus:
    """The traces of a reference corpus, one per distinct task, and what was skipped on the way."""

    traces: list[Trace] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # the task dir or run version each trace came from
    seen_tasks: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why)

    def digest(self) -> str:
        """Independent of where the tasks were found and in what order."""
        items = sorted(t.model_dump_json() for t in self.traces)
        return hashlib.sha256("\n".join(items).encode()).hexdigest()

    def notes(self) -> list[str]:
        if not self.skipped:
            return []
        first = self.skipped[0]
        return [f"corpus: skipped {len(self.skipped)} of {self.seen_tasks} tasks without a usable ξ "
                f"(e.g. {first[0]}: {first[1]}); only procedural tasks, tasks with [metadata.envevo].trace "
                "and run versions count"]


def _find(root: Path, runs_source: RunSource | None) -> tuple[list[Path], list[Path]]:
    """Task dirs and run dirs at or below root (hidden dirs skipped, no descent into a task or run)."""
    from envevo.task import looks_like_task

    tasks: list[Path] = []
    runs: list[Path] = []
    for dirpath, dirnames, _ in os.walk(root):
        here = Path(dirpath)
        if runs_source is not None and runs_source.is_run(here):
            runs.append(here)
            dirnames.clear()
        elif looks_like_task(here):
            tasks.append(here)
            dirnames.clear()
        else:
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    return tasks, runs


def load_corpus(paths: list[Path], runs: RunSource | None = None) -> Corpus:
    """Every ξ under the given task dirs, folders and (read through `runs`) RUN dirs."""
    from envevo.task import load_task
    from envevo.trace._task_xi import trace_of_task

    if not paths:
        raise UserError("the corpus estimator needs a reference corpus: pass --corpus DIR (task dirs, a folder of "
                        "them, or run dirs of `envevo evolve --run`); repeat --corpus for more")
    corpus = Corpus()
    seen: set[str] = set()

    def add(trace: Trace, task_hash: str, source: str) -> None:
        if task_hash not in seen:
            seen.add(task_hash)
            corpus.traces.append(trace)
            corpus.sources.append(source)

    for root in paths:
        root = Path(root).expanduser()
        if not root.is_dir():
            raise UserError(f"corpus {root} is not a directory; pass task dirs, a folder of task dirs or a RUN dir")
        tasks, run_dirs = _find(root, runs)
        if not tasks and not run_dirs:
            raise UserError(f"corpus {root} holds no task dir (task.toml or task.yaml) and no run (store.sqlite)")
        for run in run_dirs:
            assert runs is not None  # _find reports runs only when it can read them
            for where, trace, task_hash in runs.versions(run):
                corpus.seen_tasks += 1
                if trace is None:
                    corpus.skipped.append((where, "stored without ξ"))
                else:
                    add(trace, task_hash, where)
        for path in tasks:
            corpus.seen_tasks += 1
            try:
                task = load_task(path)
                trace = trace_of_task(task)
            except UserError as e:
                corpus.skipped.append((str(path), str(e).split(";")[0]))
                continue
            add(trace, task.content_hash(), str(path))
    if not any(t.steps for t in corpus.traces):
        where = ", ".join(str(p) for p in paths)
        raise UserError(f"corpus {where} has no task with ξ: {corpus.seen_tasks} task(s) found, none carries a "
                        "trace in [metadata.envevo] (procedural tasks from `envevo seed procedural` and runs of "
                        "`envevo evolve` do)")
    return corpus


# ------------------------------------------------------------------------------------------------ the estimator

def ramp(cos: np.ndarray, lo: float = LO, hi: float = HI) -> np.ndarray:
    """The similarity kernel k: 0 at or below lo, 1 at or above hi, linear between."""
    return np.clip((cos - lo) / (hi - lo), 0.0, 1.0)


class _Labels:
    """Distinct labels of one kind with their unit vectors, and the index of each occurrence's label."""

    def __init__(self, labels: list[str], embed: Callable[[list[str]], np.ndarray]):
        distinct = sorted(set(labels))
        pos = {s: i for i, s in enumerate(distinct)}
        self.distinct = distinct
        self.vectors = embed(distinct)
        self.index = np.array([pos[s] for s in labels], dtype=np.int64)  # occurrence → distinct label

    def kernel(self, vec: np.ndarray, lo: float, hi: float) -> np.ndarray:
        """k(query, label) for every occurrence."""
        return ramp(self.vectors @ vec, lo, hi)[self.index]

    def effective_count(self, lo: float, hi: float, chunk: int = 2048) -> float:
        """K = Σ_j 1 / Σ_i k(σ_j, σ_i): the soft number of distinct labels among the occurrences."""
        counts = np.bincount(self.index, minlength=len(self.distinct)).astype(np.float64)
        mass = np.zeros(len(self.distinct))
        for s in range(0, len(self.distinct), chunk):  # bounded memory for large corpora
            mass[s:s + chunk] = ramp(self.vectors[s:s + chunk] @ self.vectors.T, lo, hi) @ counts
        return float((counts / mass).sum())


class CorpusPrior:
    """ReferenceDistribution from soft label counts over a corpus (natural log); see the module docstring."""

    def __init__(self, corpus: Corpus, *, model_dir: Path | str | None = None, alpha: float = ALPHA,
                 open_vocab: int = OPEN_VOCAB, beta: float = BETA, goal_weight: float = GOAL_WEIGHT,
                 lo: float = LO, hi: float = HI, cache_dir: Path | None = None):
        from envevo.trace._embed import EmbeddingCache

        if not 0 <= goal_weight <= 1 or not 0 <= lo < hi <= 1 or alpha <= 0 or open_vocab < 1 or beta < 0:
            raise UserError("corpus estimator: need 0 ≤ goal_weight ≤ 1, 0 ≤ lo < hi ≤ 1, alpha > 0, "
                            "open_vocab ≥ 1, beta ≥ 0")
        self.corpus = corpus
        self.alpha, self.open_vocab, self.beta, self.goal_weight, self.lo, self.hi = alpha, open_vocab, beta, goal_weight, lo, hi
        self.embeddings = EmbeddingCache(model_dir, cache_dir)
        steps = [(t, s) for t, tr in enumerate(corpus.traces) for s in tr.steps]
        self.n_pairs = len(steps)
        self._trace_of = np.array([t for t, _ in steps], dtype=np.int64)
        self._scen = _Labels([s.scenario for _, s in steps], self.embeddings.embed)
        self._skill = _Labels([s.skill for _, s in steps], self.embeddings.embed)
        self._goals = self.embeddings.embed([t.goal for t in corpus.traces])
        self.K_scenarios = self._scen.effective_count(lo, hi)
        self.K_skills = self._skill.effective_count(lo, hi)
        self._vec: dict[str, np.ndarray] = {}
        self._weights: dict[str, np.ndarray] = {}
        self._memo: dict[tuple[str, ...], float] = {}
        params = json.dumps([alpha, open_vocab, beta, goal_weight, lo, hi, self.embeddings.digest])
        self.digest = hashlib.sha256((corpus.digest() + params).encode()).hexdigest()[:8]
        self.name = f"corpus-v1:{self.embeddings.model_name}:{len(corpus.traces)}t:{self.digest}"

    @property
    def notes(self) -> list[str]:
        return self.corpus.notes()

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "tasks": len(self.corpus.traces), "pairs": self.n_pairs,
                "distinct_scenarios": len(self._scen.distinct), "distinct_skills": len(self._skill.distinct),
                "effective_scenarios": round(self.K_scenarios, 3), "effective_skills": round(self.K_skills, 3),
                "skipped": len(self.corpus.skipped), "embedding_model": self.embeddings.model_name,
                "embedding_digest": self.embeddings.digest,
                "params": {"alpha": self.alpha, "open_vocab": self.open_vocab, "beta": self.beta,
                           "goal_weight": self.goal_weight, "lo": self.lo, "hi": self.hi}}

    def _embed(self, label: str) -> np.ndarray:
        if label not in self._vec:
            self._vec[label] = self.embeddings.embed([label])[0]
        return self._vec[label]

    def _goal_weights(self, goal: str) -> np.ndarray:
        """w_j(g) for every occurrence."""
        if goal not in self._weights:
            near = ramp(self._goals @ self._embed(goal), self.lo, self.hi) if self.goal_weight else 0.0
            per_trace = (1 - self.goal_weight) + self.goal_weight * np.asarray(near)
            self._weights[goal] = np.broadcast_to(per_trace, (len(self.corpus.traces),))[self._trace_of]
        return self._weights[goal]

    def _marginal(self, labels: _Labels, K: float, label: str, goal: str) -> float:
        w = self._goal_weights(goal)
        n = float(w @ labels.kernel(self._embed(label), self.lo, self.hi))
        return (n + self.alpha) / (float(w.sum()) + self.alpha * (K + self.open_vocab))

    def p_scenario(self, scenario: str, goal: str) -> float:
        return self._marginal(self._scen, self.K_scenarios, scenario, goal)

    def p_skill(self, skill: str, scenario: str, goal: str) -> float:
        w = self._goal_weights(goal)
        in_scenario = w * self._scen.kernel(self._embed(scenario), self.lo, self.hi)
        both = float(in_scenario @ self._skill.kernel(self._embed(skill), self.lo, self.hi))
        prior = self._marginal(self._skill, self.K_skills, skill, goal)
        return (both + self.beta * prior) / (float(in_scenario.sum()) + self.beta)

    def neg_log_p_scenario(self, scenario: str, goal: str) -> float:
        key = ("s", scenario, goal)
        if key not in self._memo:
            self._memo[key] = max(0.0, -math.log(self.p_scenario(scenario, goal)))
        return self._memo[key]

    def neg_log_p_skill(self, skill: str, scenario: str, goal: str) -> float:
        key = ("k", skill, scenario, goal)
        if key not in self._memo:
            self._memo[key] = max(0.0, -math.log(self.p_skill(skill, scenario, goal)))
        return self._memo[key]
