# SPDX-License-Identifier: Apache-2.0
"""The Redis response store: state shared by every replica that points at one Redis.

Keys (``prefix`` default ``trtllm-stream-fix:``): ``{prefix}response:{id}`` (the response),
``{prefix}messages:{id}`` (its conversation), ``{prefix}item:{id}`` (each output item), JSON
values, each with the store's TTL (default 30 days). A put is one round trip: a Lua script
that sets every key of the record (atomic like MULTI/EXEC, at about half its cost per call in
the client), a read one command. Calls share a pool of ``max_connections`` connections
(default 64; a call waits up to ``timeout`` for a free one). Every call is bounded by
``timeout`` (connect and read, default 1 s) and retried once (a pooled connection a
restarted Redis closed): a Redis that is down or slow is :class:`StoreUnavailable` within
about two timeouts, never a hang.

Needs the ``redis`` package (the ``store`` extra), imported when a store is created.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .base import (
    DEFAULT_TTL_SECONDS,
    JSON,
    ResponseStore,
    StoreError,
    StoreUnavailable,
    decode,
    encode,
    output_items,
)

DEFAULT_PREFIX = "trtllm-stream-fix:"
DEFAULT_TIMEOUT_SECONDS = 1.0
DEFAULT_MAX_CONNECTIONS = 64
SCHEMES = ("redis", "rediss", "unix")
#: Sets ``KEYS[i]`` to ``ARGV[i + 1]``, each expiring after ``ARGV[1]`` seconds.
PUT_SCRIPT = """
for i = 1, #KEYS do
    redis.call('SET', KEYS[i], ARGV[i + 1], 'EX', ARGV[1])
end
return #KEYS
"""
INSTALL_HINT = "the Redis store needs the redis package: pip install 'trtllm-stream-fix[store]'"


def redacted(url: str) -> str:
    """``url`` without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + netloc))


class RedisStore(ResponseStore):
    """Records in Redis under ``prefix``, each expiring ``ttl`` seconds after its put."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl: int = DEFAULT_TTL_SECONDS,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        try:
            from redis import exceptions
            from redis.asyncio import BlockingConnectionPool, Redis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff
        except ImportError as exc:
            raise ImportError(INSTALL_HINT, name="redis") from exc
        if ttl < 1 or timeout <= 0 or max_connections < 1:
            raise ValueError("ttl, timeout and max_connections must be positive")
        self.name = redacted(url)
        self.prefix = prefix
        self.ttl = int(ttl)
        self._down = (exceptions.ConnectionError, exceptions.TimeoutError, OSError, TimeoutError)
        self._failed = exceptions.RedisError
        pool = BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=timeout,  # waiting for a free connection
            socket_connect_timeout=timeout,
            socket_timeout=timeout,
            retry=Retry(NoBackoff(), 1),
        )
        self._client = Redis(connection_pool=pool)
        self._put = self._client.register_script(PUT_SCRIPT)

    @classmethod
    def from_url(cls, url: str) -> RedisStore:
        """A store for ``redis://HOST:PORT/DB?prefix=P&ttl=SECONDS&timeout=SECONDS&
        max_connections=N`` (also ``rediss://`` and ``unix://``); other query parameters go
        to redis-py."""
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        options: dict[str, Any] = {}
        try:
            if "prefix" in query:
                options["prefix"] = query.pop("prefix")
            if "ttl" in query:
                options["ttl"] = int(query.pop("ttl"))
            if "timeout" in query:
                options["timeout"] = float(query.pop("timeout"))
            if "max_connections" in query:
                options["max_connections"] = int(query.pop("max_connections"))
        except ValueError as exc:
            raise ValueError(f"store URL {redacted(url)}: {exc}") from None
        return cls(urlunsplit(parts._replace(query=urlencode(query))), **options)

    def _key(self, kind: str, name: str) -> str:
        return f"{self.prefix}{kind}:{name}"

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except self._down as exc:
            raise StoreUnavailable(f"response store {self.name} is unavailable: {exc}") from None
        except self._failed as exc:
            raise StoreError(f"response store {self.name} failed: {exc}") from None

    async def put(self, response: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> None:
        response_id = response["id"]
        keys = [self._key("response", response_id), self._key("messages", response_id)]
        values = [encode(response), encode(messages)]
        for item_id, item in output_items(response):
            keys.append(self._key("item", item_id))
            values.append(encode(item))
        with self._errors():
            await self._put(keys=keys, args=[self.ttl, *values])

    async def get(self, response_id: str) -> JSON | None:
        with self._errors():
            raw = await self._client.get(self._key("response", response_id))
        return None if raw is None else decode(raw)

    async def history(self, response_id: str) -> list[JSON] | None:
        with self._errors():
            raw = await self._client.get(self._key("messages", response_id))
        return None if raw is None else decode(raw)

    async def items(self, item_ids: Sequence[str]) -> dict[str, JSON]:
        if not item_ids:
            return {}
        with self._errors():
            values = await self._client.mget([self._key("item", i) for i in item_ids])
        return {i: decode(raw) for i, raw in zip(item_ids, values) if raw is not None}

    async def delete(self, response_id: str) -> bool:
        key = self._key("response", response_id)
        with self._errors():
            raw = await self._client.get(key)
            if raw is None:
                return False
            items = [self._key("item", i) for i, _ in output_items(decode(raw))]
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(key)
                pipe.delete(self._key("messages", response_id), *items)
                removed, _ = await pipe.execute()
        return bool(removed)

    async def ping(self) -> None:
        with self._errors():
            await self._client.ping()

    async def close(self) -> None:
        await self._client.aclose()
