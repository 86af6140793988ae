# SPDX-License-Identifier: Apache-2.0
"""Responses WebSocket mode on the simulated server (``GET /v1/responses``).

The Open Responses conformance behaviours, a store: false tool loop, lanes, generate: false,
the lifetime limit, hostile frames, isolation between connections, disconnects and the 426
refusal. Every generated event sequence passes the strict checker, and a conversation's
events are the same at stream_interval 1 and 20.
"""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from trtllm_stream_fix.differential.visible import client_visible
from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
from trtllm_stream_fix.testing.ws_client import (
    WEATHER,
    WSClient,
    checked,
    conformance,
    error_code,
    response_of,
    ws_url,
)
from trtllm_stream_fix.websocket import WebSocketSettings


@pytest.fixture(scope="module")
def servers():
    """Two servers, at stream_interval 1 and 20."""
    with serve_in_thread(create_app(EngineConfig(stream_interval=1))) as one:
        with serve_in_thread(create_app(EngineConfig(stream_interval=20))) as twenty:
            yield {1: one, 20: twenty}


@pytest.fixture(scope="module")
def url(servers):
    return servers[20]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def same_for_clients(a: list[dict], b: list[dict]) -> list[dict]:
    """Events compared as a client sees them; response ids and times made canonical."""

    def canonical(events):
        text = json.dumps(client_visible(events))
        for n, rid in enumerate(dict.fromkeys(_response_ids(events))):
            text = text.replace(rid, f"<resp{n}>")
        out = json.loads(text)
        for event in out:
            if "response" in event:
                event["response"].pop("created_at", None)
        return out

    assert canonical(a) == canonical(b)
    return a


def _response_ids(events):
    for event in events:
        response = event.get("response") or {}
        for key in ("id", "previous_response_id"):
            if isinstance(response.get(key), str):
                yield response[key]


def test_conformance_behaviours_at_intervals_1_and_20(servers):
    results = {n: run(conformance(url, {"seed": 7})) for n, url in servers.items()}
    for n, behaviours in results.items():
        failed = [(b.name, b.detail) for b in behaviours if not b.ok]
        assert not failed, (n, failed)
    for b1, b20 in zip(results[1], results[20], strict=True):
        for t1, t20 in zip(b1.turns, b20.turns, strict=True):
            if t1[-1]["type"] != "error":
                same_for_clients(t1, t20)


def test_a_turn_carries_the_same_events_as_the_sse_stream(url):
    from trtllm_stream_fix.checker.sse_reader import parse_sse

    body = {
        "model": "gpt-oss-20b",
        "input": "What is the weather in Paris?",
        "tools": [WEATHER],
        "seed": 5,
        "store": False,
    }
    with httpx.stream("POST", f"{url}/v1/responses", json={**body, "stream": True}) as response:
        sse = [json.loads(e.data) for e in parse_sse(response.read())[0]]

    async def main():
        async with await WSClient.connect(url) as ws:
            return await ws.turn(**body)

    same_for_clients(run(main()), checked(sse))


