# SPDX-License-Identifier: Apache-2.0
"""The Redis response store: state shared by every replica that points at one Redis.

Layout (version 2, under ``prefix``, default ``trtllm-stream-fix:``), every key with the
store's TTL (default 30 days):

- ``{prefix}v2:record:{response id}``: the record, one hash: ``response`` (the Response's
  JSON), ``messages`` (its conversation's JSON), ``item:{id}`` (each output item's JSON);
- ``{prefix}v2:item:{item id}``: the id of the response holding that item (no content).

A record is *whole* when its hash and each of its items' pointers (naming it) exist. Each
read checks that inside Redis and answers a record that is not whole as absent, so a record
Redis evicts in part (``volatile-lru`` evicts keys, not records) is lost as a whole: never
readable without being continuable, never an item resolvable without its response. DELETE
removes what is left of a record, whole or not (a pointer whose hash went first cannot be
found from the response id: it holds no content, resolves nothing and expires with the TTL).
Item ids are unique to a response (OpenAI's and upstream's are): a record stored with an
item id another record holds takes the pointer over, and the other record is no longer whole.

Each call is one Lua script, one round trip (reads included; legacy scripts without flags,
so Redis 6.2 and 7 run them; not Redis Cluster). A put sets the whole record atomically and
is refused (nothing written) when Redis runs it after its deadline: a put the client gave up
on (a stalled Redis, a partitioned network) never lands later. The deadline is on Redis's
clock: the store reads Redis's ``TIME`` every ``CLOCK_SECONDS`` (one extra round trip),
so no clock agreement between hosts is needed; the deadline is the put's start plus
``timeout`` less the reading's uncertainty (half its round trip) and a tenth of ``timeout``
for drift (a Redis clock stepped backward since the last reading by more than that would
let a late put land). DELETE only reads and unlinks, which Redis allows at ``maxmemory``
under ``noeviction``: a full Redis can be freed. Calls share a pool of ``max_connections``
connections (default 64; a call waits up to ``timeout`` for a free one). Every call is
bounded by ``timeout`` (connect and read, default 1 s) and retried once (a pooled
connection a restarted Redis closed): a Redis that is down or slow is
:class:`StoreUnavailable` within about two timeouts, never a hang.

Needs the ``redis`` package (the ``store`` extra), imported when a store is created.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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
from .errors import StoreError, StoreUnavailable

DEFAULT_PREFIX = "trtllm-stream-fix:"
#: The layout's version, after the prefix: keys of another layout are never read.
LAYOUT = "v2:"
DEFAULT_TIMEOUT_SECONDS = 1.0
MAX_TIMEOUT_SECONDS = 600.0
DEFAULT_MAX_CONNECTIONS = 64
#: How often the store reads Redis's clock (``TIME``) for its puts' deadlines.
CLOCK_SECONDS = 10.0
SCHEMES = ("redis", "rediss", "unix")
#: redis-py's own numeric URL options: ``(low, high)`` of the whole numbers it takes; the
#: socket timeouts are the store's ``timeout`` (its puts' deadlines depend on them).
_REDIS_WHOLE_OPTIONS = {"db": (0, 2**31), "health_check_interval": (0, 2**31)}
_REDIS_SOCKET_OPTIONS = ("socket_timeout", "socket_connect_timeout")

#: ``whole(layout, id)``: the record's hash fields when the record is whole, else nil.
_WHOLE = """
local function whole(layout, id)
    local fields = redis.call('HKEYS', layout .. 'record:' .. id)
    if #fields == 0 then return nil end
    for _, field in ipairs(fields) do
        if string.sub(field, 1, 5) == 'item:'
                and redis.call('GET', layout .. 'item:' .. string.sub(field, 6)) ~= id then
            return nil
        end
    end
    return fields
end
"""
#: KEYS: the record; ARGV: layout, response id, field. The field of a whole record, or nil.
READ_SCRIPT = (
    _WHOLE
    + """
if not whole(ARGV[1], ARGV[2]) then return false end
return redis.call('HGET', KEYS[1], ARGV[3])
"""
)
#: ARGV: layout, item ids. Each item of a whole record, or nil, in order.
ITEMS_SCRIPT = (
    _WHOLE
    + """
