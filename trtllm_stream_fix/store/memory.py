# SPDX-License-Identifier: Apache-2.0
"""The in-process response store: one server's memory, bounded in records and bytes.

Records (a response, its messages, its output items, as JSON bytes) are kept up to
``capacity`` records and ``max_bytes`` bytes of JSON; past either bound the least recently
used record is forgotten (``evicted`` counts them). The defaults, 10,000 records and
256 MiB, keep every turn of thousands of concurrent conversations (upstream's in-process
store keeps 16 responses). Records expire ``ttl`` seconds after they are stored.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .base import DEFAULT_TTL_SECONDS, JSON, ResponseStore, StoreError, decode, encode, output_items

DEFAULT_CAPACITY = 10_000
DEFAULT_MAX_BYTES = 256 * 2**20


@dataclass
class _Record:
    response: bytes
    messages: bytes
    items: dict[str, bytes]
    expires: float
    size: int = 0

    def __post_init__(self) -> None:
        self.size = len(self.response) + len(self.messages) + sum(map(len, self.items.values()))


class MemoryStore(ResponseStore):
    """Least-recently-used records, within ``capacity`` records and ``max_bytes`` bytes."""

    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        max_bytes: int = DEFAULT_MAX_BYTES,
        ttl: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if capacity < 1 or max_bytes < 1 or ttl <= 0:
            raise ValueError("capacity, max_bytes and ttl must be positive")
        self.name = f"memory (capacity {capacity}, max_bytes {max_bytes})"
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.ttl = ttl
        self.bytes = 0
        self.evicted = 0
        self._clock = clock
        self._records: OrderedDict[str, _Record] = OrderedDict()
        self._item_owner: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._records)

    async def put(self, response: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> None:
        record = _Record(
            encode(response),
            encode(messages),
            {item_id: encode(item) for item_id, item in output_items(response)},
            self._clock() + self.ttl,
        )
        size = record.size
        if size > self.max_bytes:
            raise StoreError(
                f"response store {self.name}: a record of {size} bytes exceeds max_bytes"
            )
        self._drop(response["id"])
        while self._records and (
            len(self._records) >= self.capacity or self.bytes + size > self.max_bytes
        ):
            self._drop(next(iter(self._records)))
            self.evicted += 1
        self._records[response["id"]] = record
        self.bytes += size
        for item_id in record.items:
            self._item_owner[item_id] = response["id"]

    async def get(self, response_id: str) -> JSON | None:
        record = self._live(response_id)
        return None if record is None else decode(record.response)

    async def history(self, response_id: str) -> list[JSON] | None:
        record = self._live(response_id)
        return None if record is None else decode(record.messages)

    async def items(self, item_ids: Sequence[str]) -> dict[str, JSON]:
        found: dict[str, JSON] = {}
        for item_id in item_ids:
            owner = self._item_owner.get(item_id)
            record = self._live(owner) if owner is not None else None
            if record is not None:
                found[item_id] = decode(record.items[item_id])
        return found

    async def delete(self, response_id: str) -> bool:
        return self._live(response_id) is not None and self._drop(response_id)

    def _live(self, response_id: str) -> _Record | None:
        """The unexpired record of ``response_id`` (marked recently used), or None."""
        record = self._records.get(response_id)
        if record is None:
            return None
        if record.expires <= self._clock():
            self._drop(response_id)
            return None
        self._records.move_to_end(response_id)
        return record

    def _drop(self, response_id: str) -> bool:
        record = self._records.pop(response_id, None)
        if record is None:
            return False
        self.bytes -= record.size
        for item_id in record.items:
            if self._item_owner.get(item_id) == response_id:
                del self._item_owner[item_id]
        return True
