# SPDX-License-Identifier: Apache-2.0
"""The ``store`` group on upstream's own ``openai_server`` (CPU, fake engine, over HTTP).

Runs for each tree of ``TRTLLM_SOURCE_DIRS`` / ``TRTLLM_SOURCE_DIR`` with an
``openai_server.py``; skips with the reason otherwise. Contract: unpatched, upstream's
in-process store (16 responses) loses turns of many concurrent two-turn conversations; with
the plugin none is lost; two servers sharing one redis-server continue, fetch and delete each
other's responses; with Redis down a stored request gets upstream's error response and
``store: false`` still works.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter

import pytest
from test_real_server import _trees  # the configured trees (skips with the reason)

from trtllm_stream_fix.testing.realstub.serve_matrix import (
    MODEL,
    WEATHER_TOOL,
    client_limits,
    running_server,
)
from trtllm_stream_fix.testing.realstub.server import KEEP_ALIVE_S

pytestmark = pytest.mark.cpu_only

CONVERSATIONS = int(os.environ.get("STORE_CONVERSATIONS", "200"))


@pytest.fixture(params=_trees())
def tree(request):
    return request.param


def _second_turns(url: str, count: int) -> tuple[Counter, list[str]]:
    """``count`` concurrent two-turn conversations (``previous_response_id``): how each
    ended (``ok``, ``not-found``: the store forgot turn 1, ``first-failed``, ``other ...``),
    and what went wrong in each conversation that did not end ``ok``."""
    import httpx

    async def conversation(http: httpx.AsyncClient, n: int) -> tuple[str, str]:
        body = {"model": MODEL, "input": f"hi, seed {n}", "store": True}
        turn = 1
        try:
            first = await http.post(f"{url}/v1/responses", json=body)
            if first.status_code != 200:
                return "first-failed", f"turn 1: HTTP {first.status_code} {first.text[:200]}"
            body = {**body, "input": "and again", "previous_response_id": first.json()["id"]}
            turn = 2
            second = await http.post(f"{url}/v1/responses", json=body)
        except httpx.TransportError as exc:  # the connection was lost: not retried (a POST)
            return f"other {type(exc).__name__}", f"turn {turn}: {exc!r}"
        if second.status_code == 200:
            return "ok", ""
        outcome = "not-found" if "not found" in second.text else f"other {second.status_code}"
        return outcome, f"turn 2: HTTP {second.status_code} {second.text[:200]}"

    async def go() -> list[tuple[str, str]]:
        async with httpx.AsyncClient(timeout=600, limits=client_limits(count)) as http:
            return await asyncio.gather(*(conversation(http, n) for n in range(count)))

    ended = asyncio.run(go())
    problems = [f"conversation {n}, {why}" for n, (_, why) in enumerate(ended) if why]
    return Counter(outcome for outcome, _ in ended), problems


def test_the_client_drops_an_idle_connection_well_before_the_server_does():
    """A request sent on a connection the server is closing is reset (``httpx.ReadError``,
    seen under load with httpx's default 5 s, equal to upstream's keep-alive)."""
    assert client_limits(8).keepalive_expiry <= KEEP_ALIVE_S / 2


@pytest.mark.slow
def test_concurrent_conversations_lose_no_turn_with_the_store_group(tree, monkeypatch):
    monkeypatch.delenv("TRTLLM_STREAM_FIX_STORE", raising=False)
    with running_server(tree, plugin=False) as url:
        upstream, _ = _second_turns(url, CONVERSATIONS)
    with running_server(tree, plugin=True) as url:
        plugin, problems = _second_turns(url, CONVERSATIONS)
    print(f"{CONVERSATIONS} conversations: unpatched {dict(upstream)}; plugin {dict(plugin)}")
    assert upstream["not-found"] > 0  # upstream keeps 16 responses: the cause
    assert plugin["ok"] == CONVERSATIONS, (dict(plugin), problems[:5])


def _tool_conversation(first: str, second: str) -> dict:
    """Turn 1 (tool call) on ``first``, turn 2 (tool output) on ``second``, turn 3 on
    ``first``; GET each response on the other server; DELETE on one, GET 404 on the other."""
    import httpx
    import openai

    a = openai.OpenAI(base_url=f"{first}/v1", api_key="unused", max_retries=0)
    b = openai.OpenAI(base_url=f"{second}/v1", api_key="unused", max_retries=0)
    out: dict = {}
    turn1 = a.responses.create(
        model=MODEL, input="What is the weather in Paris?", tools=[WEATHER_TOOL], store=True
    )
    calls = [item for item in turn1.output if item.type == "function_call"]
    out["call"] = calls[0].name if calls else None
    if not calls:
        return out
    out["turn1_on_b"] = b.responses.retrieve(turn1.id).id == turn1.id
    turn2 = b.responses.create(
        model=MODEL,
        previous_response_id=turn1.id,
        input=[{"type": "function_call_output", "call_id": calls[0].call_id, "output": "21C"}],
        tools=[WEATHER_TOOL],
        store=True,
    )
    out["turn2"] = turn2.status
    turn3 = a.responses.create(
        model=MODEL, previous_response_id=turn2.id, input="thanks", store=True
    )
    out["turn3"] = turn3.status
    out["turn3_on_b"] = b.responses.retrieve(turn3.id).id == turn3.id
    out["deleted_on_a"] = httpx.delete(f"{first}/v1/responses/{turn2.id}").status_code
    out["get_on_b"] = httpx.get(f"{second}/v1/responses/{turn2.id}").status_code
    return out


def test_two_servers_share_one_redis(tree, redis_server, monkeypatch):
    monkeypatch.setenv("TRTLLM_STREAM_FIX_STORE", f"{redis_server.url}?prefix=real-store:")
    with running_server(tree, plugin=True) as first, running_server(tree, plugin=True) as second:
        out = _tool_conversation(first, second)
    assert out == {
        "call": "get_weather",
        "turn1_on_b": True,
        "turn2": "completed",
        "turn3": "completed",
        "turn3_on_b": True,
        "deleted_on_a": 200,
        "get_on_b": 404,
    }, out


def test_redis_down_answers_an_error_and_store_false_still_works(tree, monkeypatch):
    import httpx

    monkeypatch.setenv("TRTLLM_STREAM_FIX_STORE", "redis://127.0.0.1:1/0?timeout=1")
    with running_server(tree, plugin=True) as url:
        body = {"model": MODEL, "input": "hi, seed 5"}
        unstored = httpx.post(f"{url}/v1/responses", json={**body, "store": False}, timeout=120)
        stored = httpx.post(f"{url}/v1/responses", json={**body, "store": True}, timeout=120)
        fetched = httpx.get(f"{url}/v1/responses/resp_x", timeout=120)
    print("store:false", unstored.status_code, "store:true", stored.status_code, stored.text)
    print("GET", fetched.status_code, fetched.text[:200])
    assert unstored.status_code == 200
    assert stored.status_code >= 400 and "unavailable" in stored.json()["message"]
    assert "Traceback" not in stored.text
    assert fetched.status_code == 500  # upstream's GET handler has no error path for the store
