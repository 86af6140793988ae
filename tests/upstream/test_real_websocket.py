# SPDX-License-Identifier: Apache-2.0
"""The ``websocket`` group on upstream's own ``openai_server`` (CPU, fake engine, real uvicorn).

Runs for each tree of ``TRTLLM_SOURCE_DIRS`` / ``TRTLLM_SOURCE_DIR`` with an
``openai_server.py``; skips with the reason otherwise. Contract: unpatched, upstream refuses
the upgrade; with the plugin, ``GET /v1/responses`` upgrades and each ``response.create`` runs
upstream's own POST handler: a text turn, a tool loop continued with ``store: false`` from the
socket's cache, every event sequence strict-checker clean and the same at stream_interval 1
and 20; the WebSocket behaviours of the Open Responses conformance suite (sequential turns,
continuation, reconnect with ``store: false`` -> ``previous_response_not_found`` then a fresh
turn, an unknown id, a failed continuation evicting its parent); ``store: true`` continued on
a new connection through upstream's store; ``TRTLLM_STREAM_FIX_WEBSOCKET=off`` -> 426 with an
OpenAI-shaped body.
"""

from __future__ import annotations

import json
import re

import pytest
from test_real_server import _trees  # the configured trees (skips with the reason)

from trtllm_stream_fix.checker.responses import check_responses_events
from trtllm_stream_fix.differential.visible import client_visible
from trtllm_stream_fix.plugin.realstub.serve_matrix import MODEL, WEATHER_TOOL, running_server

pytestmark = pytest.mark.cpu_only

TERMINAL = ("response.completed", "response.incomplete", "response.failed")


@pytest.fixture(scope="module", params=_trees())
def tree(request):
    return request.param


@pytest.fixture(scope="module")
def served(tree):
    """Base URLs of the tree's server with the plugin at stream_interval 1 and 20."""
    with running_server(tree, plugin=True, stream_interval=1) as one:
        with running_server(tree, plugin=True, stream_interval=20) as twenty:
            yield {1: one, 20: twenty}


def _ws_url(url: str) -> str:
    return url.replace("http://", "ws://", 1) + "/v1/responses"


def _connect(url: str):
    from websockets.sync.client import connect

    return connect(_ws_url(url), open_timeout=30, max_size=None)


def _turn(ws, **body) -> list[dict]:
    """One ``response.create``; the events up to its terminal one (or a refusal's error)."""
    ws.send(json.dumps({"type": "response.create", "model": MODEL, **body}))
    events: list[dict] = []
    while True:
        event = json.loads(ws.recv(timeout=60))
        events.append(event)
        if event["type"] in TERMINAL or (event["type"] == "error" and len(events) == 1):
            return events


def _checked(events: list[dict]) -> list[dict]:
    check = check_responses_events(events)
    assert check.ok, check.violations[:3]
    return events


def _comparable(turns: list[list[dict]]) -> list:
    """Client-visible events, response ids numbered in order of appearance, no timestamps."""
    visible = [client_visible(events) for events in turns]
    for events in visible:
        for event in events:
            if isinstance(event.get("response"), dict):
                event["response"].pop("created_at", None)
                event["response"].pop("completed_at", None)
    text = json.dumps(visible)
    ids: dict[str, str] = {}
    for found in re.findall(r'"(resp_[0-9A-Za-z]+)"', text):
        ids.setdefault(found, f"resp_{len(ids)}")
    for found, canonical in ids.items():
        text = text.replace(found, canonical)
    return json.loads(text)


def _tool_loop(url: str) -> list[list[dict]]:
    with _connect(url) as ws:
        first = _turn(ws, input="What is the weather in Paris?", tools=[WEATHER_TOOL], store=False)
        final = first[-1]["response"]
        calls = [item for item in final["output"] if item["type"] == "function_call"]
        assert calls, final["output"]
        output = {"type": "function_call_output", "call_id": calls[0]["call_id"], "output": "21C"}
        second = _turn(
            ws, input=[output], tools=[WEATHER_TOOL], store=False, previous_response_id=final["id"]
        )
    return [first, second]