local found, owners = {}, {}
for i = 2, #ARGV do
    local owner = redis.call('GET', ARGV[1] .. 'item:' .. ARGV[i])
    local value = false
    if owner then
        if owners[owner] == nil then owners[owner] = whole(ARGV[1], owner) ~= nil end
        if owners[owner] then
            value = redis.call('HGET', ARGV[1] .. 'record:' .. owner, 'item:' .. ARGV[i])
        end
    end
    found[#found + 1] = value
end
return found
"""
)
#: KEYS: the record, then each item's pointer; ARGV: layout, response id, ttl, deadline (ms
#: on Redis's clock), response, messages, then each item's id and JSON. The first write
#: is the HSET, where a full Redis (``noeviction``) refuses the script before it writes.
PUT_SCRIPT = """
local now = redis.call('TIME')
if tonumber(now[1]) * 1000 + tonumber(now[2]) / 1000 >= tonumber(ARGV[4]) then
    return redis.error_reply('DEADLINE the write reached Redis after its deadline')
end
local old = redis.call('HKEYS', KEYS[1])
local fields, new = {'response', ARGV[5], 'messages', ARGV[6]}, {}
for i = 7, #ARGV, 2 do
    local field = 'item:' .. ARGV[i]
    new[field] = true
    fields[#fields + 1] = field
    fields[#fields + 1] = ARGV[i + 1]
end
for i = 1, #fields, 200 do
    redis.call('HSET', KEYS[1], unpack(fields, i, math.min(i + 199, #fields)))
end
for _, field in ipairs(old) do
    if string.sub(field, 1, 5) == 'item:' and not new[field] then
        redis.call('HDEL', KEYS[1], field)
        local pointer = ARGV[1] .. 'item:' .. string.sub(field, 6)
        if redis.call('GET', pointer) == ARGV[2] then redis.call('DEL', pointer) end
    end
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
for i = 2, #KEYS do
    redis.call('SET', KEYS[i], ARGV[2], 'EX', ARGV[3])
end
return 1
"""
#: KEYS: the record; ARGV: layout, response id. Unlinks the record and the pointers naming
#: it (reads and UNLINK only: allowed on a full Redis); 1 if the record was whole.
DELETE_SCRIPT = """
local fields = redis.call('HKEYS', KEYS[1])
local complete = #fields > 0
for _, field in ipairs(fields) do
    if string.sub(field, 1, 5) == 'item:' then
        local pointer = ARGV[1] .. 'item:' .. string.sub(field, 6)
        if redis.call('GET', pointer) == ARGV[2] then
            redis.call('UNLINK', pointer)
        else
            complete = false
        end
    end
end
redis.call('UNLINK', KEYS[1])
if complete then return 1 end
return 0
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


@dataclass
class RedisClock:
    """Redis's clock seen from this process: Redis's ``TIME`` in ms is ``time.monotonic()``
    in ms plus ``offset_ms``, within ``error_ms``, as read at ``read_at`` (monotonic)."""

    offset_ms: float = 0.0
    error_ms: float = math.inf
    read_at: float = -math.inf


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
        if not (
            1 <= ttl <= MAX_TTL_SECONDS
            and 0 < timeout <= MAX_TIMEOUT_SECONDS
            and 1 <= max_connections
        ):
            raise ValueError(
                f"ttl ({ttl}), timeout ({timeout}) and max_connections ({max_connections}) "
                f"must be positive (ttl at most {MAX_TTL_SECONDS}, timeout {MAX_TIMEOUT_SECONDS})"
            )
        self.name = redacted(url)
        self.prefix = prefix
        self.ttl = int(ttl)
        self.timeout = float(timeout)
        self._layout = prefix + LAYOUT
        self._clock = RedisClock()
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
        self._read = self._client.register_script(READ_SCRIPT)
        self._items = self._client.register_script(ITEMS_SCRIPT)
        self._delete = self._client.register_script(DELETE_SCRIPT)

    @classmethod
    def from_url(cls, url: str) -> RedisStore:
        """A store for ``redis://HOST:PORT/DB?prefix=P&ttl=SECONDS&timeout=SECONDS&
        max_connections=N`` (also ``rediss://`` and ``unix://``); other query parameters go
        to redis-py (its numbers checked here, its socket timeouts refused: ``timeout``)."""
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        given: dict[str, Any] = {}
        try:
            if "prefix" in query:
                given["prefix"] = query.pop("prefix")
            if "ttl" in query:
                given["ttl"] = options.whole("ttl", query.pop("ttl"), low=1, high=MAX_TTL_SECONDS)
            if "timeout" in query:
                raw = query.pop("timeout")
                given["timeout"] = options.seconds("timeout", raw, high=MAX_TIMEOUT_SECONDS)
            if "max_connections" in query:
                raw = query.pop("max_connections")
                given["max_connections"] = options.whole("max_connections", raw, low=1, high=2**16)
            for name in _REDIS_SOCKET_OPTIONS:
                if name in query:
                    raise ValueError(
                        f"{name} is not taken, timeout=SECONDS sets it: {query[name]!r}"
                    )
            for name, (low, high) in _REDIS_WHOLE_OPTIONS.items():
                if name in query:
                    options.whole(name, query[name], low=low, high=high)
        except ValueError as exc:
            raise ValueError(f"store URL {redacted(url)}: {exc}") from None
        return cls(urlunsplit(parts._replace(query=urlencode(query))), **given)

    def _key(self, kind: str, name: str) -> str:
        return f"{self._layout}{kind}:{name}"

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except self._down as exc:
            raise StoreUnavailable(f"response store {self.name} is unavailable: {exc}") from None
        except self._failed as exc:
            if str(exc).startswith("DEADLINE "):
                raise StoreUnavailable(
                    f"response store {self.name} is unavailable: the write reached Redis "
                    "after its deadline (Redis stalled or slow); nothing was stored"
                ) from None
            raise StoreError(f"response store {self.name} failed: {exc}") from None

    async def _deadline_ms(self) -> float:
        """The latest moment, on Redis's clock, a put starting now may be written: before
        the client can give up on it (``timeout`` after sending it, at the earliest)."""
        clock = self._clock
        if time.monotonic() - clock.read_at > CLOCK_SECONDS:
            before = time.monotonic()
            seconds, micros = await self._client.time()
            after = time.monotonic()
            clock.offset_ms = seconds * 1e3 + micros / 1e3 - (before + after) * 500
            clock.error_ms = (after - before) * 500
            # A slow reading is used once (its error makes the deadline early), not kept.
            clock.read_at = after if clock.error_ms <= self.timeout * 250 else -math.inf
        margin_ms = clock.error_ms + self.timeout * 100  # a tenth of the timeout: drift
        return time.monotonic() * 1e3 + clock.offset_ms + self.timeout * 1e3 - margin_ms

    async def put(self, response: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> None:
        response_id = response["id"]
        keys = [self._key("record", response_id)]
        items: list[Any] = []
        for item_id, item in output_items(response):
            keys.append(self._key("item", item_id))
            items += (item_id, encode(item))
        with self._errors():
            deadline = await self._deadline_ms()
            args = [self._layout, response_id, self.ttl, f"{deadline:.3f}"]
            await self._put(keys=keys, args=[*args, encode(response), encode(messages), *items])

    async def _field(self, response_id: str, field: str) -> Any:
        key = self._key("record", response_id)
        with self._errors():
            raw = await self._read(keys=[key], args=[self._layout, response_id, field])
        return None if raw is None else decode(raw)

    async def get(self, response_id: str) -> JSON | None:
        found: JSON | None = await self._field(response_id, "response")
        return found

    async def history(self, response_id: str) -> list[JSON] | None:
        found: list[JSON] | None = await self._field(response_id, "messages")
        return found

    async def items(self, item_ids: Sequence[str]) -> dict[str, JSON]:
        if not item_ids:
            return {}
        with self._errors():
            values = await self._items(args=[self._layout, *item_ids])
        return {i: decode(raw) for i, raw in zip(item_ids, values) if raw is not None}

    async def delete(self, response_id: str) -> bool:
        key = self._key("record", response_id)
        with self._errors():
            return bool(await self._delete(keys=[key], args=[self._layout, response_id]))

    async def ping(self) -> None:
        with self._errors():
            await self._client.ping()

    async def close(self) -> None:
        await self._client.aclose()
