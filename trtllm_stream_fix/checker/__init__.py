# SPDX-License-Identifier: Apache-2.0
"""Strict stream checkers: SSE framing, Responses, Chat Completions and Triton streams.

Its errors are in :mod:`.errors` (hierarchy there), re-exported here.
"""

from trtllm_stream_fix.checker.chat import (
    CHAT_ADVISORY_RULES,
    CHAT_RULES,
    ChatCheck,
    ChatChoice,
    ChatStreamChecker,
    ChatToolCall,
)
from trtllm_stream_fix.checker.client import (
    OUTCOMES,
    StreamRecord,
    StreamSession,
    replay_record,
    stream_chat,
    stream_responses,
    stream_triton,
)
from trtllm_stream_fix.checker.errors import (
    InvalidTransition,
    ProtocolRequiredError,
    SSEDecodeError,
    SSELimitError,
    SSEProtocolError,
    TritonProtocolError,
)
from trtllm_stream_fix.checker.responses import (
    RULES,
    ResponsesCheck,
    ResponsesItem,
    ResponsesStreamChecker,
    check_responses_events,
)
from trtllm_stream_fix.checker.sse_reader import SSEEvent, SSELimits, SSEReader, parse_sse
from trtllm_stream_fix.checker.triton import (
    RequestInput,
    RequestState,
    TritonCheck,
    TritonRequest,
    TritonResponse,
    TritonStreamChecker,
    parse_triton_response,
)

__all__ = [
    "CHAT_ADVISORY_RULES",
    "CHAT_RULES",
    "OUTCOMES",
    "RULES",
    "ChatCheck",
    "ChatChoice",
    "ChatStreamChecker",
    "ChatToolCall",
    "InvalidTransition",
    "ProtocolRequiredError",
    "RequestInput",
    "RequestState",
    "ResponsesCheck",
    "ResponsesItem",
    "ResponsesStreamChecker",
    "SSEDecodeError",
    "SSEEvent",
    "SSELimitError",
    "SSELimits",
    "SSEProtocolError",
    "SSEReader",
    "StreamRecord",
    "StreamSession",
    "TritonCheck",
    "TritonProtocolError",
    "TritonRequest",
    "TritonResponse",
    "TritonStreamChecker",
    "check_responses_events",
    "parse_sse",
    "parse_triton_response",
    "replay_record",
    "stream_chat",
    "stream_responses",
    "stream_triton",
]
