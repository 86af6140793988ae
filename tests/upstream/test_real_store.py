# SPDX-License-Identifier: Apache-2.0
"""The ``store`` group on upstream's own ``openai_server`` (CPU, fake engine, over HTTP).

Runs for each tree of ``TRTLLM_SOURCE_DIRS`` / ``TRTLLM_SOURCE_DIR`` with an
``openai_server.py``; skips with the reason otherwise. Contract: unpatched, upstream's
in-process store (16 responses) loses turns of many concurrent two-turn conversations; with
the plugin none is lost; two servers sharing one redis-server continue, fetch and delete each
other's responses; with Redis down a stored request gets upstream's error response, GET and
DELETE an OpenAI-shaped 503 and ``store: false`` still works; a Redis killed mid-conversation
and restarted (append-only file) has the turns stored before; ``item_reference`` input items
continue a conversation (upstream: a 400 ``Unknown input type``).
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter

import pytest
from test_real_server import _trees  # the configured trees (skips with the reason)

from trtllm_stream_fix.plugin.realstub.serve_matrix import (
    MODEL,
    WEATHER_TOOL,
    client_limits,
    running_server,
)
from trtllm_stream_fix.plugin.realstub.server import KEEP_ALIVE_S
from trtllm_stream_fix.testing.redis_server import RedisServer, missing

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


def _store_unavailable(answer, store_url: str) -> None:
    """``answer`` is the OpenAI-shaped 503 of a store that is down (no traceback)."""
    assert answer.status_code == 503, answer.text
    error = answer.json()["error"]
    assert error["type"] == "server_error" and error["code"] == "store_unavailable", error
    assert error["message"].startswith(f"response store {store_url} is unavailable"), error
    assert "Traceback" not in answer.text


def test_redis_down_answers_an_error_and_store_false_still_works(tree, monkeypatch):
    import httpx

    store = "redis://127.0.0.1:1/0"
    monkeypatch.setenv("TRTLLM_STREAM_FIX_STORE", f"{store}?timeout=1")
    with running_server(tree, plugin=True) as url:
        body = {"model": MODEL, "input": "hi, seed 5"}
        unstored = httpx.post(f"{url}/v1/responses", json={**body, "store": False}, timeout=120)
        stored = httpx.post(f"{url}/v1/responses", json={**body, "store": True}, timeout=120)
        fetched = httpx.get(f"{url}/v1/responses/resp_x", timeout=120)
        deleted = httpx.delete(f"{url}/v1/responses/resp_x", timeout=120)
    print("store:false", unstored.status_code, "store:true", stored.status_code, stored.text)
    print("GET", fetched.status_code, fetched.text[:200])
    assert unstored.status_code == 200
    assert stored.status_code >= 400 and "unavailable" in stored.json()["message"]
    assert "Traceback" not in stored.text
    _store_unavailable(fetched, store)
    _store_unavailable(deleted, store)


def test_redis_killed_mid_conversation_then_restarted(tree, tmp_path, monkeypatch):
    """Two turns stored, Redis killed: GET and DELETE answer the OpenAI 503, the server
    stays up (``/health``, ``store: false``); Redis restarted from its append-only file: both
    turns read as they were and the conversation continues."""
    import httpx

    reason = missing()
    if reason:
        pytest.skip(reason)
    with RedisServer(tmp_path / "redis", persistent=True) as redis_server:
        monkeypatch.setenv("TRTLLM_STREAM_FIX_STORE", f"{redis_server.url}?timeout=0.5")
        with running_server(tree, plugin=True) as url, httpx.Client(timeout=120) as http:
            body = {"model": MODEL, "input": "hi, seed 3", "store": True}
            first = http.post(f"{url}/v1/responses", json=body).json()
            body = {**body, "input": "and again", "previous_response_id": first["id"]}
            second = http.post(f"{url}/v1/responses", json=body).json()
            stored = {
                r["id"]: http.get(f"{url}/v1/responses/{r['id']}").json() for r in (first, second)
            }

            redis_server.kill()
            _store_unavailable(http.get(f"{url}/v1/responses/{first['id']}"), redis_server.url)
            _store_unavailable(http.delete(f"{url}/v1/responses/{first['id']}"), redis_server.url)
            assert http.get(f"{url}/health").status_code == 200
            unstored = {"model": MODEL, "input": "hi, seed 4", "store": False}
            assert http.post(f"{url}/v1/responses", json=unstored).status_code == 200

            redis_server.start()
            again = {i: http.get(f"{url}/v1/responses/{i}").json() for i in stored}
            body = {**body, "input": "and once more", "previous_response_id": second["id"]}
            third = http.post(f"{url}/v1/responses", json=body)
    assert [r["output"] for r in stored.values()] == [first["output"], second["output"]]
    assert again == stored
    # continued (the fake engine's answer to that prompt may be cut by its length limit)
    assert third.status_code == 200 and third.json()["status"] in ("completed", "incomplete")


def _item_reference_turns(url: str) -> dict:
    """Turn 2 names turn 1's output items by id, once without tools (the fake engine's
    answer follows the prompt, so equal to turn 2 with the items sent inline) and once
    answering a tool call; then an unknown id."""
    import httpx

    out: dict = {}
    question = "What is the weather in Paris?"
    with httpx.Client(base_url=url, timeout=120) as http:
        for tools in ([], [WEATHER_TOOL]):
            body = {"model": MODEL, "input": question, "tools": tools, "store": True}
            first = http.post("/v1/responses", json=body).json()
            if tools:
                call = next(i for i in first["output"] if i["type"] == "function_call")
                last = {"type": "function_call_output", "call_id": call["call_id"], "output": "21C"}
            else:
                last = {"role": "user", "content": "and in Rome?"}
            refs = [{"type": "item_reference", "id": item["id"]} for item in first["output"]]
            turns = {}
            for name, items in (("referenced", refs), ("inline", first["output"])):
                body = {**body, "input": [{"role": "user", "content": question}, *items, last]}
                answer = http.post("/v1/responses", json=body)
                turns[name] = answer.json() if answer.status_code == 200 else answer.text
            key = "tool" if tools else "plain"
            out[key] = turns
        unknown = [{"type": "item_reference", "id": "msg_nope"}]
        body = {"model": MODEL, "input": unknown, "store": True}
        out["unknown"] = http.post("/v1/responses", json=body)
        nameless = [{"type": "item_reference"}]  # a hostile client's: no id at all
        out["nameless"] = http.post("/v1/responses", json={**body, "input": nameless})
    return out


def _texts(response: dict) -> list:
    return [
        (i["type"], [c.get("text") for c in i.get("content") or ()]) for i in response["output"]
    ]


def test_item_references_continue_a_conversation(tree, monkeypatch):
    monkeypatch.delenv("TRTLLM_STREAM_FIX_STORE", raising=False)
    with running_server(tree, plugin=False) as url:
        upstream = _item_reference_turns(url)
    with running_server(tree, plugin=True) as url:
        plugin = _item_reference_turns(url)
    assert "Unknown input type: item_reference" in upstream["plain"]["referenced"]
    for key in ("plain", "tool"):
        referenced, inline = plugin[key]["referenced"], plugin[key]["inline"]
        assert isinstance(referenced, dict), referenced
        assert referenced["status"] == "completed"
        assert _texts(referenced) == _texts(inline)
    assert _texts(plugin["tool"]["referenced"])[-1][0] == "message"  # the tool's answer
    unknown = plugin["unknown"]
    assert unknown.status_code == 400
    assert unknown.json()["message"].startswith("Item with id 'msg_nope' not found.")
    nameless = plugin["nameless"]
    assert nameless.status_code == 400
    assert nameless.json()["message"] == "An item_reference needs a string `id`; got None."


def _slash_and_duplicate_turns(url: str) -> dict:
    """GET / DELETE of a stored response's path with a trailing slash (not followed), then
    the response; a turn naming its previous response's output item again."""
    import httpx

    out: dict = {}
    with httpx.Client(base_url=url, timeout=120, follow_redirects=False) as http:
        body = {"model": MODEL, "input": "What is the capital of France?", "store": True}
        first = http.post("/v1/responses", json=body).json()
        path = f"/v1/responses/{first['id']}"
        out["slashed"] = [
            http.request(method, f"{path}{suffix}")
            for method in ("GET", "DELETE")
            for suffix in ("/", "%2F")
        ] + [http.get("/v1/responses/")]
        out["still_there"] = http.get(path).status_code
        again = {
            **body,
            "input": [{"type": "item_reference", "id": first["output"][-1]["id"]}],
            "previous_response_id": first["id"],
        }
        out["duplicate"] = http.post("/v1/responses", json=again)
        out["item"] = first["output"][-1]["id"]
    return out


def test_a_trailing_slash_is_a_404_and_a_duplicate_item_a_400_with_the_store_group(
    tree, monkeypatch
):
    monkeypatch.delenv("TRTLLM_STREAM_FIX_STORE", raising=False)
    with running_server(tree, plugin=False) as url:
        upstream = _slash_and_duplicate_turns(url)
    with running_server(tree, plugin=True) as url:
        plugin = _slash_and_duplicate_turns(url)
    # upstream's app redirects a trailing slash (FastAPI's redirect_slashes) to the response
    assert [a.status_code for a in upstream["slashed"]] == [307] * 5
    for answer in plugin["slashed"]:
        assert answer.status_code == 404, (answer.status_code, answer.headers.get("location"))
        error = answer.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
    assert plugin["still_there"] == 200
    duplicate = plugin["duplicate"]
    assert duplicate.status_code == 400, duplicate.text
    assert duplicate.json()["message"] == (
        f"Duplicate item found with id {plugin['item']}. Remove duplicate items from your "
        "input and try again."
    )
