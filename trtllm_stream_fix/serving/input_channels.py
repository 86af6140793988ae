# SPDX-License-Identifier: Apache-2.0
"""The Harmony channel of the assistant items a client sends back as input.

A ``reasoning`` item goes on the analysis channel, an assistant ``message`` on its phase's
channel (``commentary`` for a preamble, ``final`` for an answer): ``with_phase_channel``
decorates upstream's input parser with it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

PHASE_CHANNELS = {"commentary": "commentary", "final_answer": "final"}


def item_channel(input_msg: Any) -> str | None:
    """The Harmony channel an input item we streamed belongs on.

    A ``reasoning`` item is the analysis channel; an assistant ``message`` item is the
    channel of its phase (``commentary`` for a preamble, ``final`` for an answer).
    """
    item = input_msg if isinstance(input_msg, dict) else getattr(input_msg, "__dict__", {})
    kind = item.get("type", "message")
    if kind == "reasoning":
        return "analysis"
    if kind != "message" or item.get("role") != "assistant":
        return None
    return PHASE_CHANNELS.get(item.get("phase") or "")


def with_phase_channel(parse: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a Responses input parser so assistant items render on their phase's channel."""

    @functools.wraps(parse)
    def parse_with_channel(input_msg: Any, *args: Any, **kwargs: Any) -> Any:
        message = parse(input_msg, *args, **kwargs)
        channel = item_channel(input_msg)
        if message is not None and channel and getattr(message, "channel", None) is None:
            message = message.with_channel(channel)
        return message

    return parse_with_channel
