# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.llmapi.thinking_budget``: a request without a thinking-token
budget gets no logits processor, as upstream does; a budget needs the engine's sampler."""

from __future__ import annotations

from typing import Any


def add_thinking_budget_logits_processor(sampling_params: Any, **kwargs: Any) -> None:
    if getattr(sampling_params, "thinking_token_budget", None) is not None:
        raise NotImplementedError("thinking-token budgets need the engine's sampler")
