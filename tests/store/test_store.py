# SPDX-License-Identifier: Apache-2.0
"""The response store's contract, on both backends (in-process and a real redis-server):
put / get / history / items / delete over JSON values, bounds of the in-process store, TTL,
store URLs, and a Redis that is down or hung answered as :class:`StoreUnavailable` within
the timeout."""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import signal
import sys
import time

import pytest
from _stored import run_store as _run
from _stored import stored_messages as _messages
from _stored import stored_response as _response

from trtllm_stream_fix.store import (
    DEFAULT_TTL_SECONDS,
    STORE_ENV,
    MemoryStore,
    StoreError,
    StoreUnavailable,
    open_store,
)
from trtllm_stream_fix.store.base import decode, encode
from trtllm_stream_fix.testing.redis_server import RedisServer, free_port

_prefixes = itertools.count()


@pytest.fixture(params=["memory", "redis"])
def store_url(request):
    if request.param == "memory":
        return "memory"
    server = request.getfixturevalue("redis_server")
    return f"{server.url}?prefix=test{os.getpid()}-{next(_prefixes)}:"


def test_a_put_response_reads_back_with_its_messages_and_items(store_url):
    async def steps(store):
        await store.put(_response(1), _messages(1))
        await store.put(_response(2, "é 🌍 \u2028"), _messages(2))
        return (
            await store.get("resp_2"),
            await store.history("resp_1"),
            await store.items(["fc_1", "msg_2", "rs_nope", "fc_1"]),
            await store.get("resp_nope"),
            await store.history("resp_nope"),
        )

    response, history, items, missing, missing_history = _run(store_url, steps)
    assert response == _response(2, "é 🌍 \u2028")
    assert history == _messages(1)
    assert items == {
        "fc_1": _response(1)["output"][1],
        "msg_2": _response(2, "é 🌍 \u2028")["output"][2],
    }
    assert missing is None and missing_history is None


def test_delete_forgets_the_response_its_messages_and_its_items(store_url):
    async def steps(store):
        await store.put(_response(1), _messages(1))
        await store.put(_response(2), _messages(2))
        first = await store.delete("resp_1")
        again = await store.delete("resp_1")
        return (
            first,
            again,
            await store.get("resp_1"),
            await store.history("resp_1"),
            await store.items(["rs_1", "fc_1", "msg_1", "msg_2"]),
        )

    first, again, response, history, items = _run(store_url, steps)
    assert (first, again, response, history) == (True, False, None, None)
    assert list(items) == ["msg_2"]


def test_a_put_again_replaces_the_record(store_url):
    async def steps(store):
        await store.put(_response(1, "old"), _messages(1))
        await store.put(_response(1, "new"), [])
        return await store.get("resp_1"), await store.history("resp_1")

    response, history = _run(store_url, steps)
    assert response["output"][2]["content"] == ["new"] and history == []


def test_a_put_again_with_other_items_forgets_the_items_it_no_longer_holds(store_url):
    async def steps(store):
        await store.put(_response(1), _messages(1))
        fewer = _response(1, "new")
        fewer["output"] = fewer["output"][2:]
        await store.put(fewer, [])
        return await store.get("resp_1"), await store.items(["rs_1", "msg_1"])

    response, items = _run(store_url, steps)
    assert response["output"][0]["content"] == ["new"] and list(items) == ["msg_1"]


def test_the_memory_store_is_bounded_in_records_least_recently_used_first():
    store = MemoryStore(capacity=3)

    async def steps():
        for n in range(3):
            await store.put(_response(n), _messages(n))
        await store.get("resp_0")  # used: resp_1 is now the oldest
        await store.put(_response(3), _messages(3))
        return [await store.get(f"resp_{n}") is not None for n in range(4)]

    assert asyncio.run(steps()) == [True, False, True, True]
    assert len(store) == 3 and store.evicted == 1


