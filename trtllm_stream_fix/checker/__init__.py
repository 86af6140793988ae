# SPDX-License-Identifier: Apache-2.0
"""Strict stream checkers: SSE framing, Responses, Chat Completions and Triton streams."""

from trtllm_stream_fix.checker.responses import (
    RULES,
    ResponsesCheck,
    ResponsesItem,
    ResponsesStreamChecker,
    check_responses_events,
)
from trtllm_stream_fix.checker.sse_reader import (
    SSEDecodeError,
    SSEEvent,
    SSELimitError,
    SSELimits,
    SSEProtocolError,
    SSEReader,
    parse_sse,
)

__all__ = [
    "RULES",
    "ResponsesCheck",
    "ResponsesItem",
    "ResponsesStreamChecker",
    "SSEDecodeError",
    "SSEEvent",
    "SSELimitError",
    "SSELimits",
    "SSEProtocolError",
    "SSEReader",
    "check_responses_events",
    "parse_sse",
]