def test_upstream_refuses_the_upgrade(tree):
    """The failing reproduction: upstream's app has no WebSocket route."""
    from websockets.exceptions import InvalidStatus

    with running_server(tree, plugin=False) as url:
        with pytest.raises(InvalidStatus) as refused:
            with _connect(url):
                pass
    assert refused.value.response.status_code in (403, 404)


def test_a_text_turn_and_sequential_turns(served):
    with _connect(served[20]) as ws:
        first = _checked(_turn(ws, input="Count from 1 to 3.", store=False))
        second = _checked(_turn(ws, input="second", store=False))
    assert first[-1]["type"] == second[-1]["type"] == "response.completed"
    assert [e["sequence_number"] for e in first] == list(range(len(first)))


def test_a_tool_loop_with_store_false_is_the_same_at_intervals_1_and_20(served):
    at_1, at_20 = _tool_loop(served[1]), _tool_loop(served[20])
    for turns in (at_1, at_20):
        for events in turns:
            _checked(events)
        assert turns[1][-1]["type"] == "response.completed"
        assert any(i["type"] == "message" for i in turns[1][-1]["response"]["output"])
    assert _comparable(at_1) == _comparable(at_20)


def test_reconnect_with_store_false_is_previous_response_not_found_then_a_fresh_turn(served):
    with _connect(served[20]) as ws:
        first = _turn(ws, input="Remember the code word: cobalt", store=False)
        cont = _turn(
            ws, input="What was it?", store=False, previous_response_id=first[-1]["response"]["id"]
        )
    assert _checked(cont)[-1]["type"] == "response.completed"
    with _connect(served[20]) as ws:
        lost = _turn(
            ws, input="again", store=False, previous_response_id=first[-1]["response"]["id"]
        )
        missing = _turn(
            ws, input="x", store=False, previous_response_id="resp_openresponses_missing_1"
        )
        fresh = _turn(ws, input="Remember the code word: cobalt. What was it?", store=False)
    for event in (lost[-1], missing[-1]):
        assert event["type"] == "error", event
        assert event["error"]["code"] == "previous_response_not_found"
    assert _checked(fresh)[-1]["type"] == "response.completed"


def test_a_failed_continuation_evicts_its_parent(served):
    with _connect(served[20]) as ws:
        seed = _turn(ws, input="hello", store=False)
        parent = seed[-1]["response"]["id"]
        output = {"type": "function_call_output", "call_id": "call_openresponses_missing"}
        failed = _turn(
            ws, input=[{**output, "output": "x"}], store=False, previous_response_id=parent
        )
        again = _turn(ws, input="again", store=False, previous_response_id=parent)
    assert failed[-1]["type"] in ("error", "response.failed"), failed[-1]
    assert again[-1]["type"] == "error"
    assert again[-1]["error"]["code"] == "previous_response_not_found"


def test_store_true_continues_through_upstreams_store_on_a_new_connection(served):
    with _connect(served[20]) as ws:
        first = _turn(ws, input="hi", store=True)
    with _connect(served[20]) as ws:
        second = _turn(
            ws, input="again", store=True, previous_response_id=first[-1]["response"]["id"]
        )
    assert _checked(second)[-1]["type"] == "response.completed"


def test_the_operator_switch_answers_426_with_an_openai_body(tree, monkeypatch):
    from websockets.exceptions import InvalidStatus

    monkeypatch.setenv("TRTLLM_STREAM_FIX_WEBSOCKET", "off")
    with running_server(tree, plugin=True) as url:
        with pytest.raises(InvalidStatus) as refused:
            with _connect(url):
                pass
    response = refused.value.response
    assert response.status_code == 426
    error = json.loads(response.body)["error"]
    assert (
        error["type"] == "invalid_request_error"
        and "TRTLLM_STREAM_FIX_WEBSOCKET" in error["message"]
    )


