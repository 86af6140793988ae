# SPDX-License-Identifier: Apache-2.0
"""Non-streaming Responses output: the event machine fed the whole token list in one call.

There is one item path: a non-streaming response is the final response of the stream that
carries every token in a single engine response, so stream and non-streaming agree by
construction (ids and timestamps aside); its usage (``build_usage``) is the terminal event's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openai.types.responses import Response, ResponseUsage

from .config import DEFAULT_CONFIG, StreamConfig
from .context import ResponseContext
from .items import IdFactory
from .machine import ResponsesEventMachine


def build_response(
    context: ResponseContext,
    token_ids: Sequence[int],
    finish_reason: str | None,
    *,
    encoding: Any,
    config: StreamConfig = DEFAULT_CONFIG,
    new_id: IdFactory | None = None,
) -> Response:
    """The non-streaming ``Response`` for a complete generation (any int sequence)."""
    machine = ResponsesEventMachine(context, encoding=encoding, config=config, new_id=new_id)
    machine.start()
    machine.feed(token_ids, finished=True, finish_reason=finish_reason)
    assert machine.final_response is not None  # feed(finished=True) always terminates
    return machine.final_response


def build_usage(
    context: ResponseContext,
    token_ids: Sequence[int],
    finish_reason: str | None,
    *,
    encoding: Any,
    config: StreamConfig = DEFAULT_CONFIG,
    new_id: IdFactory | None = None,
) -> ResponseUsage:
    """The usage the stream's terminal event reports for a complete generation.

    Output and reasoning tokens are the machine's count (tokens parsed, analysis-channel
    tokens); input tokens are ``context.num_prompt_tokens``.
    """
    response = build_response(
        context, token_ids, finish_reason, encoding=encoding, config=config, new_id=new_id
    )
    assert response.usage is not None  # every terminal response carries usage
    return response.usage
