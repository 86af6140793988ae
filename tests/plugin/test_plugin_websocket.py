# SPDX-License-Identifier: Apache-2.0
"""The ``websocket`` patch group against the TensorRT-LLM stand-in: ``GET /v1/responses``
upgraded on upstream's app, each ``response.create`` fed through the app's own ``POST
/v1/responses`` handler (``openai_responses(request, raw_request)``) with the plugin's
processor. A text turn, a tool loop continued with ``store: false`` from the socket's cache,
upstream's error answers as ``error`` events, 426 when the operator turned it off, refusal
with the reason (shape, no WebSocket library), a closed socket aborting the engine request;
every event sequence passes the strict checker and is the same at stream_interval 1 and 20.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "standin"))
import plugin_harness

plugin_harness.use_standin()
uninstalled = plugin_harness.uninstalled

from tensorrt_llm.serve import openai_server

from trtllm_stream_fix.checker.responses import check_responses_events
from trtllm_stream_fix.plugin import installer as install_mod
from trtllm_stream_fix.plugin import websocket_route
from trtllm_stream_fix.plugin.installer import group_states, install, last_refusals, uninstall
from trtllm_stream_fix.plugin.targets import upstream_class

pytestmark = pytest.mark.cpu_only

SERVER = "tensorrt_llm.serve.openai_server.OpenAIServer"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
TERMINAL = ("response.completed", "response.incomplete", "response.failed", "error")


@pytest.fixture(autouse=True)
def clean(uninstalled, monkeypatch):
    monkeypatch.delenv(websocket_route.ENV, raising=False)
    yield


def _engine(split: int, delay: float = 0.0):
    """The fake engine of the real-tree harness: what it generates follows the prompt (a tool
    call when functions are declared, an answer after a tool output), ``split`` tokens per
    engine response."""
    import asyncio
    import dataclasses

    from tensorrt_llm.executor import GenerationResult

    from trtllm_stream_fix.plugin.realstub.server import choose_output
    from trtllm_stream_fix.sim.model import engine_responses

    async def engine(prompt, sampling_params):
        output = dataclasses.replace(choose_output(prompt), stop_token_trimmed=False)
        res = GenerationResult(1, sampling_params, prompt)
        for response in engine_responses(output, split):
            if delay:
                await asyncio.sleep(delay)
            res._handle_sequence(
                list(response.token_ids_diff),
                done=response.finished,
                finish_reason=response.finish_reason,
            )
            yield res

    return engine


def _server(split: int = 1, delay: float = 0.0):
    return openai_server.OpenAIServer(_engine(split, delay))


def _turn(ws, **body) -> list[dict]:
    """One ``response.create`` and the events up to its terminal one."""
    ws.send_text(json.dumps({"type": "response.create", "model": "gpt-oss-20b", **body}))
    events: list[dict] = []
    while True:
        event = json.loads(ws.receive_text())
        events.append(event)
        if event["type"] in TERMINAL[:3] or (event["type"] == "error" and len(events) == 1):
            return events


def _checked(events: list[dict]) -> list[dict]:
    check = check_responses_events(events)
    assert check.ok, check.violations[:3]
    return events


def _tool_loop(split: int) -> list[list[dict]]:
    """Turn 1 (tool call), turn 2 (its output, store: false, only the new item plus
    previous_response_id), on one connection."""
    from starlette.testclient import TestClient

    with TestClient(_server(split).app) as client:
        with client.websocket_connect("/v1/responses") as ws:
            first = _turn(ws, input="What is the weather in Paris?", tools=[WEATHER], store=False)
            final = first[-1]["response"]
            calls = [item for item in final["output"] if item["type"] == "function_call"]
            assert calls, final["output"]
            output = {"type": "function_call_output", "call_id": calls[0]["call_id"]}
            second = _turn(
                ws,
                input=[{**output, "output": "21C, sunny"}],
                tools=[WEATHER],
                store=False,
                previous_response_id=final["id"],
            )
    return [first, second]


def _comparable(turns: list[list[dict]]) -> list[list[dict]]:
    """The turns' client-visible events with response ids numbered in order of appearance."""
    ids: dict[str, str] = {}
    text = json.dumps([plugin_harness.comparable(events) for events in turns])
    for found in re.findall(r'"(resp_[0-9a-f]+)"', text):
        ids.setdefault(found, f"resp_{len(ids)}")
    for found, canonical in ids.items():
        text = text.replace(found, canonical)
    return json.loads(text)