def test_the_memory_store_is_bounded_in_bytes():
    sizing = MemoryStore()
    asyncio.run(sizing.put(_response(0), _messages(0)))
    one = sizing.bytes  # what holding one record costs: its JSON, its ids, the overheads
    store = MemoryStore(capacity=100, max_bytes=one * 2 + one // 2)

    async def steps():
        for n in range(5):
            await store.put(_response(n), _messages(n))
        return [await store.get(f"resp_{n}") is not None for n in range(5)]

    assert asyncio.run(steps()) == [False, False, False, True, True]
    assert store.bytes <= store.max_bytes and store.evicted == 3
    assert asyncio.run(store.items(["fc_0", "fc_4"])).keys() == {"fc_4"}


def test_a_record_larger_than_the_memory_store_is_a_store_error():
    store = MemoryStore(max_bytes=100)
    with pytest.raises(StoreError, match="exceeds max_bytes"):
        asyncio.run(store.put(_response(1, "x" * 200), []))
    assert len(store) == 0 and store.bytes == 0


def test_memory_records_expire_after_the_ttl():
    now = [1000.0]
    store = MemoryStore(ttl=60, clock=lambda: now[0])

    async def steps():
        await store.put(_response(1), _messages(1))
        now[0] += 59
        kept = await store.get("resp_1") is not None
        now[0] += 2
        return kept, await store.get("resp_1"), await store.items(["fc_1"]), len(store)

    assert asyncio.run(steps()) == (True, None, {}, 0)


def test_redis_records_carry_the_ttl_and_prefix(redis_server):
    """Layout v2: one hash per record, one pointer per output item naming its response."""
    import redis

    prefix = f"ttl{os.getpid()}:"
    _run(f"{redis_server.url}?prefix={prefix}&ttl=120", lambda s: s.put(_response(1), _messages(1)))
    client = redis.Redis(port=redis_server.port)
    keys = sorted(k.decode() for k in client.keys(f"{prefix}*"))
    pointers = [f"{prefix}v2:item:{name}" for name in ("fc_1", "msg_1", "rs_1")]
    assert keys == [*pointers, f"{prefix}v2:record:resp_1"]
    assert [client.get(k) for k in pointers] == [b"resp_1"] * 3
    record = {k.decode(): decode(v) for k, v in client.hgetall(f"{prefix}v2:record:resp_1").items()}
    assert record == {
        "response": _response(1),
        "messages": _messages(1),
        **{f"item:{item['id']}": item for item in _response(1)["output"]},
    }
    assert all(110 <= client.ttl(k) <= 120 for k in keys)
    client.close()


def test_a_full_redis_is_a_store_error_and_writes_nothing(redis_server):
    """A Redis at ``maxmemory`` with ``noeviction`` refuses the whole put: no key of the
    record is written (the put is one script, atomic), and the error says why."""
    import redis

    prefix = f"full{os.getpid()}:"
    client = redis.Redis(port=redis_server.port)
    used = client.info("memory")["used_memory"]
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", used + 1024)
    try:
        big = _response(1, text="x" * 200_000)
        with pytest.raises(StoreError, match="maxmemory") as caught:
            _run(f"{redis_server.url}?prefix={prefix}", lambda s: s.put(big, _messages(1)))
        assert not isinstance(caught.value, StoreUnavailable)
        assert client.keys(f"{prefix}*") == []
    finally:
        client.config_set("maxmemory", 0)
        client.close()


def test_a_put_loads_its_script_again_after_redis_forgot_it(redis_server):
    """A restarted Redis has no scripts: the put loads its script again (``NOSCRIPT``)."""
    import redis

    url = f"{redis_server.url}?prefix=flush{os.getpid()}:"
    client = redis.Redis(port=redis_server.port)

    async def steps(store):
        await store.put(_response(1), _messages(1))
        client.script_flush()
        await store.put(_response(2), _messages(2))
        return await store.get("resp_2"), await store.history("resp_2")

    try:
        response, history = _run(url, steps)
        assert response == _response(2) and history == _messages(2)
    finally:
        client.close()


def test_store_urls():
    memory = open_store("memory://?capacity=5&max_bytes=1000&ttl=9")
    assert isinstance(memory, MemoryStore)
    assert (memory.capacity, memory.max_bytes, memory.ttl) == (5, 1000, 9)
    assert isinstance(open_store(None, environ={}), MemoryStore)
    assert open_store(None, environ={STORE_ENV: "memory://?capacity=7"}).capacity == 7
    redis_store = open_store(
        "redis://:secret@10.0.0.1:6390/2?prefix=p:&ttl=60&timeout=0.5&max_connections=3"
    )
    assert (redis_store.prefix, redis_store.ttl) == ("p:", 60)
    assert redis_store._client.connection_pool.max_connections == 3
    assert "secret" not in redis_store.name and "10.0.0.1:6390/2" in redis_store.name
    assert open_store("redis://h").ttl == DEFAULT_TTL_SECONDS == 30 * 24 * 3600
    for bad, message in [
        ("memcached://h", "unknown scheme 'memcached'"),
        ("memory://?size=3", "unknown option 'size'"),
        ("memory://?capacity=0", "must be a positive whole number"),
        ("redis://h?ttl=soon", "ttl must be a positive whole number"),
    ]:
        with pytest.raises(ValueError, match=message):
            open_store(bad)


def test_more_concurrent_calls_than_connections_wait_for_one(redis_server):
    # A long timeout: the calls queue for the two connections on a loaded host too.
    url = f"{redis_server.url}?prefix=pool{os.getpid()}:&max_connections=2&timeout=30"

    async def steps(store):
        await asyncio.gather(*(store.put(_response(n), _messages(n)) for n in range(200)))
        found = await asyncio.gather(*(store.get(f"resp_{n}") for n in range(200)))
        pool = store._client.connection_pool
        return [r["id"] for r in found], len(pool._available_connections) + len(
            pool._in_use_connections
        )

    ids, connections = _run(url, steps)
    assert ids == [f"resp_{n}" for n in range(200)] and connections <= 2


def test_json_beyond_orjson_round_trips():
    value = {"big": 2**70, "lone": "\ud800", "text": "ok"}
    assert decode(encode(value)) == value


def test_a_redis_that_is_down_is_store_unavailable_at_once():
    url = f"redis://127.0.0.1:{free_port()}/0"

    async def steps(store):
        started = time.monotonic()
        failures = []
        for call in (store.ping(), store.get("r"), store.put(_response(1), []), store.items(["i"])):
            with pytest.raises(StoreUnavailable) as caught:
                await call
            failures.append(str(caught.value))
        return time.monotonic() - started, failures

    elapsed, failures = _run(url, steps)
    assert elapsed < 2
    assert all(f.startswith(f"response store {url} is unavailable: ") for f in failures)


def test_a_hung_redis_is_store_unavailable_within_the_timeout(tmp_path):
    with RedisServer(tmp_path) as server:
        os.kill(server._process.pid, signal.SIGSTOP)
        try:

            async def steps(store):
                started = time.monotonic()
                with pytest.raises(StoreUnavailable, match="is unavailable: Timeout"):
                    await store.get("r")
                return time.monotonic() - started

            elapsed = _run(f"{server.url}?timeout=0.2", steps)
        finally:
            os.kill(server._process.pid, signal.SIGCONT)
    assert 0.2 <= elapsed < 1.5


def test_serve_with_a_store_it_cannot_use_is_a_one_line_error(monkeypatch, capsys):
    from trtllm_stream_fix import cli

    assert cli.main(["serve", "--store", "memcached://h:1"]) == 2
    assert "serve: store URL memcached://h:1: unknown scheme 'memcached'" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "redis", None)  # the store extra is not installed
    assert cli.main(["serve", "--store", "redis://h:1"]) == 2
    err = capsys.readouterr().err
    assert "needs redis" in err and "pip install 'trtllm-stream-fix[store]'" in err
    assert "Traceback" not in err


