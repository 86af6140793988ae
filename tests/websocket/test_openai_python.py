# SPDX-License-Identifier: Apache-2.0
"""openai-python's ``client.responses.connect()`` against the simulated server.

Text, a tool loop continued with ``store: false``, two lanes at once (the SDK's
``AsyncResponsesWebSocketSession``), a reconnect that gets ``previous_response_not_found``
and ``generate: false``; the SDK parses every event, and the strict checker passes them.
"""

from __future__ import annotations

import asyncio

import pytest

from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
from trtllm_stream_fix.testing.ws_client import MODEL, WEATHER, sdk_checked, sdk_turn

openai = pytest.importorskip("openai")
pytest.importorskip("websockets")


@pytest.fixture(scope="module")
def base_url():
    with serve_in_thread(create_app(EngineConfig(stream_interval=20))) as url:
        yield f"{url}/v1"


def client(base_url: str):
    return openai.OpenAI(base_url=base_url, api_key="sk-local", max_retries=0)


def test_text_turn(base_url):
    with client(base_url).responses.connect() as connection:
        events = sdk_turn(connection, input="Say hello.", store=False)
    sdk_checked(events)
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text


def test_tool_loop_with_store_false_continuation(base_url):
    with client(base_url).responses.connect() as connection:
        events = sdk_turn(
            connection,
            input="What is the weather in Paris?",
            tools=[WEATHER],
            tool_choice="required",
            store=False,
        )
        for _ in range(3):
            sdk_checked(events)
            response = events[-1].response
            call = next(o for o in response.output if o.type == "function_call")
            assert call.name == "get_weather"
            events = sdk_turn(
                connection,
                input=[{"type": "function_call_output", "call_id": call.call_id, "output": "22C"}],
                tools=[WEATHER],
                store=False,
                previous_response_id=response.id,
            )
            if events[-1].response.output[-1].type == "message":
                break
        sdk_checked(events)
        assert events[-1].response.previous_response_id == response.id
        assert "22C" in events[-1].response.output_text


def test_two_lanes_at_once(base_url):
    from openai.lib.responses_websocket import (
        AsyncResponsesWebSocketSession,
        ResponsesWebSocketLimits,
    )

    limits = ResponsesWebSocketLimits(
        max_lanes=4,
        max_events_per_lane=4096,
        max_events=8192,
        max_bytes_per_lane=16 << 20,
        max_bytes=32 << 20,
    )

    async def main():
        api = openai.AsyncOpenAI(base_url=base_url, api_key="sk-local", max_retries=0)
        async with api.responses.connect() as connection:
            async with AsyncResponsesWebSocketSession(connection, limits=limits) as session:
                lanes = [session.lane("left"), session.lane("right")]
                for lane, text in zip(lanes, ("Count to 3.", "Name a colour."), strict=True):
                    await lane.send(
                        {"type": "response.create", "model": MODEL, "input": text, "store": False}
                    )
                left, right = await asyncio.gather(*(lane.get_final_response() for lane in lanes))
                assert left.status == right.status == "completed" and left.id != right.id
                # each lane continues its own response from the connection's cache
                await lanes[0].send(
                    {
                        "type": "response.create",
                        "model": MODEL,
                        "input": "More.",
                        "store": False,
                        "previous_response_id": left.id,
                    }
                )
                more = await lanes[0].get_final_response()
                assert more.previous_response_id == left.id and more.status == "completed"

    asyncio.run(asyncio.wait_for(main(), 60))


def test_reconnect_gets_previous_response_not_found_then_a_fresh_turn(base_url):
    api = client(base_url)
    with api.responses.connect() as connection:
        first = sdk_turn(connection, input="Remember: cobalt.", store=False)[-1].response
    with api.responses.connect() as connection:
        events = sdk_turn(
            connection, input="Which word?", store=False, previous_response_id=first.id
        )
        assert events[-1].type == "error"
        assert events[-1].error.code == "previous_response_not_found"
        assert events[-1].status == 400
        sdk_checked(sdk_turn(connection, input="Remember: cobalt. Which word?", store=False))


def test_generate_false_then_continue(base_url):
    with client(base_url).responses.connect() as connection:
        warm = sdk_turn(
            connection,
            input="What is the weather in Oslo?",
            tools=[WEATHER],
            store=False,
            generate=False,
        )
        sdk_checked(warm)
        assert [e.type for e in warm] == ["response.created", "response.completed"]
        assert warm[-1].response.output == []
        events = sdk_turn(
            connection,
            input=[],
            tools=[WEATHER],
            tool_choice="required",
            store=False,
            previous_response_id=warm[-1].response.id,
        )
        sdk_checked(events)
        assert events[-1].response.output[-1].type == "function_call"
