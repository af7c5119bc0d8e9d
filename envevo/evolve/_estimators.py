"""The estimators that need a run's store: the corpus estimator (a corpus may hold RUN dirs), and the estimator a
run recorded its D_T under, so a recomputation uses the same one (trace's registry names them; this floor reads
the store)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from envevo.errors import UserError
from envevo.store import LineageStore, RunPaths
from envevo.trace import ReferenceDistribution, Trace, estimator_of


class StoreRuns:
    """The corpus estimator's view of RUN dirs (envevo.trace's RunSource): every committed version's ξ."""

    def is_run(self, path: Path) -> bool:
        return RunPaths.is_run(path)

    def versions(self, run: Path) -> Iterable[tuple[str, Trace | None, str]]:
        with LineageStore.open(run, create=False) as store:
            return [(f"{run}:{v.lineage_id}@{v.generation}", v.trace, v.task_hash) for v in store.versions()]


def corpus_prior(corpus: list[Path] | None = None, embedding_model: Path | None = None) -> ReferenceDistribution:
    """The corpus estimator over task dirs, folders of them and RUN dirs (registered in envevo.trace as "corpus")."""
    from envevo.trace import CorpusPrior, default_model_dir, load_corpus, model_digest

    model_dir = embedding_model or default_model_dir()
    model_digest(model_dir)  # a missing or broken model fails before the corpus is read
    prior: ReferenceDistribution = CorpusPrior(load_corpus(list(corpus or []), runs=StoreRuns()), model_dir=model_dir)
    return prior


def recorded_estimator_names(store: LineageStore) -> list[str]:
    """The p_T estimators a run's committed versions recorded their D_T under, in first-use order."""
    names: list[str] = []
    for v in store.versions():
        if v.difficulty is not None and v.difficulty.estimator not in names:
            names.append(v.difficulty.estimator)
    return names


def recorded_run_estimators(run: Path) -> list[str]:
    """The names of the estimators `run` recorded D_T under (empty when it recorded none)."""
    with LineageStore.open(run, create=False) as store:
        return recorded_estimator_names(store)


def run_estimator(run: Path, **options: object) -> ReferenceDistribution:
    """The estimator `run` recorded its D_T under, rebuilt (see `envevo.trace.estimator_of`)."""
    names = recorded_run_estimators(run)
    if not names:
        raise UserError(f"{run} records no D_T; pass --estimator NAME")
    if len(names) > 1:
        raise UserError(f"{run} recorded D_T under several p_T estimators ({', '.join(names)}); pass --estimator NAME")
    return estimator_of(names[0], **options)
