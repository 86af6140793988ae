# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.llmapi``: the parameter types the serve modules import.

``SamplingParams`` keeps the keyword arguments it is given (the Responses code reads
``temperature``, ``top_p``, ``max_tokens``, ``logprobs`` and the penalties back, None by
default as upstream's fields); the rest are plain records.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any


class SamplingParams:
    """Keyword record of sampling settings (upstream validates and converts them)."""

    def __init__(self, **kwargs: Any) -> None:
        self.temperature: float | None = None
        self.top_p: float | None = None
        self.max_tokens: int | None = None
        self.logprobs: int | None = None
        self.presence_penalty: float | None = None  # upstream's dataclass fields, None unless set
        self.frequency_penalty: float | None = None
        self.stop_token_ids: list[int] | None = None
        self.include_stop_str_in_output = False
        self.__dict__.update(kwargs)
        self.request_provided_fields: set[str] = set()

    def _set_request_provided_fields(self, names: Iterable[str]) -> None:
        self.request_provided_fields = set(names)


@dataclass
class GuidedDecodingParams:
    json: Any = None
    json_object: bool = False
    regex: str | None = None
    grammar: str | None = None
    structural_tag: str | None = None


class DisaggScheduleStyle(str, Enum):
    CONTEXT_FIRST = "context_first"
    GENERATION_FIRST = "generation_first"


@dataclass
class DisaggregatedParams:
    """``tensorrt_llm.disaggregated_params.DisaggregatedParams``: what the context phase hands
    the generation phase (``openai_protocol.to_llm_disaggregated_params`` fills every field;
    ``ctx_usage`` arrives as the dict of the context worker's ``UsageInfo``)."""

    request_type: str | None = None
    first_gen_tokens: list[int] | None = None
    first_gen_log_probs: Any = None
    first_gen_logits: Any = None
    ctx_request_id: int | None = None
    opaque_state: bytes | None = None
    draft_tokens: list[int] | None = None
    disagg_request_id: int | None = None
    ctx_dp_rank: int | None = None
    ctx_info_endpoint: Any = None
    schedule_style: Any = None
    ctx_usage: Any = None
    multimodal_embedding_handles: Any = None
    multimodal_hashes: Any = None


@dataclass
class ConversationParams:
    conversation_id: str = ""


@dataclass
class SchedulingParams:
    agent_hierarchy: Any = None
    subagent_affinity_id: Any = None