def _sdk_turn(conn, **body) -> list[dict]:
    conn.response.create(model=MODEL, **body)
    events = []
    for event in conn:
        events.append(event.model_dump(mode="json", exclude_none=True))
        if event.type in TERMINAL or (event.type == "error" and len(events) == 1):
            return events
    raise AssertionError("the connection ended inside a turn")


def test_openai_python_runs_a_tool_loop_over_the_socket(served):
    """openai-python's ``responses.connect()``: a tool call, its output continued with
    ``store: false`` from the socket's cache, the strict checker on every event."""
    import openai

    client = openai.OpenAI(base_url=f"{served[20]}/v1", api_key="unused", max_retries=0)
    with client.responses.connect() as conn:
        first = _checked(
            _sdk_turn(
                conn, input="What is the weather in Paris?", tools=[WEATHER_TOOL], store=False
            )
        )
        final = first[-1]["response"]
        call = next(item for item in final["output"] if item["type"] == "function_call")
        output = {"type": "function_call_output", "call_id": call["call_id"], "output": "21C"}
        second = _checked(
            _sdk_turn(
                conn,
                input=[output],
                tools=[WEATHER_TOOL],
                store=False,
                previous_response_id=final["id"],
            )
        )
    assert second[-1]["type"] == "response.completed"
    assert any(i["type"] == "message" for i in second[-1]["response"]["output"])


def test_the_open_responses_websocket_behaviours_hold(served):
    """The six WebSocket behaviours of the Open Responses conformance suite
    (``testing.ws_client.conformance``), each turn strict-checker clean."""
    import asyncio

    from trtllm_stream_fix.testing.ws_client import conformance

    behaviours = asyncio.run(conformance(served[20], {"model": MODEL}))
    failed = [f"{b.name}: {b.detail}" for b in behaviours if not b.ok]
    assert len(behaviours) == 6 and not failed, failed


DISCONNECT = r"""
import asyncio, json, sys, time
from trtllm_stream_fix.plugin.bootstrap import register
register()  # the import hook, as the .pth file registers it
from trtllm_stream_fix.plugin.realstub import server as realstub_server
from trtllm_stream_fix.plugin.realstub.server import EngineSettings, FakeGeneration, build_app
aborted = []
step = FakeGeneration._step
async def slow_step(self):  # an engine response every 20 ms: the turn outlives the socket
    await asyncio.sleep(0.02)
    await step(self)
FakeGeneration._step = slow_step
def abort(self):  # upstream's watcher calls it; the steps left show the turn was cut short
    aborted.append(len(self._steps))
    self._aborted = True
FakeGeneration.abort = abort
app, server, _ = build_app(sys.argv[1], EngineSettings(stream_interval=1))
from starlette.testclient import TestClient
with TestClient(app) as client:
    with client.websocket_connect("/v1/responses") as ws:
        ws.send_text(json.dumps({"type": "response.create", "model": "gpt-oss-20b",
                                 "input": "hi, seed 3", "store": False}))
        first = json.loads(ws.receive_text())["type"]
    deadline = time.monotonic() + 10  # upstream's watcher polls once a second
    while not aborted and time.monotonic() < deadline:
        time.sleep(0.05)
print("RESULT " + json.dumps({"first": first, "aborted": aborted}))
"""


def test_a_socket_closed_mid_turn_aborts_the_engine_request(tree):
    """The client leaves after ``response.created``: upstream's own ``await_disconnected``
    sees the turn's raw request disconnected and aborts the unfinished generation."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", DISCONNECT, tree], capture_output=True, text=True, timeout=300
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, proc.stderr[-3000:]
    result = json.loads(line[len("RESULT ") :])
    assert result["first"] == "response.created"
    assert len(result["aborted"]) == 1 and result["aborted"][0] > 0, result  # steps were left
