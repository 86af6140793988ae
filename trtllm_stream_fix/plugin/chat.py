# SPDX-License-Identifier: Apache-2.0
"""Replacements for upstream's Harmony chat post-processors (``/v1/chat/completions``).

``tensorrt_llm.serve.openai_server.OpenAIServer.chat_harmony`` hands every engine response
to ``postprocess_handlers.chat_harmony_streaming_post_processor(rsp, args)`` (a list of SSE
frames; the server appends ``data: [DONE]``) and the finished result to
``chat_harmony_post_processor(rsp, args)`` (a response object the server ``model_dump``s),
inline or in a PostprocWorker (the function travels by reference, ``args`` is copied to the
worker once per request). Both upstream lines read (harmony_adapter 38134b13 behind
postprocess_handlers of the same era, and 01bf1923 / 271a1eda) call them with
``(rsp, args)``; the helpers behind them (``harmony_adapter.handle_streaming_response`` /
``handle_non_streaming_response``) changed their parameters between the lines, so the
patch replaces the post-processors, not the helpers.

Both replacements delegate to :mod:`trtllm_stream_fix.serving.chat_processor`, the module
``upstream-pr`` writes into TensorRT-LLM for upstream's post-processors to call. The streaming
one keeps one :class:`ChatChunkMachine` per request on ``args`` (the object the server, or the
worker, keeps for the request's lifetime), created on the first response and dropped on the
last: nothing lives in a process-wide table.
"""

from __future__ import annotations

import sys
from typing import Any

from ..core.config import REASONING_FIELD_ENV
from ..serving import chat_processor
from ..serving.chat_processor import chat_context, chat_options
from .marker import mark
from .upstream_names import OPENAI_PROTOCOL, POSTPROCESS_HANDLERS

STREAMING = "chat_harmony_streaming_post_processor"
NON_STREAMING = "chat_harmony_post_processor"


def chat_harmony_streaming_post_processor(rsp: Any, args: Any) -> list[str]:
    """SSE frames for one engine response of a Harmony chat stream (without ``[DONE]``)."""
    return chat_processor.stream_chunks(rsp, args)


def chat_harmony_post_processor(rsp: Any, args: Any) -> Any:
    """The non-streaming completion as upstream's ``ChatCompletionResponse`` (looked up now).

    A generation that cannot be completed raises ``ValueError`` with the message the stream
    would have sent; upstream's handler turns it into an error response.
    """
    protocol = sys.modules.get(OPENAI_PROTOCOL)
    return chat_processor.chat_completion(
        rsp,
        args,
        getattr(protocol, "ChatCompletionResponse", None),
        getattr(protocol, "to_disaggregated_params", None),
    )


mark(chat_harmony_streaming_post_processor)
mark(chat_harmony_post_processor)

__all__ = [
    "NON_STREAMING",
    "POSTPROCESS_HANDLERS",
    "REASONING_FIELD_ENV",
    "STREAMING",
    "chat_context",
    "chat_harmony_post_processor",
    "chat_harmony_streaming_post_processor",
    "chat_options",
]