def test_item_references_are_replaced_by_the_stored_items_in_one_call():
    from trtllm_stream_fix.store.references import UnknownItemReference, resolve_item_references

    class Counting(MemoryStore):
        calls = 0

        async def items(self, item_ids):
            Counting.calls += 1
            return await super().items(item_ids)

    store = Counting()
    response = _response(1)
    stored = response["output"][0]
    user = {"role": "user", "content": "again"}
    reference = {"type": "item_reference", "id": stored["id"]}

    async def run():
        await store.put(response, [])
        resolved = await resolve_item_references(store, [reference, user, reference])
        plain = [user]
        with pytest.raises(UnknownItemReference) as unknown:
            await resolve_item_references(store, [user, {"type": "item_reference", "id": "x"}])
        return resolved, await resolve_item_references(store, plain) is plain, unknown.value

    resolved, untouched, unknown = asyncio.run(run())
    assert resolved == [stored, user, stored] and untouched
    assert Counting.calls == 2  # one per request that references anything
    assert str(unknown).startswith("Item with id 'x' not found. Items are not persisted")
    assert (unknown.status, unknown.param, unknown.item_id) == (400, "input", "x")


@pytest.mark.parametrize(
    "reference",
    [
        {"type": "item_reference"},
        {"type": "item_reference", "id": ["msg_1"]},
        {"type": "item_reference", "id": None},
        {"type": "item_reference", "id": ""},
    ],
)
def test_a_malformed_item_reference_is_the_400_naming_it(reference):
    """A reference without a string id (what a hostile client sends; upstream's request path
    does not check it before the plugin resolves it) is OpenAI's 400, not a KeyError."""
    from trtllm_stream_fix.store.references import UnknownItemReference, resolve_item_references

    with pytest.raises(UnknownItemReference, match="An item_reference needs a string `id`") as err:
        asyncio.run(resolve_item_references(MemoryStore(), [reference]))
    assert (err.value.status, err.value.param) == (400, "input")


