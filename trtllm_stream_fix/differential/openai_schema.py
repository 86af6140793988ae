# SPDX-License-Identifier: Apache-2.0
"""Required-key schema of Responses events, derived from recordings of OpenAI's API.

Not the ``openai`` SDK's types (they make most Response fields Optional): the schema in
``openai_schema.json`` lists, per event type and per nested object kind, the keys that every
recorded instance carried (``derive``), plus a few supplements for kinds OpenAI's hosted models
never stream (``reasoning_text`` events, the ``error`` event), each with its source. Provenance
is recorded in the file and in ``docs/openai-recordings.md``.

``missing_keys(event)`` walks an event dict (or a non-streaming Response body) and names every
required key that is absent, every integer field that is not an integer, a sampling value
(``temperature`` ...) that is not a number, and a ``usage`` that is set before the terminal
event. ``unknown_keys(record)`` names every key (null ones included)
that OpenAI's API does not send for its kind, such as a Python alias (``async_``).
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).with_name("openai_schema.json")
#: Keys OpenAI sends only on request (``stream_options.include_obfuscation``,
#: ``include=["reasoning.encrypted_content"]``): never required.
OPTIONAL_KEYS = frozenset(("obfuscation", "encrypted_content"))
LIFECYCLE = frozenset(
    ("response.created", "response.in_progress", "response.queued")
)  # before the terminal event: usage is null
INTEGER_KEYS = ("sequence_number", "output_index", "content_index", "created_at")
#: Response keys OpenAI sends as numbers: the sampling values in effect, never null.
NUMBER_KEYS = ("temperature", "top_p", "presence_penalty", "frequency_penalty")


def _kinds(event: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """``(kind, object)`` for ``event`` and every nested object the schema describes."""
    yield f"event:{event.get('type')}", event
    response = event.get("response")
    if isinstance(response, Mapping):
        yield from _response_kinds(response)
    for key in ("item",):
        item = event.get(key)
        if isinstance(item, Mapping):
            yield from _item_kinds(item)
    part = event.get("part")
    if isinstance(part, Mapping):
        yield f"part:{part.get('type')}", part


def _response_kinds(response: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    yield "response", response
    for key in ("reasoning", "text", "usage", "error", "incomplete_details"):
        value = response.get(key)
        if isinstance(value, Mapping):
            yield key, value
    for tool in response.get("tools") or ():
        if isinstance(tool, Mapping):
            yield f"tool:{tool.get('type')}", tool
    for item in response.get("output") or ():
        if isinstance(item, Mapping):
            yield from _item_kinds(item)


def _item_kinds(item: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    yield f"item:{item.get('type')}", item
    for part in item.get("content") or ():
        if isinstance(part, Mapping):
            yield f"part:{part.get('type')}", part


def objects(record: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """The described objects of one recorded event, or of a non-streaming Response body."""
    if record.get("object") == "response":
        return _response_kinds(record)
    return _kinds(record)


def derive(records: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Per kind, the keys every recorded instance carries (``OPTIONAL_KEYS`` left out)."""
    found: dict[str, set[str]] = {}
    for record in records:
        for kind, obj in objects(record):
            keys = set(obj) - OPTIONAL_KEYS
            found[kind] = found[kind] & keys if kind in found else keys
    return {kind: sorted(keys) for kind, keys in sorted(found.items())}


@functools.lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The committed schema (``openai_schema.json``)."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def required(kind: str) -> list[str] | None:
    """The required keys of ``kind`` (``event:<type>``, ``response``, ``item:<type>``, ...)."""
    return schema()["required"].get(kind)


def missing_keys(record: Mapping[str, Any]) -> list[str]:
    """Problems of one event dict (or non-streaming body) against the schema; [] when fine.

    Kinds the schema does not describe are reported too, so a new event or item type we
    start to emit cannot pass unchecked.
    """
    problems: list[str] = []
    for kind, obj in objects(record):
        keys = required(kind)
        if keys is None:
            problems.append(f"{kind}: not in the recorded schema")
            continue
        problems.extend(f"{kind}: missing {key!r}" for key in keys if key not in obj)
        for key in INTEGER_KEYS:
            value = obj.get(key)
            if value is not None and (type(value) is not int):
                problems.append(f"{kind}: {key!r} is {type(value).__name__}, not an integer")
    response = record.get("response") if "type" in record else record
    if isinstance(response, Mapping):
        completed_at = response.get("completed_at")
        if completed_at is not None and type(completed_at) is not int:
            problems.append("response: 'completed_at' is not an integer")
        problems.extend(
            f"response: {key!r} is {type(response[key]).__name__}, not a number"
            for key in NUMBER_KEYS
            if key in response and type(response[key]) not in (int, float)
        )
        if record.get("type") in LIFECYCLE and response.get("usage") is not None:
            problems.append(f"event:{record['type']}: usage set before the terminal event")
    return problems


def unknown_keys(record: Mapping[str, Any], kinds: str = "") -> list[str]:
    """Keys of one event dict (or Response body) OpenAI's API does not send; [] when fine.

    Only kinds starting with ``kinds`` (e.g. ``"item:"``) are checked. Allowed per kind: the
    recorded keys, :data:`OPTIONAL_KEYS` and, for output items, the wire names (aliases) of
    the ``openai`` SDK's type for it (keys OpenAI sends on some instances only, or null):
    ``async`` is one, the SDK's Python name ``async_`` is not. Kinds the schema does not
    describe are left to :func:`missing_keys`.
    """
    problems: list[str] = []
    for kind, obj in objects(record):
        keys = required(kind)
        if keys is None or not kind.startswith(kinds):
            continue
        allowed = set(keys) | OPTIONAL_KEYS | _sdk_item_keys().get(kind, frozenset())
        problems.extend(f"{kind}: unknown {key!r}" for key in obj if key not in allowed)
    return problems


@functools.lru_cache(maxsize=1)
def _sdk_item_keys() -> dict[str, frozenset[str]]:
    """Per ``item:<type>``, the wire names of the ``openai`` SDK's output item type."""
    from openai.types.responses import ResponseOutputItem

    union = typing.get_args(ResponseOutputItem)[0]  # Annotated[Union[...], discriminator]
    found: dict[str, frozenset[str]] = {}
    for model in typing.get_args(union):
        fields = getattr(model, "model_fields", {})
        kinds = typing.get_args(fields["type"].annotation) if "type" in fields else ()
        names = frozenset(f.alias or name for name, f in fields.items())
        for value in kinds:
            found[f"item:{value}"] = names
    return found
