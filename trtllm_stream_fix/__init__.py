# SPDX-License-Identifier: Apache-2.0
"""Correct OpenAI Responses API streaming for gpt-oss (Harmony) on TensorRT-LLM."""

from .core.config import StreamConfig
from .core.context import ResponseContext
from .core.machine import ResponsesEventMachine
from .core.nonstreaming import build_response
from .core.sse import SSEEncoder, event_to_dict, format_sse
from .defaults import edge_defaults

__all__ = [
    "ResponseContext",
    "ResponsesEventMachine",
    "SSEEncoder",
    "StreamConfig",
    "build_response",
    "edge_defaults",
    "event_to_dict",
    "format_sse",
]
__version__ = "0.1.0"
