# SPDX-License-Identifier: Apache-2.0
"""SSE framing of Responses events: ``event: <type>\\ndata: <json>\\n\\n``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from openai.types.responses import ResponseReasoningItem
from pydantic import BaseModel

from .compat import json_dumps, json_loads
from .events import DELTA_TYPES


def event_to_dict(event: Any) -> dict[str, Any]:
    """A JSON-ready dict of ``event``, exactly as it goes on the wire (``event_to_json``)."""
    if isinstance(event, dict):
        return event
    out: dict[str, Any] = json_loads(model_to_json(event))
    return out


_ALIASED: dict[type, bool] = {}


def _has_aliases(cls: type[BaseModel]) -> bool:
    found = _ALIASED.get(cls)
    if found is None:
        found = any(f.alias not in (None, name) for name, f in cls.model_fields.items())
        _ALIASED[cls] = found
    return found


def _model_fields(value: Any) -> Any:
    """orjson ``default``: every field of a model (None as null), nested models recursed."""
    if not isinstance(value, BaseModel):
        raise TypeError(f"cannot serialise {type(value).__name__}")
    if _has_aliases(type(value)):  # wire names differ from attribute names
        return value.model_dump(mode="json", by_alias=True, warnings=False)
    fields = value.__dict__
    extra = value.__pydantic_extra__
    if extra:
        fields = {**fields, **extra}
    if type(value) is ResponseReasoningItem and fields.get("encrypted_content") is None:
        # OpenAI sends the key only to a request that includes it, with content we never have
        return {k: v for k, v in fields.items() if k != "encrypted_content"}
    return fields


def model_to_json(model: Any) -> str:
    """``model`` as compact JSON: every field, ``null`` where unset, as OpenAI's API sends.

    orjson over the models' own fields: several times cheaper than pydantic's serialiser,
    and the same JSON as ``model_dump_json(by_alias=True)`` (tested). What orjson refuses
    (an integer beyond 64 bits, a lone surrogate) goes through the standard ``json`` module
    over the same fields: integers stay integers (pydantic's serialiser would write a
    ``float`` field's integer as ``1.0``) and a surrogate is written as its ``\\u`` escape.
    """
    try:
        return json_dumps(model, default=_model_fields).decode()
    except TypeError:
        return json.dumps(model, default=_model_fields, separators=(",", ":"))


def event_to_json(event: Any) -> str:
    """``event`` as compact JSON (every field, ``null`` where unset)."""
    if event.type in DELTA_TYPES:  # plain values only: orjson straight from the fields
        try:
            return json_dumps(event.__dict__).decode()
        except TypeError:  # a nested model (e.g. logprobs entries): take the general path
            pass
    return model_to_json(event)


def format_sse(event: Any) -> str:
    """One SSE frame for ``event`` (its ``type`` as the SSE event name)."""
    fields = event.__dict__
    kind = fields["type"]
    if kind in DELTA_TYPES:  # the per-token path: event_to_json's delta branch inlined
        try:
            return f"event: {kind}\ndata: {json_dumps(fields).decode()}\n\n"
        except TypeError:
            pass
    return f"event: {kind}\ndata: {event_to_json(event)}\n\n"


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
