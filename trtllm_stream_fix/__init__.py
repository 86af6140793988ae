# SPDX-License-Identifier: Apache-2.0
"""Correct OpenAI Responses API streaming for gpt-oss (Harmony) on TensorRT-LLM."""

from .config import StreamConfig
from .context import ResponseContext
from .machine import ResponsesEventMachine
from .nonstreaming import build_response
from .sse import SSEEncoder, event_to_dict, format_sse

__all__ = [
    "ResponseContext",
    "ResponsesEventMachine",
    "SSEEncoder",
    "StreamConfig",
    "build_response",
    "event_to_dict",
    "format_sse",
]
__version__ = "0.1.0"
