# SPDX-License-Identifier: Apache-2.0
"""``item_reference`` input items resolved from a :class:`~.base.ResponseStore`, within a bound.

A Responses request may name an output item of a stored response instead of sending it
again (``{"type": "item_reference", "id": "msg_..."}``; the Vercel AI SDK does so whenever
``store`` is on). :func:`resolve_item_references` replaces each such item by the stored one;
an id the store does not hold is OpenAI's 400 (:class:`UnknownItemReference`), as is a
reference without a string id. The simulated server and the plugin's ``store`` group both
resolve through it.

A small request may name large stored items, so the expanded input is bounded as it is
built: the compact JSON of its items (referenced and sent alike) is counted item by item and
the expansion stops with :class:`ExpandedInputTooLarge` once it passes ``max_bytes``
(:data:`DEFAULT_MAX_EXPANDED_BYTES`, the simulated server's default body bound). Stored
items are fetched :data:`FETCH_CHUNK` ids per ``items()`` call, in input order, so no more
than one chunk is read past the bound. Given ``known_ids`` (the ids of the conversation the
input continues), an id that is already there or twice in the input is OpenAI's 400
(:class:`DuplicateItem`), before anything is read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from .base import ResponseStore, encode
from .errors import DuplicateItem, ExpandedInputTooLarge, UnknownItemReference

Input = str | list[Any]

#: Bytes (compact JSON) an input may expand to: 1 MiB, the simulated server's body bound.
DEFAULT_MAX_EXPANDED_BYTES = 1024 * 1024
#: Stored items read per ``items()`` call while expanding.
FETCH_CHUNK = 16


def _is_reference(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("type") == "item_reference"


def _item_id(item: Any) -> Any:
    return item.get("id") if isinstance(item, Mapping) else getattr(item, "id", None)


def _size(item: Any) -> int:
    """Bytes of ``item`` as compact JSON (a model's dump for a model, else nothing)."""
    if isinstance(item, Mapping):
        return len(encode(item))
    dump = getattr(item, "model_dump", None)
    return len(encode(dump(mode="json"))) if callable(dump) else 0


def _check_ids(request_input: list[Any], known_ids: Collection[str]) -> None:
    """:class:`UnknownItemReference` for a reference without a string id; with ``known_ids``
    not None, :class:`DuplicateItem` for an id there or seen earlier in the input."""
    seen = set(known_ids)
    for item in request_input:
        item_id = _item_id(item)
        if _is_reference(item) and not (isinstance(item_id, str) and item_id):
            raise UnknownItemReference(item_id)
        if isinstance(item_id, str) and item_id:
            if item_id in seen:
                raise DuplicateItem(item_id)
            seen.add(item_id)


async def resolve_item_references(
    store: ResponseStore,
    request_input: Input,
    *,
    max_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
    known_ids: Collection[str] | None = None,
) -> Input:
    """``request_input`` with each ``item_reference`` replaced by the stored output item of
    that id (the same object when it has none); :class:`UnknownItemReference` for an id the
    store does not hold, :class:`ExpandedInputTooLarge` once the expanded input passes
    ``max_bytes``, :class:`DuplicateItem` (with ``known_ids``) for an id the conversation
    already holds, :class:`~.errors.StoreError` when the store fails."""
    if isinstance(request_input, str):
        return request_input
    if known_ids is not None:
        _check_ids(request_input, known_ids)
    wanted = [item.get("id") for item in request_input if _is_reference(item)]
    if not wanted:
        return request_input
    for item_id in wanted:
        if not (isinstance(item_id, str) and item_id):
            raise UnknownItemReference(item_id)
    order = list(dict.fromkeys(wanted))
    fetched: dict[str, Any] = {}
    sizes: dict[str, int] = {}
    asked: set[str] = set()
    spent = 0
    out: list[Any] = []
    for item in request_input:
        if _is_reference(item):
            item_id = item["id"]
            if item_id not in sizes:
                if item_id not in asked:  # the next chunk of ids, from this one on
                    chunk = order[len(asked) : len(asked) + FETCH_CHUNK]
                    asked.update(chunk)
                    fetched.update(await store.items(chunk))
                if item_id not in fetched:
                    raise UnknownItemReference(item_id)
                sizes[item_id] = _size(fetched[item_id])
            spent += sizes[item_id]
            item = fetched[item_id]
        else:
            spent += _size(item)
        if spent > max_bytes:
            raise ExpandedInputTooLarge(max_bytes)
        out.append(item)
    return out