async def tool_loop(url: str, turns: int = 4) -> list[list[dict]]:
    """A store: false tool loop: each turn sends only the call's output."""
    out = []
    async with await WSClient.connect(url, {"seed": 11}) as ws:
        events = await ws.turn(
            input="What is the weather in Paris?",
            tools=[WEATHER],
            tool_choice="required",
            store=False,
        )
        for _ in range(turns):
            out.append(checked(events))
            response = response_of(events)
            call = next(o for o in response["output"] if o["type"] == "function_call")
            events = await ws.turn(
                input=[
                    {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
                ],
                tools=[WEATHER],
                tool_choice="required",
                store=False,
                previous_response_id=response["id"],
            )
            assert response_of(events)["previous_response_id"] == response["id"]
        events = await ws.turn(
            input=[{"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}],
            tools=[WEATHER],
            store=False,
            previous_response_id=response_of(events)["id"],
        )
        out.append(checked(events))
        assert [o["type"] for o in response_of(events)["output"]][-1] == "message"
    return out


def test_store_false_tool_loop_same_at_intervals_1_and_20(servers):
    one, twenty = run(tool_loop(servers[1])), run(tool_loop(servers[20]))
    for a, b in zip(one, twenty, strict=True):
        same_for_clients(a, b)


def test_store_true_falls_back_to_the_response_store(url):
    posted = httpx.post(f"{url}/v1/responses", json={"model": "gpt-oss-20b", "input": "hi"}).json()

    async def main():
        async with await WSClient.connect(url) as ws:
            events = checked(await ws.turn(input="more", previous_response_id=posted["id"]))
            assert response_of(events)["previous_response_id"] == posted["id"]
            # store: false never reads the server's store
            events = await ws.turn(input="more", store=False, previous_response_id=posted["id"])
            assert error_code(events) == "previous_response_not_found"

    run(main())


def test_a_cached_conversation_keeps_the_stored_history_it_continues():
    from trtllm_stream_fix.store import MemoryStore

    store = MemoryStore()
    app = create_app(store=store)

    async def main(url):
        async with httpx.AsyncClient(base_url=url) as http:
            first = (
                await http.post("/v1/responses", json={"model": "gpt-oss-20b", "input": "first"})
            ).json()
        async with await WSClient.connect(url) as ws:
            second = response_of(
                checked(await ws.turn(input="second", previous_response_id=first["id"]))
            )
            third = response_of(
                checked(await ws.turn(input="third", previous_response_id=second["id"]))
            )
            assert third["previous_response_id"] == second["id"]
        history = await store.history(third["id"])
        said = [m["content"] for m in history if m.get("role") == "user"]
        assert said == ["first", "second", "third"]

    with serve_in_thread(app) as url:
        run(main(url))


def test_one_connection_cannot_continue_another_s_store_false_response(url):
    async def main():
        async with await WSClient.connect(url) as a, await WSClient.connect(url) as b:
            rid = response_of(await a.turn(input="secret", store=False))["id"]
            for store in (False, True):
                events = await b.turn(input="tell", store=store, previous_response_id=rid)
                assert error_code(events) == "previous_response_not_found", events
            assert httpx.get(f"{url}/v1/responses/{rid}").status_code == 404
            checked(await a.turn(input="tell", store=False, previous_response_id=rid))

    run(main())


def test_lanes_run_concurrently_and_tag_every_event(url):
    async def main():
        async with await WSClient.connect(url) as ws:
            for lane in ("alpha", "beta"):
                await ws.send(
                    {
                        "type": "response.create",
                        "model": "gpt-oss-20b",
                        "input": lane,
                        "store": False,
                        "stream_id": lane,
                    }
                )
            alpha, beta = await asyncio.gather(ws.events("alpha"), ws.events("beta"))
            for lane, events in (("alpha", alpha), ("beta", beta)):
                assert {e.get("stream_id") for e in events} == {lane}
                checked(events)
            # a fork: beta's lane continues alpha's response from the cache
            forked = await ws.turn(
                input="fork",
                store=False,
                stream_id="beta",
                previous_response_id=response_of(alpha)["id"],
            )
            checked(forked)
            # FIFO on one lane: two creates sent at once answer in order
            for text in ("one", "two"):
                await ws.send(
                    {
                        "type": "response.create",
                        "model": "gpt-oss-20b",
                        "input": text,
                        "store": False,
                        "stream_id": "gamma",
                    }
                )
            first, second = await ws.events("gamma"), await ws.events("gamma")
            assert response_of(first)["id"] != response_of(second)["id"]
            assert checked(first) and checked(second)
            await ws.send({"type": "response.create", "model": "m", "stream_id": "no spaces"})
            bad = await ws.events()  # an invalid stream_id is not echoed
            assert error_code(bad) == "invalid_stream_id" and "stream_id" not in bad[-1]

    run(main())


def test_lane_limit():
    app = create_app(websocket=WebSocketSettings(max_lanes=2))

    async def main(url):
        async with await WSClient.connect(url) as ws:
            for lane in ("a", "b"):
                checked(await ws.turn(input="x", stream_id=lane, store=False))
            events = await ws.turn(input="x", stream_id="c")
            assert error_code(events) == "websocket_stream_limit_reached"
            assert events[-1]["stream_id"] == "c"
            checked(await ws.turn(input="x", stream_id="a", store=False))  # still usable

    with serve_in_thread(app) as url:
        run(main(url))


def test_generate_false_warms_up_without_generating(url):
    async def main():
        async with await WSClient.connect(url) as ws:
            warm = checked(
                await ws.turn(
                    input="What is the weather in Paris?",
                    tools=[WEATHER],
                    store=False,
                    generate=False,
                    instructions="be brief",
                )
            )
            assert [e["type"] for e in warm] == ["response.created", "response.completed"]
            response = response_of(warm)
            assert response["output"] == [] and response["instructions"] == "be brief"
            events = checked(
                await ws.turn(
                    input=[],
                    tools=[WEATHER],
                    tool_choice="required",
                    store=False,
                    previous_response_id=response["id"],
                )
            )
            assert response_of(events)["output"][-1]["type"] == "function_call"

    run(main())


def test_lifetime_limit_ends_the_connection():
    app = create_app(websocket=WebSocketSettings(lifetime_seconds=0.5))

    async def main(url):
        async with connect(ws_url(url)) as ws:
            await ws.send(
                json.dumps({"type": "response.create", "model": "gpt-oss-20b", "input": "x"})
            )
            while json.loads(await ws.recv())["type"] != "response.completed":
                pass
            event = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert event["error"]["code"] == "websocket_connection_limit_reached"
            assert "(0.00833333 minutes)" in event["error"]["message"]
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 5)
            assert closed.value.rcvd.code == 1000

    with serve_in_thread(app) as url:
        run(main(url))


def test_hostile_frames_get_error_events_and_the_connection_stays_usable():
    app = create_app(websocket=WebSocketSettings(max_frame_bytes=4096))
    create = {"type": "response.create", "model": "gpt-oss-20b", "input": "x"}
    cases = [
        ("{oops", "invalid_json"),
        (b"\x00\x01", "invalid_frame"),
        (json.dumps({**create, "input": "y" * 5000}), "frame_too_large"),
        (json.dumps({"type": "response.cancel"}), "invalid_value"),
        (json.dumps({"model": "gpt-oss-20b"}), "missing_required_parameter"),
        (json.dumps({**create, "stream": False}), "invalid_value"),
        (json.dumps({**create, "background": True}), "unsupported_parameter"),
        (json.dumps({**create, "temperature": 5}), "invalid_value"),
        (json.dumps({**create, "model": "nope"}), "model_not_found"),
        (json.dumps({**create, "input": [{"type": "bogus"}]}), None),
    ]

    async def main(url):
        async with await WSClient.connect(url) as ws:
            for frame, code in cases:
                await ws.send(frame)
                event = await ws.recv()
                assert event["type"] == "error" and event["status"] >= 400, (frame, event)
                assert code is None or event["error"]["code"] == code, (frame, event)
                assert set(event["error"]) >= {"type", "code", "message", "param"}
            checked(await ws.turn(input="still here", stream=True))

    with serve_in_thread(app) as url:
        run(main(url))


def test_disconnect_mid_response_ends_the_engine_request():
    app = create_app(EngineConfig(stream_interval=1, tokens_per_second=200))

    async def main(url):
        async with connect(ws_url(url)) as ws:
            await ws.send(
                json.dumps({"type": "response.create", "model": "gpt-oss-20b", "input": "x"})
            )
            for _ in range(5):
                await ws.recv()
            assert httpx.get(f"{url}/health").json()["active_streams"] == 1
        deadline = time.monotonic() + 5
        while httpx.get(f"{url}/health").json()["active_streams"] != 0:
            assert time.monotonic() < deadline, "the engine request outlived its client"
            await asyncio.sleep(0.02)

    with serve_in_thread(app) as url:
        run(main(url))


@pytest.mark.parametrize(
    "settings, second",
    [(WebSocketSettings(enabled=False), False), (WebSocketSettings(max_connections=1), True)],
)
def test_refused_upgrades_get_426_with_an_openai_body(settings, second):
    app = create_app(websocket=settings)

    async def main(url):
        first = await WSClient.connect(url) if second else None
        with pytest.raises(InvalidStatus) as refused:
            await connect(ws_url(url))
        if first is not None:
            await first.close()
        response = refused.value.response
        assert response.status_code == 426
        error = json.loads(response.body)["error"]
        assert error["type"] == "invalid_request_error" and error["message"]

    with serve_in_thread(app) as url:
        run(main(url))


def test_h11_protocol_serves_websocket_too():
    with serve_in_thread(create_app(), http="h11") as url:
        behaviours = run(conformance(url))
    assert all(b.ok for b in behaviours), [(b.name, b.detail) for b in behaviours if not b.ok]
