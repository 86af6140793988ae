# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.llmapi.disagg_utils``: no disaggregated serving here.

``get_usage_tokens_from_ctx`` is on the Responses path (usage of the final response): with no
context-phase usage it returns ``(None, None)``, as upstream does.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


def get_usage_tokens_from_ctx(ctx_usage: Any) -> tuple[int | None, int | None]:
    if ctx_usage is None:
        return None, None
    details = getattr(ctx_usage, "prompt_tokens_details", None)
    return ctx_usage.prompt_tokens, getattr(details, "cached_tokens", 0) if details else 0


def rewrite_usage_info_from_ctx(usage: Any, ctx_usage: Any) -> None:
    if ctx_usage is not None:
        raise NotImplementedError("disaggregated serving is not emulated")


def rewrite_usage_response_from_ctx(response: Any, ctx_usage: Any) -> None:
    if ctx_usage is not None:
        raise NotImplementedError("disaggregated serving is not emulated")


class ServerRole(IntEnum):
    """What a ``trtllm-serve`` process serves (``None`` = an ordinary LLM server)."""

    CONTEXT = 0
    GENERATION = 1
    MM_ENCODER = 2
    VISUAL_GEN = 3
    EMBEDDING = 4
