"""p_T estimators behind one lazy, name-keyed registry.

Every figure records `Difficulty.estimator`, the estimator's name and version, so D_T computed under different
estimators is never mixed up, and `estimator_of(recorded)` rebuilds the very estimator a run recorded.

- catalog: the procedural catalog's priors (`envevo.catalog.CatalogPrior`, a floor up); no options.
- corpus: soft label frequencies over a reference corpus of tasks (envevo/trace/_corpus.py), built by
  `envevo.evolve.corpus_prior` (it reads RUN dirs through the store); options `corpus` (paths, required) and
  `embedding_model` (a local sentence-transformers BERT dir).
- llm: a reference model's probabilities behind an OpenAI-compatible endpoint (`envevo.llm.LLMPrior`); options
  `model`, `base_url`, `api_key_env`, `method` (auto | logprobs | judgement), `cache`.
- llm-label: the LLM engine's prior over its own free-text labels (`envevo.evolve.engines.llm.LabelPrior`); the
  p_T of every LLM-engine run; no options.

Every factory lives on a higher floor than trace (even the catalog prior), so entries are `"module:attr"` strings,
imported only when chosen (envevo/_registry.py). A factory takes its options as keyword arguments;
`estimator(name, **options)` drops options given as None and rejects options the chosen estimator does not take.
"""

from __future__ import annotations

import inspect
from typing import Any

from envevo._registry import Entry, Registry
from envevo.errors import UserError
from envevo.trace._difficulty import ReferenceDistribution

ESTIMATORS = Registry("p_T estimator", {
    "catalog": Entry("envevo.catalog:CatalogPrior", summary="the procedural catalog's priors"),
    "corpus": Entry("envevo.evolve:corpus_prior", summary="label frequencies over a reference corpus"),
    "llm": Entry("envevo.llm:LLMPrior.from_settings", summary="a reference model's probabilities"),
    "llm-label": Entry("envevo.evolve.engines.llm:LabelPrior", summary="the LLM engine's label prior"),
}, error=UserError)

# Recorded names (Difficulty.estimator) by prefix -> the registry entry that produces them.
_RECORDED = (("procedural-catalog-", "catalog"), ("corpus-", "corpus"), ("llm-label-", "llm-label"),
             ("llm-logprobs-", "llm"), ("llm-judgement-", "llm"))


def estimator(name: str = "catalog", *, flag_names: dict[str, str] | None = None,
              **options: object) -> ReferenceDistribution:
    """The reference distribution p_T registered as `name`, built with `options` (None values are dropped).

    `flag_names` maps option names to how the caller spells them (e.g. model → --reference-model) in errors.
    """
    factory = ESTIMATORS.load(name)
    given = {k: v for k, v in options.items() if v is not None and v != [] and v != ()}
    accepted = inspect.signature(factory).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        extra = sorted(set(given) - set(accepted))
        if extra:
            flags = " and ".join((flag_names or {}).get(k) or "--" + k.replace("_", "-") for k in extra)
            verb = "does" if len(extra) == 1 else "do"
            raise UserError(f"{flags} {verb} not apply to --estimator {name}")
    p: ReferenceDistribution = factory(**given)
    return p


def estimator_name(recorded: str) -> str:
    """The registry name of the estimator that recorded figures under `recorded` (e.g. llm-label-uniform-v1)."""
    for prefix, name in _RECORDED:
        if recorded.startswith(prefix):
            return name
    raise UserError(f"no registered p_T estimator records figures as {recorded!r}; "
                    f"choose one with --estimator ({', '.join(ESTIMATORS)})")


def estimator_of(recorded: str, **options: Any) -> ReferenceDistribution:
    """The estimator that recorded `recorded`, rebuilt; its name must come out the same, version included.

    The llm estimator's model and method are read from the recorded name (`llm-<method>-v1:<model>`); other
    options (`base_url`, a corpus) come from `options`.
    """
    name = estimator_name(recorded)
    if name == "llm":
        method, _, model = recorded.removeprefix("llm-").partition(":")
        options = {"model": model, "method": method.rsplit("-", 1)[0], **options}
    elif name == "corpus" and not options.get("corpus"):
        raise UserError(f"the run's D_T was recorded under {recorded}: pass the same reference corpus with "
                        "--estimator corpus --corpus DIR")
    p = estimator(name, **options)
    if p.name != recorded:
        raise UserError(f"the figures were recorded under p_T {recorded}, but {name} now gives {p.name}; "
                        "pass --estimator to recompute under another estimator")
    return p