def _typical(n: int) -> tuple[dict, list[dict]]:
    """A tool turn as the server stores it: reasoning, a call, an answer (about 7 KB)."""
    text = ("The weather in Paris is sunny with a light breeze. " * 20)[: 900 + n % 200]
    response = _response(n, text)
    response["output"][0]["content"] = [{"type": "reasoning_text", "text": text[:600]}]
    response.update(model="gpt-oss-120b", created_at=1_700_000_000 + n, tools=[], top_p=1.0)
    response["usage"] = {"input_tokens": 100, "output_tokens": 300, "total_tokens": 400}
    user = {"type": "message", "role": "user", "content": f"question {n} {text[:300]}"}
    return response, [user, *response["output"]]


def test_the_memory_stores_max_bytes_bounds_the_memory_it_holds():
    """5,000 typical records through a store bounded at 8 MiB: the memory the process holds
    (every Python allocation, traced) grows by at most 1.5× ``max_bytes``, and what the store
    accounts is what it holds (not an overcount that keeps it nearly empty)."""
    import gc
    import tracemalloc

    records = [_typical(n) for n in range(5000)]
    store = MemoryStore(max_bytes=8 * 2**20)

    async def steps():
        for response, messages in records:
            await store.put(response, messages)

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        asyncio.run(steps())
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert store.evicted > 0 and store.bytes <= store.max_bytes
    assert grown <= 1.5 * store.max_bytes, (
        f"{len(store)} records accounted as {store.bytes} bytes hold {grown} bytes "
        f"({grown / store.bytes:.2f}×)"
    )
    assert store.bytes <= 1.2 * grown, f"accounted {store.bytes}, held {grown}"


_BAD_NUMBERS = [
    ("memory://?ttl=nan", "ttl"),
    ("memory://?ttl=inf", "ttl"),
    ("memory://?ttl=-inf", "ttl"),
    ("memory://?ttl=-1", "ttl"),
    ("memory://?ttl=1e400", "ttl"),
    ("memory://?capacity=-3", "capacity"),
    ("memory://?max_bytes=0", "max_bytes"),
    ("redis://h?timeout=inf", "timeout"),
    ("redis://h?timeout=nan", "timeout"),
    ("redis://h?timeout=-inf", "timeout"),
    ("redis://h?timeout=-1", "timeout"),
    ("redis://h?timeout=0", "timeout"),
    ("redis://h?ttl=-5", "ttl"),
    ("redis://h?ttl=nan", "ttl"),
    ("redis://h?max_connections=0", "max_connections"),
    ("redis://h?socket_timeout=inf", "socket_timeout"),
    ("redis://h?socket_connect_timeout=nan", "socket_connect_timeout"),
    ("redis://h?health_check_interval=-1", "health_check_interval"),
    ("redis://h?db=-1", "db"),
]


@pytest.mark.parametrize(("url", "option"), _BAD_NUMBERS)
def test_a_store_url_number_that_is_not_finite_and_in_range_is_refused(url, option):
    with pytest.raises(ValueError, match=f"store URL {re.escape(url)}: {option}") as caught:
        open_store(url)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("url", ["memory://?ttl=nan", "redis://127.0.0.1:1/0?timeout=inf"])
def test_serve_refuses_a_store_url_number_out_of_range_with_exit_2(url):
    import subprocess

    try:
        done = subprocess.run(
            [sys.executable, "-m", "trtllm_stream_fix.cli", "serve", "--port", "0", "--store", url],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"serve --store {url} started serving")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"trtllm-stream-fix serve: store URL {url}: "), done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1
