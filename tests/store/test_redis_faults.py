# SPDX-License-Identifier: Apache-2.0
"""The Redis store under Redis's own faults, each on a real ``redis-server`` of its own: a
Redis paused during a put (the write reported failed never lands when Redis resumes, on the
cached script and on the one loaded again, at the store and through a streamed turn),
``volatile-lru`` eviction of a full Redis (every record kept or lost whole: readable,
continuable and its items resolvable together; DELETE leaves nothing readable), and
DELETE on a Redis full under ``noeviction`` (allowed: it frees space).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from _stored import run_store as _run
from _stored import stored_messages as _messages
from _stored import stored_response as _response

from trtllm_stream_fix.store import StoreUnavailable, open_store
from trtllm_stream_fix.testing.redis_server import RedisServer, missing

PREFIX = "faults:"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    reason = missing()
    if reason:
        pytest.skip(reason)
    with RedisServer(tmp_path / "redis") as redis_server:
        yield redis_server


@contextmanager
def _paused(server: RedisServer) -> Iterator[None]:
    """Redis stopped (SIGSTOP): connections are accepted, commands queue unanswered."""
    assert server._process is not None
    os.kill(server._process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server._process.pid, signal.SIGCONT)


def _raw(server: RedisServer) -> Any:
    import redis

    return redis.Redis(port=server.port)


def _item_ids(n: int) -> list[str]:
    return [f"rs_{n}", f"fc_{n}", f"msg_{n}"]


def _settled(server: RedisServer) -> None:
    """Wait until a resumed Redis has run every command queued while it was stopped (it
    answers a new connection's PING after serving the queued ones it read first)."""
    time.sleep(0.3)
    client = _raw(server)
    client.ping()
    client.close()


async def _stored(store: Any, n: int) -> tuple[Any, Any, Any]:
    return (
        await store.get(f"resp_{n}"),
        await store.history(f"resp_{n}"),
        await store.items(_item_ids(n)),
    )


@pytest.mark.parametrize("script_cached", [True, False])
def test_a_put_reported_failed_never_lands_when_a_paused_redis_resumes(server, script_cached):
    """Redis stopped while a put is on its way: the put fails (timeout, retried once); the
    queued writes reach Redis when it resumes, and are refused there (past their deadline),
    whether the put script was cached or is loaded again (``NOSCRIPT``)."""
    url = f"{server.url}?prefix={PREFIX}&timeout=0.3"

    async def steps(store):
        await store.put(_response(0), _messages(0))  # connected, script cached
        if not script_cached:
            _raw(server).script_flush()
        with _paused(server):
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="is unavailable: Timeout") as caught:
                await store.put(_response(1), _messages(1))
            elapsed = time.monotonic() - started
        _settled(server)
        return elapsed, str(caught.value), await _stored(store, 1), await _stored(store, 0)

    elapsed, message, late, earlier = _run(url, steps)
    assert elapsed < 2, message
    assert late == (None, None, {}), "the put reported failed was stored when Redis resumed"
    assert earlier[0] == _response(0)
    client = _raw(server)
    assert sorted(k.decode() for k in client.keys(f"{PREFIX}*") if b"_1" in k) == []
    client.close()


def test_a_put_that_reaches_redis_after_its_deadline_is_refused_unavailable(server):
    """The deadline is checked in Redis, on its clock: a put whose deadline has passed when
    Redis runs it (what a put queued behind a stalled Redis is) writes nothing, on the cached
    script and after ``SCRIPT FLUSH`` alike, and is :class:`StoreUnavailable`."""
    url = f"{server.url}?prefix={PREFIX}"

    async def steps(store):
        await store.put(_response(0), _messages(0))
        store._clock.offset_ms -= 60_000  # every deadline this store computes is past,
        store._clock.read_at = math.inf  # and Redis's clock is not read again
        refused = []
        for n in (1, 2):
            if n == 2:
                _raw(server).script_flush()
            with pytest.raises(StoreUnavailable, match="deadline") as caught:
                await store.put(_response(n), _messages(n))
            refused.append(str(caught.value))
        return refused, await _stored(store, 1), await _stored(store, 2)

    refused, one, two = _run(url, steps)
    assert one == two == (None, None, {})
    assert all("nothing was stored" in message for message in refused), refused


