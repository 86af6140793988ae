# SPDX-License-Identifier: Apache-2.0
"""The response store's interface and JSON codec (no web framework, no backend).

A stored record is one Response (JSON, exactly what the client saw) with the conversation's
messages up to and including it (JSON list: what ``previous_response_id`` continues), and
an index of the response's output items by id (what ``item_reference`` input items name).
Backends: :mod:`.memory` (in-process, bounded) and :mod:`.redis` (shared by replicas).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..core.compat import json_dumps, json_loads

#: How long a record is kept by default: 30 days, as OpenAI keeps responses.
DEFAULT_TTL_SECONDS = 30 * 24 * 3600
#: The longest ``ttl`` a store takes: 100 years (Redis refuses expiries much beyond).
MAX_TTL_SECONDS = 100 * 365 * 24 * 3600

JSON = dict[str, Any]


class ResponseStore(ABC):
    """Stored responses, their conversations and their output items, by id (async)."""

    #: What error messages call the store (a URL without its password).
    name: str = "store"

    @abstractmethod
    async def put(self, response: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> None:
        """Store ``response`` (keyed by its ``id``), its conversation's ``messages`` and its
        output items (keyed by their ``id``)."""

    @abstractmethod
    async def get(self, response_id: str) -> JSON | None:
        """The stored response, or None."""

    @abstractmethod
    async def history(self, response_id: str) -> list[JSON] | None:
        """The messages stored with ``response_id`` (its whole conversation), or None."""

    @abstractmethod
    async def items(self, item_ids: Sequence[str]) -> dict[str, JSON]:
        """The stored output items among ``item_ids``, by id (unknown ids left out)."""

    @abstractmethod
    async def delete(self, response_id: str) -> bool:
        """Forget ``response_id``, its messages and its items; False if it was not stored."""

    async def ping(self) -> None:
        """Raise :class:`StoreUnavailable` when the backend cannot be reached."""
        return None

    async def close(self) -> None:
        """Release the backend's connections."""
        return None


def output_items(response: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(id, item)`` for each output item of ``response`` that has an id."""
    for item in response.get("output") or ():
        item_id = item.get("id") if isinstance(item, Mapping) else None
        if isinstance(item_id, str) and item_id:
            yield item_id, item


def encode(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON (orjson when installed; the standard library for what
    orjson refuses: integers beyond 64 bits, lone surrogates)."""
    try:
        return json_dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()  # lone surrogates escaped


def decode(raw: bytes | str) -> Any:
    """A value :func:`encode` wrote."""
    try:
        return json_loads(raw)
    except ValueError:  # orjson refuses what the standard library wrote for it
        return json.loads(raw)
