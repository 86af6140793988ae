# SPDX-License-Identifier: Apache-2.0
"""Fault injection for the local server: broken streams a strict client must tell apart.

Each fault rewrites the stream of SSE chunks (one chunk per engine response) of a valid
response; ``http503`` is handled before streaming starts.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from ..core.events import TERMINAL_TYPES
from .errors import InjectedDisconnect

_TERMINAL = re.compile(
    "^event: (" + "|".join(re.escape(t) for t in sorted(TERMINAL_TYPES)) + ")$", re.MULTILINE
)

#: Size of the ``oversize`` event's data line (above the strict reader's 8 MiB default).
OVERSIZE_BYTES = 9 * 1024 * 1024


def _frame(event_type: str, data: str) -> str:
    return f"event: {event_type}\ndata: {data}\n\n"


async def inject(fault: str, chunks: AsyncIterator[str]) -> AsyncIterator[str | bytes]:
    """The chunks of a stream with ``fault`` applied (past the first two chunks)."""
    sent = 0
    last_seq = -1
    async for chunk in chunks:
        is_last = _TERMINAL.search(chunk) is not None
        if sent >= 2 and not is_last:
            if fault == "drop":
                raise InjectedDisconnect("connection dropped by fault injection")
            if fault == "stall":
                yield chunk
                await asyncio.sleep(3600)
            if fault == "malformed_json":
                yield _frame("response.output_text.delta", '{"type": "response.output_text.delta",')
                return
            if fault == "oversize":
                payload = {"type": "response.output_text.delta", "delta": "x" * OVERSIZE_BYTES}
                yield _frame("response.output_text.delta", json.dumps(payload))
                return
            if fault == "invalid_utf8":
                yield b'event: response.output_text.delta\ndata: {"delta": "\xff\xfe"}\n\n'
                return
        if fault == "no_terminal" and is_last:
            terminal = _TERMINAL.search(chunk)
            yield chunk[: terminal.start()] if terminal else chunk
            return
        yield chunk
        sent += 1
        last_seq = _last_sequence_number(chunk, last_seq)
    if fault == "after_terminal":
        extra: dict[str, Any] = {
            "type": "response.output_text.delta",
            "item_id": "msg_after_terminal",
            "output_index": 0,
            "content_index": 0,
            "delta": "late",
            "logprobs": [],
            "sequence_number": last_seq + 1,
        }
        yield _frame(extra["type"], json.dumps(extra))


def _last_sequence_number(chunk: str, default: int) -> int:
    marker = '"sequence_number":'
    pos = chunk.rfind(marker)
    if pos < 0:
        return default
    digits = ""
    for ch in chunk[pos + len(marker) :].lstrip():
        if not ch.isdigit():
            break
        digits += ch
    return int(digits) if digits else default
