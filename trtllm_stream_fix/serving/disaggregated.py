# SPDX-License-Identifier: Apache-2.0
"""What a disaggregated generation worker reads off a request or an engine result.

Under disaggregated serving a generation worker receives the whole prompt as KV cache
transferred from a context worker, so its own counts claim every prompt token cached. The
context worker's usage travels with the hand-off (``disaggregated_params.ctx_usage``, a
``UsageInfo`` or its dict, relayed by the orchestrator); upstream reports the prompt and cached
tokens from it (``disagg_utils.get_usage_tokens_from_ctx``), and so do the plugin's streams and
bodies. A context-only result is the hand-off itself (one token, finish reason
``not_finished``): the orchestrator reads it, no client does.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

CONTEXT_ONLY = "context_only"


class ContextCounts(NamedTuple):
    """The prompt tokens the context worker counted, and how many of them it found cached."""

    prompt_tokens: int
    cached_tokens: int


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def token_count(value: Any) -> int | None:
    """``value`` as a token count (any integer type, numpy's included), else ``None``."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return None


def usage_counts(ctx_usage: Any) -> ContextCounts | None:
    """``(prompt_tokens, cached_tokens)`` of a context usage (model or dict).

    As upstream's ``get_usage_tokens_from_ctx``; ``None`` without one or without a prompt count.
    """
    if ctx_usage is None:
        return None
    prompt = token_count(_field(ctx_usage, "prompt_tokens"))
    if prompt is None:
        return None
    details = _field(ctx_usage, "prompt_tokens_details")
    cached = token_count(_field(details, "cached_tokens")) if details is not None else None
    return ContextCounts(prompt, cached or 0)


def context_counts(outputs: Iterable[Any] | None, relayed: Any = None) -> ContextCounts | None:
    """The context worker's counts, or ``None`` on an aggregated request.

    ``relayed`` (the request's ``ctx_usage``, which chat's post-processing arguments carry)
    first, else the first output whose ``disaggregated_params`` carries a ``ctx_usage`` (the
    executor sets the request's parameters on every output of a generation-only result).
    """
    counts = usage_counts(relayed)
    if counts is not None:
        return counts
    for output in outputs or ():
        counts = usage_counts(_field(getattr(output, "disaggregated_params", None), "ctx_usage"))
        if counts is not None:
            return counts
    return None


def is_context_only(output: Any) -> bool:
    """Whether ``output`` is a context-only result (the hand-off to a generation worker)."""
    params = getattr(output, "disaggregated_params", None)
    return bool(_field(params, "request_type") == CONTEXT_ONLY)