def test_upstream_app_has_no_websocket_route_without_the_group():
    """The failing reproduction: upstream's app refuses the upgrade."""
    from starlette.testclient import TestClient
    from starlette.websockets import WebSocketDisconnect

    with TestClient(_server().app) as client:
        with pytest.raises(WebSocketDisconnect):
            with client.websocket_connect("/v1/responses"):
                pass


def test_install_rebinds_the_server_class_and_uninstall_restores_it():
    original = openai_server.OpenAIServer
    report = install()
    assert {o.target: o.status for o in report.outcomes}[SERVER] == "patched"
    assert group_states()["websocket"] == "installed"
    assert upstream_class(openai_server.OpenAIServer) is original
    server = _server()
    assert any(getattr(r, "path", None) == "/v1/responses" for r in server.app.routes)
    uninstall()
    assert openai_server.OpenAIServer is original


def test_a_text_turn_streams_upstreams_events_over_the_socket():
    from starlette.testclient import TestClient

    install()
    with TestClient(_server().app) as client:
        with client.websocket_connect("/v1/responses") as ws:
            events = _checked(_turn(ws, input="scenario reasoning_answer", store=False))
            again = _checked(_turn(ws, input="scenario short_answer", store=False))
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.completed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert again[-1]["response"]["id"] != events[-1]["response"]["id"]


def test_a_tool_loop_continues_from_the_socket_cache_and_is_the_same_at_intervals_1_and_20():
    install()
    at_1 = _tool_loop(1)
    at_20 = _tool_loop(20)
    for turns in (at_1, at_20):
        for events in turns:
            _checked(events)
        assert turns[1][-1]["type"] == "response.completed"
        assert any(i["type"] == "message" for i in turns[1][-1]["response"]["output"])
    assert _comparable(at_1) == _comparable(at_20)


def test_a_store_true_turn_continues_through_upstreams_store_on_a_new_connection():
    from starlette.testclient import TestClient

    install()
    with TestClient(_server().app) as client:
        with client.websocket_connect("/v1/responses") as ws:
            first = _turn(ws, input="scenario short_answer", store=True)
        with client.websocket_connect("/v1/responses") as ws:
            second = _turn(
                ws, input="again", store=True, previous_response_id=first[-1]["response"]["id"]
            )
            unknown = _turn(ws, input="x", store=False, previous_response_id="resp_missing")
            stored = _turn(ws, input="x", store=True, previous_response_id="resp_missing2")
    assert _checked(second)[-1]["type"] == "response.completed"
    for event in (unknown[-1], stored[-1]):  # the socket's answer; upstream's 404
        assert event["type"] == "error", event
        assert event["error"]["code"] == "previous_response_not_found"
    assert stored[-1]["status"] == 404 and stored[-1]["error"]["param"] == "previous_response_id"


def test_upstreams_error_answer_is_an_openai_error_event_and_the_socket_stays_usable():
    from starlette.testclient import TestClient

    install()
    with TestClient(_server().app) as client:
        with client.websocket_connect("/v1/responses") as ws:
            bad = _turn(ws, input=[{"type": "item_reference"}], store=False)
            invalid = _turn(ws, input="x", store=False, max_output_tokens="many")
            fine = _turn(ws, input="scenario preamble_answer", store=False)
    for event in (bad[-1], invalid[-1]):
        assert event["type"] == "error", event
        assert event["status"] == 400
        assert event["error"]["type"] == "invalid_request_error"
        assert event["error"]["message"]
    assert invalid[-1]["error"]["param"] == "max_output_tokens"
    assert _checked(fine)[-1]["type"] == "response.completed"


def test_the_operator_switch_answers_the_upgrade_426_with_an_openai_body(monkeypatch):
    from starlette.testclient import TestClient, WebSocketDenialResponse

    monkeypatch.setenv(websocket_route.ENV, "off")
    install()
    assert group_states()["websocket"] == "installed"
    with TestClient(_server().app) as client:
        with pytest.raises(WebSocketDenialResponse) as denied:
            with client.websocket_connect("/v1/responses"):
                pass
    assert denied.value.status_code == 426
    error = denied.value.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert websocket_route.ENV in error["message"]


def test_a_bad_switch_value_names_the_variable(monkeypatch):
    monkeypatch.setenv(websocket_route.ENV, "maybe")
    with pytest.raises(ValueError, match=websocket_route.ENV):
        websocket_route.enabled()


