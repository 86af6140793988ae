# SPDX-License-Identifier: Apache-2.0
"""The ``Response`` object carried by lifecycle events and returned non-streaming."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from openai._models import construct_type
from openai.types.responses import Response, ResponseUsage, Tool
from openai.types.responses.response import IncompleteDetails
from openai.types.responses.response_error import ResponseError
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from .context import ResponseContext
from .fastmodel import construct
from .items import ItemRecord, build_item


def typed_tools(tools: Sequence[dict[str, Any]]) -> list[Any]:
    """Request tool dicts as ``openai`` tool models (built once per request).

    Top-level None values are dropped (unset); nested values, such as a JSON schema's
    ``"default": null``, are echoed as given.
    """
    return [
        construct_type(type_=Tool, value={k: v for k, v in tool.items() if v is not None})
        for tool in tools
    ]


def usage(input_tokens: int, output_tokens: int, reasoning_tokens: int) -> ResponseUsage:
    return construct(
        ResponseUsage,
        input_tokens=input_tokens,
        input_tokens_details=construct(InputTokensDetails, cached_tokens=0, cache_write_tokens=0),
        output_tokens=output_tokens,
        output_tokens_details=construct(OutputTokensDetails, reasoning_tokens=reasoning_tokens),
        total_tokens=input_tokens + output_tokens,
    )


def build_response(
    context: ResponseContext,
    tools: list[Any],
    items: Sequence[ItemRecord],
    *,
    status: str,
    usage_: ResponseUsage | None = None,
    incomplete_reason: str | None = None,
    error: tuple[str, str] | None = None,
) -> Response:
    """A ``Response`` snapshot; ``error`` is ``(code, message)``."""
    return construct(
        Response,
        id=context.response_id,
        object="response",
        created_at=context.created_at,
        completed_at=time.time() if status == "completed" else None,
        model=context.model,
        output=[build_item(record) for record in items],
        status=status,
        usage=usage_,
        incomplete_details=(
            construct(IncompleteDetails, reason=incomplete_reason) if incomplete_reason else None
        ),
        error=(construct(ResponseError, code=error[0], message=error[1]) if error else None),
        tools=tools,
        tool_choice=context.tool_choice,
        parallel_tool_calls=context.parallel_tool_calls,
        instructions=context.instructions,
        max_output_tokens=context.max_output_tokens,
        temperature=context.temperature,
        top_p=context.top_p,
        metadata={},
    )
