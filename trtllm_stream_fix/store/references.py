# SPDX-License-Identifier: Apache-2.0
"""``item_reference`` input items resolved from a :class:`~.base.ResponseStore`.

A Responses request may name an output item of a stored response instead of sending it
again (``{"type": "item_reference", "id": "msg_..."}``; the Vercel AI SDK does so whenever
``store`` is on). :func:`resolve_item_references` replaces each such item by the stored one,
with one ``items()`` call; an id the store does not hold is OpenAI's 400
(:class:`UnknownItemReference`), as is a reference without a string id. The simulated
server and the plugin's ``store`` group both resolve through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import StreamFixError
from .base import ResponseStore

Input = str | list[Any]


class UnknownItemReference(StreamFixError, LookupError):
    """An ``item_reference`` names no stored output item: OpenAI's 400 (``param`` ``input``)."""

    status = 400
    param = "input"

    def __init__(self, item_id: Any) -> None:
        if isinstance(item_id, str) and item_id:
            message = (
                f"Item with id '{item_id}' not found. Items are not persisted when `store` is "
                "set to false. Try again with `store` set to true, or remove this item from "
                "your input."
            )
        else:
            message = f"An item_reference needs a string `id`; got {item_id!r}."
        super().__init__(message)
        self.item_id = item_id


def _is_reference(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("type") == "item_reference"


async def resolve_item_references(store: ResponseStore, request_input: Input) -> Input:
    """``request_input`` with each ``item_reference`` replaced by the stored output item of
    that id (the same object when it has none); :class:`UnknownItemReference` for an id the
    store does not hold, :class:`~.base.StoreError` when the store fails."""
    if isinstance(request_input, str):
        return request_input
    wanted = [item.get("id") for item in request_input if _is_reference(item)]
    if not wanted:
        return request_input
    for item_id in wanted:
        if not (isinstance(item_id, str) and item_id):
            raise UnknownItemReference(item_id)
    found = await store.items(list(dict.fromkeys(wanted)))
    for item_id in wanted:
        if item_id not in found:
            raise UnknownItemReference(item_id)
    return [found[item["id"]] if _is_reference(item) else item for item in request_input]
