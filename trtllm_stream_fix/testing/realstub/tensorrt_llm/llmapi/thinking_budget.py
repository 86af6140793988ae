# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.llmapi.thinking_budget`` (request preprocessing only)."""

from __future__ import annotations

from typing import Any


def add_thinking_budget_logits_processor(sampling_params: Any, **kwargs: Any) -> None:
    raise NotImplementedError("request preprocessing is not exercised")