def test_a_closed_socket_aborts_the_engine_request():
    from starlette.testclient import TestClient

    install()
    server = _server(split=1, delay=0.02)
    server.disconnect_poll = 0.01
    with TestClient(server.app) as client:
        with client.websocket_connect("/v1/responses") as ws:
            ws.send_text(
                json.dumps({"type": "response.create", "input": "scenario reasoning_answer"})
            )
            assert json.loads(ws.receive_text())["type"] == "response.created"
        deadline = time.monotonic() + 5
        while not server.aborted and time.monotonic() < deadline:
            time.sleep(0.02)
    assert len(server.aborted) == 1


def test_a_finished_turn_aborts_nothing():
    from starlette.testclient import TestClient

    install()
    server = _server()
    server.disconnect_poll = 0.01
    with TestClient(server.app) as client:
        with client.websocket_connect("/v1/responses") as ws:
            _turn(ws, input="scenario short_answer", store=False)
            time.sleep(0.1)
    assert server.aborted == []


def test_refused_with_the_reason_where_no_websocket_library_is_installed(monkeypatch):
    monkeypatch.setattr(websocket_route, "LIBRARIES", ("no_such_websocket_library",))
    original = openai_server.OpenAIServer
    report = install()
    assert {o.target: o.status for o in report.outcomes}[SERVER] == "refused"
    assert "neither websockets nor wsproto" in last_refusals()["websocket"]
    assert openai_server.OpenAIServer is original
    assert group_states()["responses"] == "installed"  # the other groups are independent


def test_refused_with_the_reason_where_the_handler_shape_is_not_recorded(monkeypatch):
    async def openai_responses(self, request):  # no raw_request: cannot be fed a socket
        return None

    monkeypatch.setattr(openai_server.OpenAIServer, "openai_responses", openai_responses)
    report = install()
    assert {o.target: o.status for o in report.outcomes}[SERVER] == "refused"
    assert "OpenAIServer.openai_responses" in last_refusals()["websocket"]
    assert "raw_request" in last_refusals()["websocket"]


def test_an_app_without_the_post_route_answers_426(monkeypatch):
    from starlette.testclient import TestClient, WebSocketDenialResponse

    install()
    server = _server()
    server.app.router.routes[:] = [
        r for r in server.app.routes if getattr(r, "methods", None) != {"POST"}
    ]
    with TestClient(server.app) as client:
        with pytest.raises(WebSocketDenialResponse) as denied:
            with client.websocket_connect("/v1/responses"):
                pass
    assert denied.value.status_code == 426
    assert "no POST /v1/responses route" in denied.value.json()["error"]["message"]


def test_doctor_judges_upstreams_class_not_the_subclass():
    install()
    checks = {c.target.dotted: c for c in (install_mod.check(t) for t in _targets())}
    assert all(c.ok for c in checks.values()), [c.describe() for c in checks.values()]


def _targets():
    from trtllm_stream_fix.plugin import registry

    return registry.patch("websocket-route").all_checks


def test_a_stream_that_ends_without_a_terminal_event_ends_the_turn_with_an_error_event():
    """A handler whose stream stops after ``response.created`` (a processor that loses the
    terminal event): the client gets an ``error`` event instead of waiting forever."""
    from types import SimpleNamespace

    from fastapi import FastAPI
    from starlette.responses import StreamingResponse
    from starlette.testclient import TestClient

    from trtllm_stream_fix.plugin.websocket_route import add_route

    created = {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1"}}

    async def frames():
        yield f"event: response.created\ndata: {json.dumps(created)}\n\n"

    class Server:
        async def openai_responses(self, request, raw_request):
            return StreamingResponse(frames(), media_type="text/event-stream")

    Server.openai_responses.__annotations__["request"] = openai_server.ResponsesRequest
    app = FastAPI()
    app.add_api_route("/v1/responses", Server().openai_responses, methods=["POST"])
    add_route(SimpleNamespace(enable_store=False), app)
    with TestClient(app) as client, client.websocket_connect("/v1/responses") as ws:
        ws.send_text(json.dumps({"type": "response.create", "input": "hi"}))
        got = [json.loads(ws.receive_text()), json.loads(ws.receive_text())]
    assert got[0] == created
    assert got[1]["type"] == "error" and got[1]["status"] == 500
