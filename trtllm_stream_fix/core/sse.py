# SPDX-License-Identifier: Apache-2.0
"""SSE framing of Responses events: ``event: <type>\\ndata: <json>\\n\\n``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
from pydantic import BaseModel

from .events import DELTA_TYPES


def event_to_dict(event: Any) -> dict[str, Any]:
    """A JSON-ready dict of ``event`` (fields that are None left out).

    Our models count only non-None values as set (``fastmodel``), so ``exclude_unset`` drops
    exactly the None fields; pydantic's ``exclude_none`` costs ~200 µs on a Response.
    """
    if isinstance(event, dict):
        return event
    return event.model_dump(mode="json", exclude_unset=True, warnings=False)


_ALIASED: dict[type, bool] = {}


def _has_aliases(cls: type) -> bool:
    found = _ALIASED.get(cls)
    if found is None:
        found = any(f.alias not in (None, name) for name, f in cls.model_fields.items())
        _ALIASED[cls] = found
    return found


def _model_fields(value: Any) -> Any:
    """orjson ``default``: a model's set fields (None left out), nested models recursed."""
    if not isinstance(value, BaseModel):
        raise TypeError(f"cannot serialise {type(value).__name__}")
    if _has_aliases(type(value)):  # wire names differ from attribute names
        return value.model_dump(mode="json", exclude_unset=True, by_alias=True, warnings=False)
    fields = {k: v for k, v in value.__dict__.items() if v is not None}
    extra = value.__pydantic_extra__
    if extra:
        fields.update((k, v) for k, v in extra.items() if v is not None)
    return fields


def event_to_json(event: Any) -> str:
    """``event`` as compact JSON (fields that are None left out).

    orjson over the models' own fields: 3-5x cheaper than pydantic's serialiser for the
    lifecycle and item events, and exactly the same JSON (tested against ``exclude_none``).
    """
    if event.type in DELTA_TYPES:  # plain values only: orjson straight from the fields
        fields = event.__dict__
        if None in fields.values():
            fields = {k: v for k, v in fields.items() if v is not None}
        try:
            return orjson.dumps(fields).decode()
        except TypeError:  # a nested model (e.g. logprobs entries): take the general path
            pass
    try:
        return orjson.dumps(event, default=_model_fields).decode()
    except TypeError:
        return event.model_dump_json(exclude_unset=True, by_alias=True, warnings=False)


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
