# SPDX-License-Identifier: Apache-2.0
"""Hostile client frames on the simulated server's WebSocket route: values the POST's JSON
encoder cannot send back (a lone surrogate, an integer beyond 64 bits) are a 400 ``error``
event naming the field, never a 500, and the connection stays usable; stream_id edge
values; another connection's ``previous_response_id``; a flood of bad frames."""

from __future__ import annotations

import asyncio

import pytest

from trtllm_stream_fix.checker.responses import check_responses_events
from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
from trtllm_stream_fix.testing.ws_client import WSClient, error_code, response_of

pytestmark = pytest.mark.cpu_only
CREATE = '{"type": "response.create", "model": "gpt-oss-120b", "seed": 1, '


@pytest.fixture(scope="module")
def url():
    with serve_in_thread(create_app(EngineConfig(stream_interval=20))) as base:
        yield base


async def _after(ws: WSClient, frame: str, lane: str | None = None) -> list[dict]:
    await ws.send(frame)
    events = await ws.events(lane, timeout=5)
    assert response_of(await ws.turn(input="still there?", seed=1))["status"] == "completed"
    return events


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ('"input": "\\ud800"', "input"),
        ('"input": [{"role": "user", "content": "a\\udfffb"}]', "input[0].content"),
        ('"input": "hi", "metadata": {"\\ud83d": "x"}', "metadata"),
        ('"input": "hi", "max_output_tokens": 36893488147419103232', "max_output_tokens"),
    ],
)
def test_unsendable_values_are_a_400_naming_the_field(url, fields, param):
    async def go():
        async with await WSClient.connect(url) as ws:
            return await _after(ws, CREATE + fields + ', "stream_id": "s1"}', "s1")

    events = asyncio.run(go())
    last = events[-1]
    assert last["type"] == "error", last
    assert last["status"] == 400, last
    assert last["error"]["type"] == "invalid_request_error"
    assert last["error"]["code"] == "invalid_value"
    assert last["error"]["param"] == param
    assert last["stream_id"] == "s1"


@pytest.mark.parametrize(
    ("stream_id", "code"),
    [
        (5, "invalid_stream_id"),
        ([], "invalid_stream_id"),
        ("", "invalid_stream_id"),
        ("é", "invalid_stream_id"),
        ("a" * 257, "invalid_stream_id"),
        ("..", None),
        (None, None),
    ],
)
def test_stream_id_edges(url, stream_id, code):
    async def go():
        async with await WSClient.connect(url) as ws:
            body = {"type": "response.create", "model": "gpt-oss-120b", "input": "hi"}
            await ws.send({**body, "stream_id": stream_id})
            lane = stream_id if isinstance(stream_id, str) and code is None else None
            events = await ws.events(lane, timeout=5)
            assert response_of(await ws.turn(input="again"))["status"] == "completed"
            return events

    assert error_code(asyncio.run(go())) == code


def test_a_flood_of_bad_frames_gets_one_error_each_then_a_turn(url):
    async def go():
        async with await WSClient.connect(url) as ws:
            for _ in range(2000):
                await ws.send('{"type": "nope"}')
            codes = [error_code([await ws.recv(timeout=5)]) for _ in range(2000)]
            assert response_of(await ws.turn(input="hi"))["status"] == "completed"
            return codes

    assert set(asyncio.run(go())) == {"invalid_value"}


TERMINAL = ("response.completed", "response.incomplete", "response.failed")


@pytest.mark.parametrize("stream_interval", [1, 20])
def test_malformed_generations_on_lanes_pass_the_strict_checker(stream_interval):
    """Broken Harmony generations (an ``error`` event, then ``response.failed``) and random
    ones, 32 lanes at once: each lane's events, read through its terminal response event,
    pass the strict checker."""
    jobs = [("malformed_missing_start", 1), *(("random", seed) for seed in range(31))]

    async def go(base: str) -> list[tuple[str, int, list[str]]]:
        bad = []
        async with await WSClient.connect(base) as ws:
            for k, (scenario, seed) in enumerate(jobs):
                await ws.send(
                    {
                        "type": "response.create",
                        "model": "gpt-oss-120b",
                        "input": "hi",
                        "scenario": scenario,
                        "seed": seed,
                        "stream_id": f"l{k}",
                    }
                )
            for k, (scenario, seed) in enumerate(jobs):
                events = [await ws.recv(f"l{k}", timeout=5)]
                while events[-1]["type"] not in TERMINAL and "status" not in events[-1]:
                    events.append(await ws.recv(f"l{k}", timeout=5))
                plain = [{n: v for n, v in e.items() if n != "stream_id"} for e in events]
                result = check_responses_events(plain)
                if not result.ok or events[-1]["type"] not in TERMINAL:
                    bad.append((scenario, seed, [*result.violations[:2], events[-1]["type"]]))
        return bad

    with serve_in_thread(create_app(EngineConfig(stream_interval=stream_interval))) as base:
        assert asyncio.run(go(base)) == []
