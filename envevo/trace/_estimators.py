"""p_T estimators behind one name-keyed interface, and ξ for a task (where it can be read without a model).

Every figure records `Difficulty.estimator`, so D_T computed under different estimators is never mixed up.

- catalog: the procedural engine's priors (envevo/evolve/engines/procedural/_prior.py); no options.
- corpus: soft label frequencies over a reference corpus of tasks (envevo/trace/_corpus.py);
  options `corpus` (paths, required) and `embedding_model` (a local sentence-transformers BERT dir).
- llm: a reference model's probabilities behind an OpenAI-compatible endpoint (envevo/trace/_llm_prior.py);
  options `model`, `base_url`, `api_key_env`, `method` (auto | logprobs | judgement), `cache`.

A factory takes its options as keyword arguments; `estimator(name, **options)` drops options given as None and
rejects options the chosen estimator does not take.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

from envevo.errors import UserError
from envevo.trace._difficulty import ReferenceDistribution
from envevo.trace._model import Trace


def _catalog() -> ReferenceDistribution:
    # Imported lazily: the procedural engine imports envevo.trace itself.
    from envevo.evolve.engines.procedural import CatalogPrior

    return CatalogPrior()


def _corpus(corpus: list[Path] | None = None, embedding_model: Path | None = None) -> ReferenceDistribution:
    from envevo.trace._corpus import CorpusPrior, load_corpus
    from envevo.trace._embed import default_model_dir, model_digest

    model_dir = embedding_model or default_model_dir()
    model_digest(model_dir)  # a missing or broken model fails before the corpus is read
    return CorpusPrior(load_corpus(list(corpus or [])), model_dir=model_dir)


def _llm(model: str | None = None, base_url: str | None = None, api_key_env: str | None = None,
         method: str = "auto", cache: Path | None = None) -> ReferenceDistribution:
    from envevo.trace._llm_prior import LLMPrior

    return LLMPrior.from_settings(model=model, base_url=base_url, api_key_env=api_key_env, method=method, cache=cache)


ESTIMATORS: dict[str, Callable[..., ReferenceDistribution]] = {"catalog": _catalog, "corpus": _corpus, "llm": _llm}


def estimator(name: str = "catalog", *, flag_names: dict[str, str] | None = None, **options) -> ReferenceDistribution:
    """The reference distribution p_T registered as `name`, built with `options` (None values are dropped).

    `flag_names` maps option names to how the caller spells them (e.g. model → --reference-model) in errors.
    """
    try:
        factory = ESTIMATORS[name]
    except KeyError:
        raise UserError(f"unknown p_T estimator {name!r}; choose one of: {', '.join(sorted(ESTIMATORS))}") from None
    given = {k: v for k, v in options.items() if v is not None and v != [] and v != ()}
    accepted = inspect.signature(factory).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        extra = sorted(set(given) - set(accepted))
        if extra:
            flags = " and ".join((flag_names or {}).get(k) or "--" + k.replace("_", "-") for k in extra)
            verb = "does" if len(extra) == 1 else "do"
            raise UserError(f"{flags} {verb} not apply to --estimator {name}")
    return factory(**given)


def has_trace(task) -> bool:
    """Whether the task carries ξ in `[metadata.envevo]` (so no model is needed to read it)."""
    meta = task.envevo_metadata or {}
    return (meta.get("engine") == "procedural" and isinstance(meta.get("chain"), dict)) or isinstance(meta.get("trace"), dict)


def trace_of_task(task) -> Trace:
    """ξ of a task from its `[metadata.envevo]` (procedural tasks carry the exact chain)."""
    meta = task.envevo_metadata or {}
    if meta.get("engine") == "procedural" and isinstance(meta.get("chain"), dict):
        from envevo.evolve.engines.procedural import chain_from_task

        return chain_from_task(task).trace()
    if isinstance(meta.get("trace"), dict):
        return Trace.model_validate(meta["trace"])
    raise UserError(f"task {task.name} carries no ξ in [metadata.envevo]; extract it with a model: "
                    "--extract-model provider:name [--base-url URL] (the LLM engine's Proposer)")
