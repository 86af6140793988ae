# SPDX-License-Identifier: Apache-2.0
"""The in-process response store: one server's memory, bounded in records and bytes.

Records (a response, its messages, its output items, as JSON bytes) are kept up to
``capacity`` records and ``max_bytes`` bytes; past either bound the least recently used
record is forgotten (``evicted`` counts them). A record's bytes are what holding it costs
the process: its JSON (each value copied to a buffer of its own length), its id strings and
a fixed overhead per record and per item (measured on CPython 3.11), so ``max_bytes``
bounds the process's memory, not only its JSON. The defaults, 10,000 records and 256 MiB,
keep every turn of thousands of concurrent conversations (upstream's in-process store keeps
16 responses). Records expire ``ttl`` seconds after they are stored.
"""

from __future__ import annotations

import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import options
from .base import (
    DEFAULT_TTL_SECONDS,
    JSON,
    MAX_TTL_SECONDS,
    ResponseStore,
    decode,
    encode,
    output_items,
)
from .errors import StoreError

DEFAULT_CAPACITY = 10_000
DEFAULT_MAX_BYTES = 256 * 2**20
#: Bytes a record costs beyond its JSON and id strings: the record object, its expiry, its
#: items dict and its LRU entry (about 300 on CPython 3.11), and per item its index entry.
RECORD_OVERHEAD = 320
ITEM_OVERHEAD = 48


def _held(blob: bytes) -> bytes:
    """``blob`` in a buffer of its own length. orjson returns its write buffer, many times
    longer than the JSON (32 KiB for a 3 KB value): held as is, 5,000 records of 33 MB of
    JSON held 288 MB."""
    return bytes(memoryview(blob))


@dataclass(slots=True)
class _Record:
    response: bytes
    messages: bytes
    items: dict[str, bytes]
    expires: float
    size: int


def _record(
    response_id: str, response: Mapping[str, Any], messages: Any, expires: float
) -> _Record:
    """``response`` and ``messages`` as held, with what holding them costs."""
    items = {item_id: _held(encode(item)) for item_id, item in output_items(response)}
    blobs = [_held(encode(response)), _held(encode(messages))]
    size = RECORD_OVERHEAD + sys.getsizeof(response_id) + sum(map(sys.getsizeof, blobs))
    size += sum(
        ITEM_OVERHEAD + sys.getsizeof(item_id) + sys.getsizeof(blob)
        for item_id, blob in items.items()
    )
    return _Record(blobs[0], blobs[1], items, expires, size)


class MemoryStore(ResponseStore):
    """Least-recently-used records, within ``capacity`` records and ``max_bytes`` bytes."""

    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        max_bytes: int = DEFAULT_MAX_BYTES,
        ttl: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        options.whole("capacity", capacity, low=1, high=2**31)
        options.whole("max_bytes", max_bytes, low=1, high=2**62)
        options.seconds("ttl", ttl, high=MAX_TTL_SECONDS)
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
        record = _record(response["id"], response, messages, self._clock() + self.ttl)
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
