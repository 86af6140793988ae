# SPDX-License-Identifier: Apache-2.0
"""Stored responses on the simulated server (in-process store), through the OpenAI Python SDK:
``item_reference`` input items (how the Vercel AI SDK continues a tool loop with its default
``store: true``), ``GET`` / ``DELETE /v1/responses/{id}``, ``store: false``, a store that
fails (503 before a turn, ``error`` + ``response.failed`` when it fails at the end of a
stream), and 200 concurrent conversations that lose no turn (a 16-response store loses most).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import openai
import pytest
from _sdk_turns import MODEL, QUESTION, WEATHER, answer_call, function_call, streamed, texts
from _sdk_turns import client as sdk_client

from trtllm_stream_fix.checker.client import stream_responses
from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
from trtllm_stream_fix.store import MemoryStore, StoreUnavailable


@pytest.fixture(scope="module")
def base_url():
    with serve_in_thread(create_app(EngineConfig(stream_interval=20))) as url:
        yield url


def _tool_turn(client: openai.OpenAI, stream: bool) -> Any:
    body = {"input": QUESTION, "tools": [WEATHER], "reasoning": {"effort": "low"}}
    if stream:
        return streamed(client, **body)
    return client.responses.create(model=MODEL, **body)


def _seen(url: str, stream: bool) -> dict[str, Any]:
    """A tool turn's response as the client saw it: the body, or the terminal event's."""
    body = {"model": MODEL, "input": QUESTION, "tools": [WEATHER], "stream": stream}
    if not stream:
        return httpx.post(f"{url}/v1/responses", json=body, timeout=30).json()
    with httpx.stream("POST", f"{url}/v1/responses", json=body, timeout=30) as response:
        events = [json.loads(line[6:]) for line in response.iter_lines() if line[:6] == "data: "]
    assert events[-1]["type"] == "response.completed"
    return events[-1]["response"]


@pytest.mark.parametrize("stream", [False, True])
def test_item_references_continue_a_tool_loop_as_the_vercel_ai_sdk_sends_it(base_url, stream):
    client = sdk_client(base_url)
    first = _tool_turn(client, stream)
    call = function_call(first)
    # Step 2 of the AI SDK's tool loop with store: true: earlier items by reference, no
    # previous_response_id (tests/node/ai_sdk_agent.mjs records what it really sends).
    step_two = [
        {"role": "user", "content": QUESTION},
        *({"type": "item_reference", "id": item.id} for item in first.output),
        {"type": "function_call_output", "call_id": call.call_id, "output": '{"sky": "clear"}'},
    ]
    body = {"input": step_two, "tools": [WEATHER]}
    answer = streamed(client, **body) if stream else client.responses.create(model=MODEL, **body)
    assert answer.status == "completed"
    assert [item.type for item in answer.output][-1] == "message"
    assert any('get_weather returned {"sky": "clear"}' in text for text in texts(answer))


def test_an_unknown_item_reference_is_openais_400_naming_it(base_url):
    client = sdk_client(base_url)
    first = _tool_turn(client, stream=False)
    unstored = client.responses.create(model=MODEL, input="hi", store=False)
    for missing in ("fc_nope", unstored.output[-1].id):
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(
                model=MODEL,
                input=[
                    {"type": "item_reference", "id": first.output[-1].id},
                    {"type": "item_reference", "id": missing},
                ],
            )
        error = caught.value.body
        assert error["message"].startswith(f"Item with id '{missing}' not found.")
        assert (error["type"], error["param"]) == ("invalid_request_error", "input")


@pytest.mark.parametrize("stream", [False, True])
def test_get_returns_what_the_client_saw_and_delete_forgets_it(base_url, stream):
    client = sdk_client(base_url)
    saw = _seen(base_url, stream)
    fetched = httpx.get(f"{base_url}/v1/responses/{saw['id']}", timeout=10)
    assert fetched.status_code == 200
    assert fetched.json() == saw
    seen = client.responses.retrieve(saw["id"])
    assert seen.status == "completed" and seen.output[-1].type == "function_call"
    raw = httpx.delete(f"{base_url}/v1/responses/{seen.id}", timeout=10)
    assert raw.json() == {"id": seen.id, "object": "response", "deleted": True}
    for gone in (
        lambda: client.responses.retrieve(seen.id),
        lambda: client.responses.delete(seen.id),
    ):
        with pytest.raises(openai.NotFoundError) as caught:
            gone()
        assert caught.value.body["message"] == f"Response with id '{seen.id}' not found."
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=MODEL, input="and?", previous_response_id=seen.id)
    assert caught.value.code == "previous_response_not_found"
    with pytest.raises(openai.BadRequestError, match="not found"):
        client.responses.create(
            model=MODEL, input=[{"type": "item_reference", "id": function_call(seen).id}]
        )


def test_a_store_false_response_is_not_stored(base_url):
    client = sdk_client(base_url)
    response = client.responses.create(model=MODEL, input="hi", store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)


def test_previous_response_id_continues_the_whole_conversation(base_url):
    client = sdk_client(base_url)
    first = _tool_turn(client, stream=True)
    call = function_call(first)
    second = answer_call(client, call, "sunny", first.id)
    third = client.responses.create(model=MODEL, input="thanks", previous_response_id=second.id)
    # The third turn's conversation still holds the first turn's call: its output is accepted.
    fourth = answer_call(client, call, "rain", third.id)
    assert fourth.status == "completed"
    assert any("get_weather returned rain" in t for t in texts(fourth))


class _BreakableStore(MemoryStore):
    """An in-process store whose backend can be switched off (every call unavailable)."""

    down = False

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailable("response store breakable is unavailable: switched off")

    async def put(self, response, messages):
        self._check()
        await super().put(response, messages)

    async def history(self, response_id):
        self._check()
        return await super().history(response_id)

    async def items(self, item_ids):
        self._check()
        return await super().items(item_ids)

    async def get(self, response_id):
        self._check()
        return await super().get(response_id)

    async def delete(self, response_id):
        self._check()
        return await super().delete(response_id)

    async def ping(self):
        self._check()


def test_a_store_that_is_down_is_a_503_and_store_false_keeps_working():
    store = _BreakableStore()
    with serve_in_thread(create_app(EngineConfig(stream_interval=20), store=store)) as url:
        client = sdk_client(url)
        first = client.responses.create(model=MODEL, input="hi")
        store.down = True
        needs_store = [
            lambda: client.responses.create(model=MODEL, input="hi"),
            lambda: streamed(client, input="hi"),
            lambda: client.responses.create(
                model=MODEL, input="and?", previous_response_id=first.id
            ),
            lambda: client.responses.create(
                model=MODEL, input=[{"type": "item_reference", "id": first.output[-1].id}]
            ),
            lambda: client.responses.retrieve(first.id),
            lambda: client.responses.delete(first.id),
        ]
        for call in needs_store:
            with pytest.raises(openai.InternalServerError) as caught:
                call()
            assert caught.value.status_code == 503
            assert caught.value.body == {
                "message": "response store breakable is unavailable: switched off",
                "type": "server_error",
                "param": None,
                "code": "store_unavailable",
            }
        assert client.responses.create(model=MODEL, input="hi", store=False).status == "completed"
        assert streamed(client, input="hi", store=False).status == "completed"
        store.down = False
        assert client.responses.retrieve(first.id).id == first.id


def test_a_store_that_fails_at_the_end_of_a_stream_fails_the_stream_with_its_error():
    store = _BreakableStore()

    async def ping() -> None:  # up when the turn starts, down when it ends
        store.down = True

    store.ping = ping  # type: ignore[method-assign]
    with serve_in_thread(create_app(EngineConfig(stream_interval=20), store=store)) as url:

        async def run():
            async with httpx.AsyncClient(timeout=30) as client:
                body = {"model": MODEL, "input": "hi", "stream": True}
                return await stream_responses(
                    client, f"{url}/v1/responses", body, allow_failed=True
                )

        record = asyncio.run(run())
        store.down = False
        fetched = httpx.get(f"{url}/v1/responses/{record.request_id}", timeout=10)
    assert record.ok, record.violations
    assert record.terminal == "failed"
    error = next(e for e in record.events if e["event"] == "error")
    assert "response store breakable is unavailable" in error["data"]
    assert [item["type"] for item in record.items][-1] == "message"  # what the client saw
    assert fetched.status_code == 404


def _conversations(store: MemoryStore, count: int, *, stream: bool) -> tuple[int, int, list[str]]:
    """``count`` two-turn tool conversations at once on one server with ``store``: every
    first turn (streamed through the strict checker, or not), then every second turn
    continues its first with ``previous_response_id``. Returns (continued, lost, stream
    violations)."""
    app = create_app(EngineConfig(stream_interval=20), store=store)
    with serve_in_thread(app) as url:

        async def first(client: httpx.AsyncClient, n: int) -> tuple[str, dict[str, Any], list]:
            body = {
                "model": MODEL,
                "input": f"{QUESTION} ({n})",
                "tools": [WEATHER],
                "stream": stream,
                "reasoning": {"effort": "low"},
            }
            if not stream:
                response = (await client.post(f"{url}/v1/responses", json=body)).json()
                return response["id"], response["output"][-1], []
            record = await stream_responses(client, f"{url}/v1/responses", body)
            return record.request_id, record.items[-1], record.violations

        async def second(client: httpx.AsyncClient, response_id: str, call: dict[str, Any]):
            output = {"type": "function_call_output", "call_id": call["call_id"], "output": "ok"}
            body = {
                "model": MODEL,
                "input": [output],
                "tools": [WEATHER],
                "previous_response_id": response_id,
            }
            return await client.post(f"{url}/v1/responses", json=body)

        async def run():
            limits = httpx.Limits(max_connections=count)
            async with httpx.AsyncClient(timeout=60, limits=limits) as client:
                firsts = await asyncio.gather(*(first(client, n) for n in range(count)))
            # A fresh pool: the server closes connections idle past its keep-alive timeout.
            async with httpx.AsyncClient(timeout=60, limits=limits) as client:
                seconds = await asyncio.gather(*(second(client, i, c) for i, c, _ in firsts))
            return firsts, seconds

        firsts, seconds = asyncio.run(run())
    continued = sum(second.status_code == 200 for second in seconds)
    lost = sum(
        second.status_code == 400
        and second.json()["error"]["code"] == "previous_response_not_found"
        for second in seconds
    )
    return continued, lost, [v for _, _, violations in firsts for v in violations]


def test_200_concurrent_conversations_lose_no_turn():
    assert _conversations(MemoryStore(), 200, stream=True) == (200, 0, [])


@pytest.mark.slow  # the demonstration; the guarantee above stays in the default tier
def test_a_16_response_store_loses_most_of_200_concurrent_conversations():
    # Upstream's in-process store keeps 16 responses: 200 first turns push out 184 or more
    # (second turns that end push out first turns not yet read).
    continued, lost, _ = _conversations(MemoryStore(capacity=16), 200, stream=False)
    assert continued + lost == 200 and lost >= 184
