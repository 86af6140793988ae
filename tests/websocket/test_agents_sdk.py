# SPDX-License-Identifier: Apache-2.0
"""The OpenAI Agents SDK runs a tool-calling agent over Responses WebSocket mode
(``OpenAIProvider(use_responses_websocket=True)``) against the simulated server: with the
SDK's default full-history turns, and with ``store: false`` turns chained by
``previous_response_id`` from the connection's cache. Every model response's raw events, as
the SDK received them, pass the strict checker."""

from __future__ import annotations

import asyncio

import pytest

from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
from trtllm_stream_fix.testing.ws_client import checked

agents = pytest.importorskip("agents")
pytest.importorskip("websockets")

MODEL = "gpt-oss-20b"
TERMINAL = {"response.completed", "response.incomplete", "response.failed"}


@pytest.fixture(scope="module")
def app():
    return create_app(EngineConfig(stream_interval=20))


@pytest.fixture(scope="module")
def base_url(app):
    with serve_in_thread(app) as url:
        yield f"{url}/v1"


def run_agent(base_url: str, question: str, store: bool | None, chain: bool):
    """The agent's final output, its tool calls and each model response's raw events."""
    from agents import Agent, ModelSettings, RunConfig, Runner, function_tool
    from agents.models.openai_provider import OpenAIProvider

    calls: list[str] = []

    @function_tool
    def get_weather(location: str) -> str:
        """The weather for a location."""
        calls.append(location)
        return f"Sunny and 22C in {location}."

    agent = Agent(
        name="weather",
        instructions="Answer with the weather tool.",
        model=MODEL,
        tools=[get_weather],
        model_settings=ModelSettings(store=store),
    )
    provider = OpenAIProvider(
        api_key="sk-local", base_url=base_url, use_responses=True, use_responses_websocket=True
    )
    config = RunConfig(model_provider=provider, tracing_disabled=True)

    async def main():
        streams: list[list[dict]] = [[]]
        try:
            result = Runner.run_streamed(
                agent, question, run_config=config, auto_previous_response_id=chain
            )
            async for event in result.stream_events():
                if event.type != "raw_response_event":
                    continue
                streams[-1].append(event.data.model_dump(mode="json", exclude_none=True))
                if event.data.type in TERMINAL:
                    streams.append([])
            return result.final_output, streams[:-1]
        finally:
            await provider.aclose()

    output, streams = asyncio.run(asyncio.wait_for(main(), 120))
    return output, calls, streams


@pytest.mark.parametrize(
    "store, chain", [(None, False), (False, True)], ids=["full-history", "store-false-chained"]
)
def test_tool_calling_agent_over_websocket(app, base_url, store, chain):
    gate = app.state.websocket_gate
    before = gate.total
    output, calls, streams = run_agent(base_url, "What is the weather in Paris?", store, chain)
    assert gate.total == before + 1  # one WebSocket connection carried every turn
    assert calls, "the agent called no tool"
    assert len(streams) >= 2  # the call, then the answer
    for events in streams:
        checked(events)
    assert streams[-1][-1]["response"]["output"][-1]["type"] == "message"
    assert "22C" in output
    if chain:
        ids = [s[-1]["response"]["id"] for s in streams]
        previous = [s[-1]["response"].get("previous_response_id") for s in streams]
        assert previous[1:] == ids[:-1]  # each turn continued the last from the socket cache
