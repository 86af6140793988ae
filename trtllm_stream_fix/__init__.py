# SPDX-License-Identifier: Apache-2.0
"""Correct OpenAI Responses and Chat Completions streaming for gpt-oss (Harmony) on TensorRT-LLM."""

from typing import Any

from . import errors as _errors
from .core.chat_chunks import format_chat_sse
from .core.chat_machine import ChatChunkMachine, ChatContext, ChatOptions, build_chat_completion
from .core.config import StreamConfig
from .core.context import ResponseContext
from .core.machine import ResponsesEventMachine
from .core.nonstreaming import build_response
from .core.sse import SSEEncoder, event_to_dict, format_sse
from .defaults import edge_defaults, new_context

__all__ = [
    "ChatChunkMachine",
    "ChatContext",
    "ChatOptions",
    "ResponseContext",
    "ResponsesEventMachine",
    "SSEEncoder",
    "StreamConfig",
    "build_chat_completion",
    "build_response",
    "edge_defaults",
    "event_to_dict",
    "format_chat_sse",
    "format_sse",
    "new_context",
    *_errors.__all__,
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """The package's error classes (``errors``; the tools' ones imported on first use)."""
    if name in _errors.__all__ or name in _errors.ELSEWHERE:
        return getattr(_errors, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
