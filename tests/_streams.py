# SPDX-License-Identifier: Apache-2.0
"""Run a token list through ours or the baseline with explicit engine responses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trtllm_stream_fix.core.config import DEFAULT_CONFIG, StreamConfig
from trtllm_stream_fix.core.context import ResponseContext
from trtllm_stream_fix.core.sse import event_to_dict
from trtllm_stream_fix.testing.differential import make_stream


def run(
    impl: str,
    responses: Sequence[Sequence[int]],
    finish_reason: str = "stop",
    *,
    encoding: Any = None,
    config: StreamConfig = DEFAULT_CONFIG,
) -> list[dict[str, Any]]:
    """Events (as dicts) for ``responses``, the last one finished with ``finish_reason``."""
    context = ResponseContext.new(response_id="resp_test", created_at=0.0)
    stream = make_stream(impl, context, config, encoding)
    events = list(stream.start())
    for i, diff in enumerate(responses):
        last = i == len(responses) - 1
        events += stream.feed(
            list(diff), finished=last, finish_reason=finish_reason if last else None
        )
    return [event_to_dict(e) for e in events]


def split(tokens: Sequence[int], size: int) -> list[list[int]]:
    return [list(tokens[i : i + size]) for i in range(0, len(tokens), size)] or [[]]


def of_type(events, suffix: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"].endswith(suffix)]


def text_by_item(events) -> dict[str, str]:
    out: dict[str, str] = {}
    for e in events:
        if e["type"].endswith(".delta"):
            out[e["item_id"]] = out.get(e["item_id"], "") + e["delta"]
    return out
