# SPDX-License-Identifier: Apache-2.0
"""Stand-in for the two request validators of ``tensorrt_llm.sampling_params``.

Both accept what they are given: the Responses requests of the tests set neither field.
"""

from __future__ import annotations

from typing import Any


def check_logprobs_limit(name: str, value: Any) -> None:
    """Upstream rejects values above the engine's limit; nothing to enforce here."""


def validate_thinking_token_budget(value: Any) -> Any:
    return value


# Upstream's llmapi re-exports this module's class; openai_server imports it from here (the
# compaction group builds the summary's sampling parameters with it).
from .llmapi import SamplingParams as SamplingParams  # noqa: E402
