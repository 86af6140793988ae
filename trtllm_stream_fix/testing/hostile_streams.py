# SPDX-License-Identifier: Apache-2.0
"""Hostile recorded streams for the checkers: many findings per byte, of any size.

Each body breaks one rule again and again, in a way that once made a checker's report grow
with the square of the input:

- ``responses``: output items added and never done (each addition is ``interleaved-items``,
  and once named every item still open);
- ``chat``: chunks whose tool calls skip indexes, lack id and name and change ids, then
  chunks after ``[DONE]``;
- ``triton``: responses for ever new request ids that never finish, then responses without
  an id (each once named every pending request).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["HOSTILE_STREAMS", "hostile_body"]


def _frame(payload: Any, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(payload, separators=(',', ':'))}\n\n"


def _responses() -> Iterator[str]:
    response = {
        "id": "resp_hostile",
        "object": "response",
        "created_at": 1700000000,
        "model": "gpt-oss-20b",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "status": "in_progress",
    }
    yield _frame({"type": "response.created", "sequence_number": 0, "response": response})
    n = 0
    while True:
        n += 1
        item = {
            "id": f"msg_{n:010d}",
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        event: dict[str, Any] = {
            "type": "response.output_item.added",
            "sequence_number": n,
            "output_index": n - 1,
            "item": item,
        }
        yield _frame(event, event["type"])


def _chat() -> Iterator[str]:
    n = 0
    while True:
        n += 1
        call = {"index": n * 2, "id": f"call_{n}", "function": {"arguments": "{"}}
        chunk = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "gpt-oss-20b",
            "choices": [{"index": 0, "delta": {"role": f"r{n}", "tool_calls": [call]}}],
        }
        yield _frame(chunk)
        if n % 4 == 0:
            yield "data: [DONE]\n\n"


def _triton() -> Iterator[str]:
    n = 0
    while True:
        n += 1
        yield _frame({"id": f"req-{n:010d}", "text_output": "x", "triton_final_response": False})
        yield _frame({"text_output": "y", "triton_final_response": False})


HOSTILE_STREAMS: dict[str, Callable[[], Iterator[str]]] = {
    "responses": _responses,
    "chat": _chat,
    "triton": _triton,
}


def hostile_body(protocol: str, size: int) -> bytes:
    """A hostile SSE body of ``protocol`` of about ``size`` bytes (whole events)."""
    parts, total = [], 0
    for frame in HOSTILE_STREAMS[protocol]():
        if total >= size:
            break
        parts.append(frame)
        total += len(frame)
    return "".join(parts).encode("utf-8")
