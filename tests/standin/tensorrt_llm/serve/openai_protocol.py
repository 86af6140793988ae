# SPDX-License-Identifier: Apache-2.0
"""Stand-in of ``tensorrt_llm.serve.openai_protocol``: the Responses request and response."""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from openai.types.responses import FunctionTool, ResponseOutputItem, ResponseUsage
from openai.types.shared import Reasoning
from pydantic import BaseModel, ConfigDict, Field

from ..sampling_params import SamplingParams


class OpenAIBaseModel(BaseModel):
    model_config = ConfigDict(extra="allow")


class ResponsesRequest(OpenAIBaseModel):
    """The request fields the Harmony streaming path reads."""

    model: str = "gpt-oss-20b"
    input: str | list[dict[str, Any]] = ""
    instructions: str | None = None
    tools: list[FunctionTool] = Field(default_factory=list)
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] = "auto"
    parallel_tool_calls: bool = True
    stream: bool = False
    store: bool = True
    background: bool = False
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    previous_response_id: str | None = None
    reasoning: Reasoning | None = None
    request_id: str = Field(default_factory=lambda: f"resp_{uuid.uuid4().hex}")

    def to_sampling_params(
        self, default_sampling_params: dict | None = None, reasoning_parser: str | None = None
    ) -> SamplingParams:
        defaults = default_sampling_params or {}
        return SamplingParams(
            max_tokens=self.max_output_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            stop_token_ids=list(defaults.get("stop_token_ids", [])),
        )


class ResponsesResponse(OpenAIBaseModel):
    id: str
    created_at: int
    model: str
    object: Literal["response"] = "response"
    output: list[ResponseOutputItem]  # as upstream's: a stored dump loads back into items
    status: str
    usage: ResponseUsage | None = None
    instructions: str | None = None
    max_output_tokens: int | None = None
    parallel_tool_calls: bool = True
    temperature: float | None = None
    top_p: float | None = None
    tool_choice: Any = "auto"
    tools: list[Any] = Field(default_factory=list)

    @classmethod
    def from_request(
        cls,
        request: ResponsesRequest,
        sampling_params: SamplingParams,
        model_name: str,
        created_time: int,
        output: list[Any],
        status: str,
        usage: ResponseUsage | None = None,
    ) -> ResponsesResponse:
        return cls(
            id=request.request_id,
            created_at=created_time or int(time.time()),
            model=model_name,
            output=output,
            status=status,
            usage=usage,
            instructions=request.instructions,
            max_output_tokens=request.max_output_tokens,
            parallel_tool_calls=request.parallel_tool_calls,
            temperature=sampling_params.temperature,
            top_p=sampling_params.top_p,
            tool_choice=request.tool_choice,
            tools=request.tools,
        )
