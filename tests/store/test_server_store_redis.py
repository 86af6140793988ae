# SPDX-License-Identifier: Apache-2.0
"""Two simulated-server replicas sharing one real ``redis-server`` (the ``redis_server``
fixture: skipped without the binary or the ``redis`` package), through the OpenAI Python SDK:
a tool-calling agent conversation alternating replicas (``previous_response_id``,
``item_reference``, ``GET``, ``DELETE``), and a Redis killed mid-conversation (503s, the
server alive, ``store: false`` served) then restarted with its append-only file (the turns
completed before the kill are there again); two ``trtllm-stream-fix serve`` processes given
one Redis by ``--store`` and by ``TRTLLM_STREAM_FIX_STORE``.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import openai
import pytest
from _sdk_turns import MODEL, QUESTION, WEATHER, answer_call, function_call, items, streamed, texts
from _sdk_turns import client as sdk_client

from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
from trtllm_stream_fix.store import open_store
from trtllm_stream_fix.testing.redis_server import RedisServer, missing

_prefixes = itertools.count()


@contextmanager
def _replicas(store_url: str, count: int) -> Iterator[list[str]]:
    """``count`` simulated servers, each with its own client of the store at ``store_url``."""
    with ExitStack() as stack:
        yield [
            stack.enter_context(
                serve_in_thread(
                    create_app(EngineConfig(stream_interval=20), store=open_store(store_url))
                )
            )
            for _ in range(count)
        ]


@pytest.fixture(scope="module")
def replicas(redis_server):
    prefix = f"replicas{os.getpid()}-{next(_prefixes)}:"
    with _replicas(f"{redis_server.url}?prefix={prefix}", 2) as urls:
        yield urls


def test_an_agent_conversation_alternating_replicas(replicas):
    a, b = (sdk_client(url) for url in replicas)
    # Turn 1 on A: the model calls the tool.
    first = streamed(a, input=QUESTION, tools=[WEATHER], reasoning={"effort": "low"})
    call = function_call(first)
    # Turn 2 on B continues turn 1 by previous_response_id.
    second = answer_call(b, call, "sunny", first.id)
    assert any("get_weather returned sunny" in t for t in texts(second))
    # Turn 3 on A, as the Vercel AI SDK sends a tool loop's step 2: B's answer and A's items
    # by reference, no previous_response_id.
    third = streamed(
        a,
        input=[
            {"role": "user", "content": QUESTION},
            *({"type": "item_reference", "id": item.id} for item in first.output),
            {"type": "function_call_output", "call_id": call.call_id, "output": "windy"},
            {"type": "item_reference", "id": second.output[-1].id},
            {"role": "user", "content": "And tomorrow?"},
        ],
        tools=[WEATHER],
    )
    assert third.status == "completed"
    # Turn 4 on B continues turn 3, whose conversation holds turn 1's call.
    fourth = answer_call(b, call, "rain", third.id)
    assert any("get_weather returned rain" in t for t in texts(fourth))
    # Every replica reads every turn; a delete on one is seen by the other.
    for response, reader in [(first, b), (second, a), (third, b), (fourth, a)]:
        assert items(reader.responses.retrieve(response.id)) == items(response)
    a.responses.delete(second.id)
    with pytest.raises(openai.NotFoundError):
        b.responses.retrieve(second.id)
    with pytest.raises(openai.BadRequestError) as caught:
        b.responses.create(model=MODEL, input="more?", previous_response_id=second.id)
    assert caught.value.code == "previous_response_not_found"
    with pytest.raises(openai.BadRequestError, match=second.output[-1].id):
        a.responses.create(
            model=MODEL, input=[{"type": "item_reference", "id": second.output[-1].id}]
        )


def _store_error(call: Any) -> dict[str, Any]:
    started = time.monotonic()
    with pytest.raises(openai.InternalServerError) as caught:
        call()
    assert time.monotonic() - started < 5  # bounded by the store's timeout, no hang
    assert caught.value.status_code == 503
    return caught.value.body


def test_redis_killed_mid_conversation_then_restarted_with_its_append_only_file(tmp_path):
    reason = missing()
    if reason:
        pytest.skip(reason)
    with RedisServer(tmp_path / "redis", persistent=True) as redis_server:
        store_url = f"{redis_server.url}?timeout=0.5"
        with _replicas(store_url, 1) as (url,):
            client = sdk_client(url)
            first = streamed(client, input=QUESTION, tools=[WEATHER])
            second = answer_call(client, function_call(first), "sunny", first.id)
            seen = {r.id: r for r in (first, second)}

            redis_server.kill()
            errors = [
                _store_error(
                    lambda: client.responses.create(
                        model=MODEL, input="and tomorrow?", previous_response_id=second.id
                    )
                ),
                _store_error(lambda: streamed(client, input="a new conversation")),
                _store_error(lambda: client.responses.retrieve(first.id)),
                _store_error(lambda: client.responses.delete(first.id)),
            ]
            for error in errors:
                assert error["type"] == "server_error" and error["code"] == "store_unavailable"
                assert error["message"].startswith(
                    f"response store {redis_server.url} is unavailable"
                )
            # The server is alive: health, and turns that need no store.
            assert httpx.get(f"{url}/health", timeout=10).json()["status"] == "ok"
            unstored = client.responses.create(model=MODEL, input="hi", store=False)
            assert unstored.status == "completed"

            redis_server.start()
            for response_id, response in seen.items():
                assert items(client.responses.retrieve(response_id)) == items(response)
            third = client.responses.create(
                model=MODEL, input="and tomorrow?", previous_response_id=second.id
            )
            assert third.status == "completed"


@contextmanager
def _serving(*commands: tuple[list[str], dict[str, str]]) -> Iterator[list[tuple[str, str]]]:
    """``trtllm-stream-fix serve --port 0 ARGS`` with ``ENV`` for each ``(ARGS, ENV)``, all
    started at once: (base URL, banner) of each."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "trtllm_stream_fix.cli", "serve", "--port", "0", *args],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        )
        for args, env in commands
    ]
    try:
        served = []
        for proc in procs:
            banner = proc.stderr.readline()
            match = re.search(r"on (http://127\.0\.0\.1:\d+)", banner)
            assert match, banner
            served.append((match.group(1), banner))
        yield served
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
            proc.stderr.close()


@pytest.mark.slow  # two server processes start (seconds each)
def test_two_serve_replicas_share_one_redis_by_flag_and_by_environment(redis_server):
    store_url = f"{redis_server.url}?prefix=serve{os.getpid()}-{next(_prefixes)}:"
    environment = {"TRTLLM_STREAM_FIX_STORE": store_url}
    with _serving((["--store", store_url], {}), ([], environment)) as served:
        (one, banner), (two, other) = served
        assert f"store {redis_server.url})" in banner and f"store {redis_server.url})" in other
        a, b = sdk_client(one), sdk_client(two)
        first = a.responses.create(model=MODEL, input=QUESTION, tools=[WEATHER])
        assert answer_call(b, function_call(first), "ok", first.id).status == "completed"
        assert items(b.responses.retrieve(first.id)) == items(first)
        b.responses.delete(first.id)
        with pytest.raises(openai.NotFoundError):
            a.responses.retrieve(first.id)
