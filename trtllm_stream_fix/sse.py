# SPDX-License-Identifier: Apache-2.0
"""SSE framing of Responses events: ``event: <type>\\ndata: <json>\\n\\n``."""

from __future__ import annotations

from typing import Any, Iterable

_DUMP_OPTIONS = {"exclude_none": True, "warnings": False}


def event_to_dict(event: Any) -> dict[str, Any]:
    """A JSON-ready dict of ``event`` (fields that are None left out)."""
    if isinstance(event, dict):
        return event
    return event.model_dump(mode="json", **_DUMP_OPTIONS)


def event_to_json(event: Any) -> str:
    return event.model_dump_json(**_DUMP_OPTIONS)


def format_sse(event: Any) -> str:
    """One SSE frame for ``event`` (its ``type`` as the SSE event name)."""
    return f"event: {event.type}\ndata: {event_to_json(event)}\n\n"


class SSEEncoder:
    """Stamps ``sequence_number`` 0,1,2,... (or from ``start``) and frames events as SSE."""

    def __init__(self, start: int = 0) -> None:
        self.sequence_number = start

    def encode(self, event: Any) -> str:
        event.sequence_number = self.sequence_number
        self.sequence_number += 1
        return format_sse(event)

    def encode_all(self, events: Iterable[Any]) -> list[str]:
        return [self.encode(event) for event in events]
