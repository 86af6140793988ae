# SPDX-License-Identifier: Apache-2.0
"""Many concurrent streams and client disconnects on the local server."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from trtllm_stream_fix.checker.client import stream_responses
from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread


@pytest.fixture(scope="module")
def base_url():
    # 2,000 tokens/s per stream keeps all 32 streams open at the same time.
    app = create_app(EngineConfig(stream_interval=3, max_draft_tokens=2, tokens_per_second=2000))
    with serve_in_thread(app) as url:
        yield url


def _texts(items: list[dict]) -> list[str]:
    return [it["arguments"] if it["type"] == "function_call" else it["text"] for it in items]


def _answer_texts(answer: dict) -> list[str]:
    texts = []
    for item in answer["output"]:
        if item["type"] == "function_call":
            texts.append(item["arguments"])
        else:
            texts.append("".join(part["text"] for part in item.get("content") or []))
    return texts


def test_32_concurrent_streams_are_valid_without_cross_talk(base_url):
    bodies = [{"model": "gpt-oss-20b", "input": f"question number {i}"} for i in range(32)]
    url = f"{base_url}/v1/responses"
    peak = 0

    async def watch(stop: asyncio.Event, client: httpx.AsyncClient):
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, (await client.get(f"{base_url}/health")).json()["active_streams"])
            await asyncio.sleep(0.005)

    async def run():
        stop = asyncio.Event()
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(timeout=30, limits=limits) as client:
            watcher = asyncio.create_task(watch(stop, client))
            records = await asyncio.gather(
                *(stream_responses(client, url, b, idle_timeout=10, deadline=60) for b in bodies)
            )
            stop.set()
            await watcher
            answers = await asyncio.gather(*(client.post(url, json=b) for b in bodies))
        return records, [a.json() for a in answers]

    records, answers = asyncio.run(run())
    assert all(r.ok for r in records), [(r.outcome, r.violations[:2]) for r in records if not r.ok]
    assert len({r.request_id for r in records}) == 32
    for record, answer in zip(records, answers):
        # Each stream carries its own id on every lifecycle event and its own request's text.
        assert _texts(record.items) == _answer_texts(answer)
        assert all(
            record.request_id in e["data"]
            for e in record.events
            if e["event"].startswith("response.") and '"response":' in e["data"]
        )
    assert len({tuple(_texts(r.items)) for r in records}) > 16
    assert peak > 1


#: Each streaming route: its path, a request body for it, and its usage's output-token count.
ROUTES = {
    "responses": ("/v1/responses", {"input": "x"}, lambda usage: usage["output_tokens"]),
    "chat": (
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "x"}]},
        lambda usage: usage["completion_tokens"],
    ),
}


def _wait_for_no_streams(client: httpx.Client, url: str) -> dict:
    deadline = time.monotonic() + 5
    while client.get(f"{url}/health").json()["active_streams"] and time.monotonic() < deadline:
        time.sleep(0.02)
    return client.get(f"{url}/health").json()


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_client_disconnect_frees_request_state(http, route):
    path, request, _ = ROUTES[route]
    app = create_app(EngineConfig(stream_interval=1, tokens_per_second=50))
    with serve_in_thread(app, http=http) as url:
        body = {"model": "gpt-oss-20b", **request, "scenario": "reasoning_answer", "stream": True}
        with httpx.Client(timeout=10) as client:
            with client.stream("POST", f"{url}{path}", json=body) as response:
                chunks = response.iter_bytes()
                next(chunks)
                next(chunks)
                assert client.get(f"{url}/health").json()["active_streams"] == 1
            # leaving the block closes the connection mid-stream
            health = _wait_for_no_streams(client, url)
    assert health["active_streams"] == 0
    assert health["total_streams"] == 1


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_a_disconnect_ends_a_stream_that_waits_for_the_engine(http, route):
    # At 2 tokens/s the stream waits ~0.5 s for each engine response: the disconnect must
    # end it where it waits, not when the whole turn would have been generated.
    path, request, output_tokens = ROUTES[route]
    app = create_app(EngineConfig(stream_interval=1, tokens_per_second=2))
    with serve_in_thread(app, http=http) as url:
        body = {"model": "gpt-oss-20b", **request, "scenario": "reasoning_answer"}
        with httpx.Client(timeout=10) as client:
            with client.stream("POST", f"{url}{path}", json=body | {"stream": True}) as r:
                next(r.iter_bytes())
            health = _wait_for_no_streams(client, url)
            usage = client.post(f"{url}{path}", json=body, timeout=5).json()["usage"]
    assert output_tokens(usage) > 20  # the turn would take > 10 s at 2 tokens/s
    assert health["active_streams"] == 0
