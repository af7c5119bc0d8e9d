"""A cheap check of every endpoint before any work starts: the key is set, the server answers, it serves the model.

One `GET /models` per distinct endpoint (free on every provider). A failure is one line naming the fix,
raised before a seed is verified or a lineage is created. An overloaded endpoint (429, 5xx) is waited for under
the same retry policy as every model request (envevo/llm/_retry.py); an unreachable one fails at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from envevo.llm._config import ModelSpec
from envevo.llm._errors import EndpointUnavailable
from envevo.llm._providers import sdk_client
from envevo.llm._retry import RetryPolicy, parse_retry_after, retryable_status

PREFLIGHT_TIMEOUT_SEC = 15.0


async def _list_models(client, policy: RetryPolicy):
    attempts = policy.start()
    while True:
        try:
            return await client.models.list()
        except Exception as e:
            status = getattr(e, "status_code", None)
            wait = attempts.next_wait(_retry_after(e)) if isinstance(status, int) and retryable_status(status) else None
            if wait is None:
                raise
            await asyncio.sleep(wait)


def _retry_after(e: Exception) -> float | None:
    response = getattr(e, "response", None)
    return parse_retry_after(response.headers.get("retry-after")) if response is not None else None


async def _check(specs: list[ModelSpec], policy: RetryPolicy) -> frozenset[str]:
    """Check one endpoint; returns who its model list says serves it (`owned_by`: llamacpp, vllm, openai, …)."""
    first = specs[0]
    where = first.base_url or f"the {first.provider} API"
    client = sdk_client(first, PREFLIGHT_TIMEOUT_SEC)  # raises on a missing key
    try:
        page = await _list_models(client, policy)
        listed = getattr(page, "data", None) or []
        served = {m.id for m in listed}
        owners = frozenset(str(o) for m in listed if (o := getattr(m, "owned_by", None)))
    except Exception as e:  # the SDKs share these class names; match by name to avoid importing both
        kind = type(e).__name__
        if kind in ("APIConnectionError", "APITimeoutError"):
            raise EndpointUnavailable(
                f"cannot reach {where} (model {first.label}); start the server or fix --base-url ({kind})") from e
        if kind in ("AuthenticationError", "PermissionDeniedError"):
            raise EndpointUnavailable(f"{where} rejected the API key (model {first.label}); check {first.key_env}") from e
        if kind == "NotFoundError":
            return frozenset()  # a server without a model list; the first real request will tell
        raise EndpointUnavailable(f"{where} failed the preflight (model {first.label}); {kind}: {e}".splitlines()[0]) from e
    finally:
        await client.close()
    if first.base_url and served:  # self-hosted servers list exactly what they serve
        missing = sorted({s.name for s in specs} - served)
        if missing:
            raise EndpointUnavailable(
                f"{first.base_url} serves {', '.join(sorted(served))}, not {', '.join(missing)}; "
                "use the served model name in --model"
            )
    return owners


async def preflight(specs: Iterable[ModelSpec], policy: RetryPolicy | None = None) -> dict[str, frozenset[str]]:
    """Check each distinct endpoint once (all in parallel); returns, per endpoint, who serves it (`owned_by`)."""
    policy = policy or RetryPolicy()
    by_endpoint: dict[tuple[str, str], list[ModelSpec]] = {}
    for s in specs:
        by_endpoint.setdefault((s.provider, s.endpoint), []).append(s)
    owners = await asyncio.gather(*(_check(group, policy) for group in by_endpoint.values()))
    return {endpoint: o for (_, endpoint), o in zip(by_endpoint, owners, strict=True)}
