# SPDX-License-Identifier: Apache-2.0
"""Stored Responses (``previous_response_id``, ``item_reference``, ``GET``/``DELETE``) for
any server: an async interface over JSON values, an in-process backend and a Redis one.

``open_store(url)`` picks the backend: ``memory`` / ``memory://?capacity=N&max_bytes=N&ttl=S``
(the default), or ``redis://HOST:PORT/DB?prefix=P&ttl=S&timeout=S`` (``rediss://``,
``unix://``); without a URL, the ``TRTLLM_STREAM_FIX_STORE`` environment variable's.
No web framework here, and ``redis`` is imported only when a Redis store is opened.
Its errors are in :mod:`.errors` (hierarchy there), re-exported here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit

from ..core.config import STORE_ENV
from .base import DEFAULT_TTL_SECONDS, ResponseStore
from .errors import (
    DuplicateItem,
    ExpandedInputTooLarge,
    StoreError,
    StoreUnavailable,
    UnknownItemReference,
)
from .memory import MemoryStore

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "STORE_ENV",
    "DuplicateItem",
    "ExpandedInputTooLarge",
    "MemoryStore",
    "ResponseStore",
    "StoreError",
    "StoreUnavailable",
    "UnknownItemReference",
    "open_store",
]

_MEMORY_OPTIONS = {"capacity": int, "max_bytes": int, "ttl": float}


def open_store(url: str | None = None, environ: Mapping[str, str] = os.environ) -> ResponseStore:
    """The store ``url`` names (else ``$TRTLLM_STREAM_FIX_STORE``, else in-process);
    ValueError for a URL it cannot use, ImportError (``name="redis"``) without redis."""
    url = url or environ.get(STORE_ENV) or "memory"
    scheme = urlsplit(url).scheme or url
    if scheme == "memory":
        query = dict(parse_qsl(urlsplit(url).query))
        unknown = sorted(set(query) - set(_MEMORY_OPTIONS))
        if unknown:
            raise ValueError(f"store URL {url}: unknown option {unknown[0]!r}")
        try:
            options = {k: _MEMORY_OPTIONS[k](v) for k, v in query.items()}
            return MemoryStore(**options)
        except ValueError as exc:
            raise ValueError(f"store URL {url}: {exc}") from None
    from .redis import SCHEMES, RedisStore, redacted

    if scheme in SCHEMES:
        return RedisStore.from_url(url)
    raise ValueError(
        f"store URL {redacted(url)}: unknown scheme {scheme!r} (memory, redis, rediss, unix)"
    )
