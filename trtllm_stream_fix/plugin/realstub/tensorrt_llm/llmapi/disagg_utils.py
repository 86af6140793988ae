# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.llmapi.disagg_utils``: the usage hand-off of disaggregated
serving, shaped as upstream's.

A generation worker reports the prompt and cached tokens the context worker counted
(``ctx_usage``, a ``UsageInfo`` the orchestrator relays in ``disaggregated_params``): its own
counts describe a prompt that arrived whole as transferred KV cache. ``get_usage_tokens_from_ctx``
gives ``(prompt_tokens, cached_tokens)`` of that usage, ``(None, 0)`` without one (an
aggregated server); the two ``rewrite_*`` functions put them on a chat ``UsageInfo``. The rest
of upstream's module (cluster configuration, MPI) is off the serve path.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


def get_usage_tokens_from_ctx(ctx_usage: Any) -> tuple[int | None, int]:
    if ctx_usage is None:
        return None, 0
    details = ctx_usage.prompt_tokens_details
    return ctx_usage.prompt_tokens, 0 if details is None else details.cached_tokens


def rewrite_usage_info_from_ctx(usage: Any, ctx_usage: Any) -> Any:
    prompt_tokens, cached_tokens = get_usage_tokens_from_ctx(ctx_usage)
    if prompt_tokens is None or usage is None:
        return usage
    from tensorrt_llm.serve.openai_protocol import PromptTokensDetails

    usage.prompt_tokens = prompt_tokens
    usage.total_tokens = prompt_tokens + (usage.completion_tokens or 0)
    usage.prompt_tokens_details = PromptTokensDetails(cached_tokens=cached_tokens)
    return usage


def rewrite_usage_response_from_ctx(response: Any, ctx_usage: Any) -> Any:
    rewrite_usage_info_from_ctx(response.usage, ctx_usage)
    return response


class ServerRole(IntEnum):
    """What a ``trtllm-serve`` process serves (``None`` = an ordinary LLM server)."""

    CONTEXT = 0
    GENERATION = 1
    MM_ENCODER = 2
    VISUAL_GEN = 3
    EMBEDDING = 4
