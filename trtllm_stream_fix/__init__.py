# SPDX-License-Identifier: Apache-2.0
"""Correct OpenAI Responses and Chat Completions streaming for gpt-oss (Harmony) on TensorRT-LLM.

The names below are imported on first use (module ``__getattr__``), so importing the package,
and the command line's ``--version`` and ``--help``, load neither ``openai`` nor the core.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import errors as _errors

if TYPE_CHECKING:
    from .core.chat_chunks import format_chat_sse
    from .core.chat_machine import (
        ChatChunkMachine,
        ChatContext,
        ChatOptions,
        build_chat_completion,
    )
    from .core.config import StreamConfig
    from .core.context import ResponseContext
    from .core.machine import ResponsesEventMachine
    from .core.nonstreaming import build_response
    from .core.sse import SSEEncoder, event_to_dict, format_sse
    from .defaults import edge_defaults, new_context

#: Each public name and the module that defines it, imported when the name is first used.
_LAZY = {
    "format_chat_sse": ".core.chat_chunks",
    "ChatChunkMachine": ".core.chat_machine",
    "ChatContext": ".core.chat_machine",
    "ChatOptions": ".core.chat_machine",
    "build_chat_completion": ".core.chat_machine",
    "StreamConfig": ".core.config",
    "ResponseContext": ".core.context",
    "ResponsesEventMachine": ".core.machine",
    "build_response": ".core.nonstreaming",
    "SSEEncoder": ".core.sse",
    "event_to_dict": ".core.sse",
    "format_sse": ".core.sse",
    "edge_defaults": ".defaults",
    "new_context": ".defaults",
}

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
    """A public name or error class, imported on first use."""
    if name in _errors.__all__:
        return getattr(_errors, name)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_errors.__all__})
