# SPDX-License-Identifier: Apache-2.0
"""The store's errors: each carries the HTTP status (and ``code``/``param``) a server answers.

Hierarchy::

    StreamFixError
    ├── StoreError: the store cannot serve a call (500 ``server_error``)
    │   └── StoreUnavailable: its backend is down or timed out (503)
    ├── UnknownItemReference (LookupError): an ``item_reference`` to no stored item (400)
    ├── DuplicateItem (ValueError): an item id the conversation already holds (400)
    └── ExpandedInputTooLarge (ValueError): the input, references resolved, too large (400)
"""

from __future__ import annotations

from typing import Any

from ..core.errors import StreamFixError


class StoreError(StreamFixError):
    """The store cannot serve a call (the server answers 500 ``server_error``)."""

    #: What a server answers: the HTTP status and the OpenAI error ``code`` (``server_error``).
    status = 500
    code = "store_error"


class StoreUnavailable(StoreError):
    """The store's backend is down or timed out (the server answers 503 ``server_error``)."""

    status = 503
    code = "store_unavailable"


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


class DuplicateItem(StreamFixError, ValueError):
    """An item id the conversation already holds, or twice in the input: OpenAI's 400."""

    status = 400
    param = "input"

    def __init__(self, item_id: str) -> None:
        super().__init__(
            f"Duplicate item found with id {item_id}. Remove duplicate items from your input "
            "and try again."
        )
        self.item_id = item_id


class ExpandedInputTooLarge(StreamFixError, ValueError):
    """The input, its item references resolved, is more than ``limit`` bytes of JSON: 400
    (``param`` ``input``, code ``input_too_large``)."""

    status = 400
    param = "input"
    code = "input_too_large"

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"input with its item references resolved is more than {limit} bytes of JSON; "
            f"at most {limit} are accepted"
        )
        self.limit = limit
