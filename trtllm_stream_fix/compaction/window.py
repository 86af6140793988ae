# SPDX-License-Identifier: Apache-2.0
"""Compacted windows: what a compaction keeps, and how a compaction item expands again.

A window is the conversation's user messages (the most recent ones within
:data:`MAX_USER_CHARS`) followed by one ``compaction`` item. The item's record holds the
model's summary and, verbatim, the items after the last user message (the current turn's
calls, outputs and answer, reasoning left out) when they fit :data:`MAX_RETAINED_BYTES`
whole. As input, a compaction item expands where it stands into an assistant message
(:data:`SUMMARY_PREFIX` + the summary) followed by the retained items: the summary speaks as
the model's own earlier words and never with the authority of a system or developer message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .blob import BlobCodec, CompactionRecord
from .errors import CompactionError
from .prompt import text_of

#: Characters of user messages a window keeps (about 20k tokens), the most recent first.
MAX_USER_CHARS = 80_000
#: JSON bytes of the verbatim tail a record keeps; a larger tail is left to the summary.
MAX_RETAINED_BYTES = 64 * 1024
#: Characters of summary a record keeps.
MAX_SUMMARY_CHARS = 32_000
SUMMARY_PREFIX = "Summary of the earlier conversation (written when it was compacted):\n"
COMPACTION = "compaction"
TRIGGER = "compaction_trigger"

Item = dict[str, Any]


def summary_message(summary: str) -> Item:
    """The assistant message a compaction item's summary becomes in the model's context."""
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": SUMMARY_PREFIX + summary}],
    }


def expand(items: str | Sequence[Mapping[str, Any]], codec: BlobCodec) -> str | list[Item]:
    """``items`` with each compaction item replaced by its summary message and retained
    items; a blob that does not open is :class:`~.errors.InvalidCompactionBlob` naming
    ``input[i].encrypted_content``. A string input is returned as it is."""
    if isinstance(items, str):
        return items
    if not any(i.get("type") == COMPACTION for i in items):
        return list(items)  # type: ignore[arg-type]
    out: list[Item] = []
    for k, item in enumerate(items):
        if item.get("type") != COMPACTION:
            out.append(dict(item))
            continue
        record = codec.open(item.get("encrypted_content"), f"input[{k}].encrypted_content")
        out.append(summary_message(record.summary))
        out.extend(dict(i) for i in record.retained)
    return out


def split_trigger(items: str | Sequence[Mapping[str, Any]]) -> tuple[str | list[Item], bool]:
    """``items`` without a final ``compaction_trigger`` and whether there was one; a trigger
    anywhere else is a 400 naming it."""
    if isinstance(items, str):
        return items, False
    for k, item in enumerate(items[:-1]):
        if item.get("type") == TRIGGER:
            raise CompactionError(
                "compaction_trigger must be the last input item", param=f"input[{k}].type"
            )
    if items and items[-1].get("type") == TRIGGER:
        return [dict(i) for i in items[:-1]], True
    return [dict(i) for i in items], False


def as_items(items: str | Sequence[Mapping[str, Any]]) -> list[Item]:
    """A string input as one user message; a list as it is."""
    if isinstance(items, str):
        return [{"type": "message", "role": "user", "content": items}]
    return [dict(i) for i in items]


def _is_user(item: Mapping[str, Any]) -> bool:
    return item.get("type", "message") == "message" and item.get("role") == "user"


def user_messages(items: Sequence[Mapping[str, Any]], new_id: Callable[[str], str]) -> list[Item]:
    """The window's user messages: the most recent within :data:`MAX_USER_CHARS`, in order,
    as output items."""
    kept: list[Item] = []
    budget = MAX_USER_CHARS
    for item in reversed([i for i in items if _is_user(i)]):
        text = text_of(item.get("content"))
        if len(text) > budget:
            break
        budget -= len(text)
        kept.append(
            {
                "id": new_id("msg"),
                "type": "message",
                "role": "user",
                "status": "completed",
                "content": [{"type": "input_text", "text": text}],
            }
        )
    return kept[::-1]


def retained_tail(items: Sequence[Mapping[str, Any]]) -> list[Item]:
    """The items after the last user message, reasoning left out, when they fit
    :data:`MAX_RETAINED_BYTES` whole (else none: the summary covers them)."""
    last_user = max((n for n, i in enumerate(items) if _is_user(i)), default=-1)
    tail = [dict(i) for i in items[last_user + 1 :] if i.get("type") != "reasoning"]
    size = len(json.dumps(tail, ensure_ascii=False).encode())
    return tail if size <= MAX_RETAINED_BYTES else []


def record_for(summary: str, items: Sequence[Mapping[str, Any]], model: str) -> CompactionRecord:
    """The record a compaction of ``items`` seals (summary bounded to MAX_SUMMARY_CHARS)."""
    if len(summary) > MAX_SUMMARY_CHARS:
        cut = summary.rfind(" ", 0, MAX_SUMMARY_CHARS)
        summary = summary[: cut if cut > 0 else MAX_SUMMARY_CHARS]
    return CompactionRecord(summary, retained_tail(items), model)


def compaction_item(item_id: str, blob: str) -> Item:
    """The ``compaction`` output item."""
    return {"id": item_id, "type": COMPACTION, "encrypted_content": blob}
