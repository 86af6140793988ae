# SPDX-License-Identifier: Apache-2.0
"""Correct OpenAI Responses and Chat Completions streaming for gpt-oss (Harmony) on TensorRT-LLM."""

from typing import Any

from .core.chat_chunks import format_chat_sse
from .core.chat_machine import ChatChunkMachine, ChatContext, ChatOptions, build_chat_completion
from .core.config import StreamConfig
from .core.context import ResponseContext
from .core.machine import ResponsesEventMachine
from .core.nonstreaming import build_response
from .core.sse import SSEEncoder, event_to_dict, format_sse
from .defaults import edge_defaults, new_context
from .errors import (
    ChatGenerationError,
    EncodingMismatchError,
    HarmonyStreamError,
    LifecycleError,
    StreamFixError,
    TruncatedHeaderError,
    VocabPackageMissingError,
    VocabUnavailableError,
)

__all__ = [
    "ChatChunkMachine",
    "ChatContext",
    "ChatGenerationError",
    "ChatOptions",
    "EncodingMismatchError",
    "HarmonyStreamError",
    "LifecycleError",
    "ResponseContext",
    "ResponsesEventMachine",
    "SSEEncoder",
    "StreamConfig",
    "StreamFixError",
    "TruncatedHeaderError",
    "VocabPackageMissingError",
    "VocabUnavailableError",
    "build_chat_completion",
    "build_response",
    "edge_defaults",
    "event_to_dict",
    "format_chat_sse",
    "format_sse",
    "new_context",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """The tools' error classes (``errors.ELSEWHERE``), imported on first use."""
    from . import errors

    if name in errors.ELSEWHERE:
        return getattr(errors, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