def test_a_streamed_turn_failed_by_a_paused_redis_is_not_stored_when_it_resumes(server):
    """Through the simulated server (its put script cached by an earlier turn): Redis stops
    after the turn started; the stream ends
    with ``error`` + ``response.failed`` (store unavailable); once Redis resumes, that
    response is a 404 and cannot be continued."""
    from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread

    store = open_store(f"{server.url}?prefix={PREFIX}&timeout=0.3")
    engine = EngineConfig(stream_interval=4, tokens_per_second=100)  # a turn of ~1.3 s
    with serve_in_thread(create_app(engine, store=store)) as url:
        body = {"model": "gpt-oss-120b", "input": "hi", "stream": True}
        warm = httpx.post(f"{url}/v1/responses", json={**body, "stream": False}, timeout=30)
        assert warm.status_code == 200  # stored: Redis holds the put script now
        events = []
        with httpx.stream("POST", f"{url}/v1/responses", json=body, timeout=30) as reply:
            lines = reply.iter_lines()
            for line in lines:
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
                    break  # response.created: the store was checked, the turn runs
            with _paused(server):
                events += [json.loads(x[6:]) for x in lines if x.startswith("data: ")]
        _settled(server)
        response_id = events[0]["response"]["id"]
        fetched = httpx.get(f"{url}/v1/responses/{response_id}", timeout=10)
        continued = httpx.post(
            f"{url}/v1/responses",
            json={"model": "gpt-oss-120b", "input": "and?", "previous_response_id": response_id},
            timeout=30,
        )
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert "is unavailable" in events[-2]["message"]
    assert fetched.status_code == 404, fetched.text
    assert continued.status_code == 400, continued.text
    assert continued.json()["error"]["code"] == "previous_response_not_found"


def test_volatile_lru_eviction_keeps_or_loses_each_record_whole(server):
    """A small Redis under ``volatile-lru`` filled far past ``maxmemory``: for every record,
    GET answers ⇔ it can be continued ⇔ each of its items resolves, and whatever DELETE
    answers, nothing of the record is readable afterwards."""
    count = 1500
    client = _raw(server)
    client.config_set("maxmemory-policy", "volatile-lru")
    client.config_set("maxmemory", client.info("memory")["used_memory"] + 2 * 2**20)
    url = f"{server.url}?prefix={PREFIX}&max_connections=8&timeout=10"
    padding = "x" * 1500

    async def steps(store):
        for start in range(0, count, 50):
            await asyncio.gather(
                *(
                    store.put(_response(n, padding), _messages(n, padding))
                    for n in range(start, start + 50)
                )
            )
        client.config_set("maxmemory", 0)  # filled: no more evictions while it is read
        states = {}
        for n in range(count):
            response, history, items = await _stored(store, n)
            states[n] = (response is not None, history is not None, len(items))
        deleted = [await store.delete(f"resp_{n}") for n in range(count)]
        after = [await _stored(store, n) for n in range(count)]
        return states, deleted, after

    try:
        states, deleted, after = _run(url, steps)
        evicted = client.info("stats")["evicted_keys"]
        # What DELETE cannot reach (an item's pointer whose record was evicted) holds no
        # content: a response id, unreadable without its record, expiring with the TTL.
        left = {k: client.get(k) for k in client.keys(f"{PREFIX}*")}
    finally:
        client.close()
    kept = [n for n, state in states.items() if state == (True, True, 3)]
    partial = {n: s for n, s in states.items() if s not in [(True, True, 3), (False, False, 0)]}
    assert evicted > 0 and 0 < len(kept) < count
    shown = dict(list(partial.items())[:5])
    assert partial == {}, f"{len(partial)} of {count} records partly evicted, e.g. {shown}"
    assert [n for n in range(count) if deleted[n]] == kept
    assert all(state == (None, None, {}) for state in after)
    assert all(re.fullmatch(rb"resp_\d+", value or b"") for value in left.values()), left


def test_delete_frees_space_on_a_redis_full_under_noeviction(server):
    """``noeviction`` and ``maxmemory`` reached: a put is refused (OOM), reads and DELETE
    are served (a DELETE is how an operator frees space)."""
    client = _raw(server)
    url = f"{server.url}?prefix={PREFIX}"

    async def steps(store):
        await store.put(_response(1), _messages(1))
        await store.put(_response(2), _messages(2))
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", client.info("memory")["used_memory"] - 1024)
        try:
            read = await store.get("resp_1")
            deleted = await store.delete("resp_1")
            again = await store.delete("resp_1")
            left = await _stored(store, 1)
            other = await store.get("resp_2")
        finally:
            client.config_set("maxmemory", 0)
        return read, deleted, again, left, other

    try:
        read, deleted, again, left, other = _run(url, steps)
        keys = sorted(k.decode() for k in client.keys(f"{PREFIX}*") if b"_1" in k)
    finally:
        client.close()
    assert read == _response(1)
    assert (deleted, again, left, keys) == (True, False, (None, None, {}), [])
    assert other == _response(2)
