# SPDX-License-Identifier: Apache-2.0
"""The ``compaction`` patch group against the TensorRT-LLM stand-in: ``POST
/v1/responses/compact`` on upstream's app with the summary from upstream's own
``generator.generate_async``; ``compaction`` input items expanded before upstream's request
preprocessing (a tampered blob an OpenAI 400 naming it); a create ending in
``compaction_trigger`` streaming exactly one compaction item; refused with the reason on an
app of another shape or without ``cryptography``; stacked with another group that
subclasses ``OpenAIServer``; the self-test's probe."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "standin"))
import plugin_harness

plugin_harness.use_standin()
uninstalled = plugin_harness.uninstalled

from tensorrt_llm.serve import openai_server, responses_utils

from trtllm_stream_fix.checker.responses import check_responses_events
from trtllm_stream_fix.compaction.prompt import COMPACTION_PROMPT
from trtllm_stream_fix.compaction.window import SUMMARY_PREFIX
from trtllm_stream_fix.plugin import installer as install_mod
from trtllm_stream_fix.plugin import registry
from trtllm_stream_fix.plugin.installer import install, uninstall
from trtllm_stream_fix.sim.compaction_model import summary_for_prompt
from trtllm_stream_fix.sim.model import named_output

pytestmark = pytest.mark.cpu_only

SERVER = "tensorrt_llm.serve.openai_server.OpenAIServer"
KEY = "TRTLLM_STREAM_FIX_COMPACTION_KEY"
CONVERSATION = [
    {"type": "message", "role": "user", "content": "Create hello.py printing hello"},
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Created hello.py."}],
    },
    {"type": "message", "role": "user", "content": "Now make it print the date too"},
]


@pytest.fixture(autouse=True)
def clean(uninstalled, monkeypatch):
    from cryptography.fernet import Fernet

    monkeypatch.setenv(KEY, Fernet.generate_key().decode())
    yield


def _engine(prompts: list):
    """The stand-in engine: the simulated summary for a compaction prompt, an answer for
    any other; every prompt recorded."""
    answer = plugin_harness.engine_for(named_output("reasoning_answer"), 20)

    async def engine(prompt, sampling_params):
        prompts.append(list(prompt))
        summary = summary_for_prompt(prompt)
        inner = answer if summary is None else plugin_harness.engine_for(summary, 7)
        async for res in inner(prompt, sampling_params):
            yield res

    return engine


def _server(prompts: list):
    install()
    return openai_server.OpenAIServer(_engine(prompts))


def _client(server):
    from starlette.testclient import TestClient

    return TestClient(server.app)


def _events(text: str) -> list[dict]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def _decode(tokens) -> str:
    return responses_utils._get_encoding().decode(tokens)


def _compact(client, items=CONVERSATION) -> dict:
    answer = client.post("/v1/responses/compact", json={"model": "gpt-oss-20b", "input": items})
    assert answer.status_code == 200, answer.text
    return answer.json()


def _ours(cls) -> bool:
    """Whether the compaction group's subclass is in ``cls``'s MRO."""
    return any(c.__module__.endswith("compaction_route") for c in cls.__mro__)


def test_install_subclasses_openai_server_and_uninstall_restores_it():
    original = openai_server.OpenAIServer
    outcomes = [o for o in install().outcomes if o.target == SERVER]
    assert outcomes and all(o.status == "patched" for o in outcomes)
    assert install_mod.group_states()["compaction"] == "installed"
    assert issubclass(openai_server.OpenAIServer, original)
    assert _ours(openai_server.OpenAIServer)
    uninstall()
    assert openai_server.OpenAIServer is original


def test_compact_route_generates_the_summary_with_upstreams_generator():
    prompts: list = []
    server = _server(prompts)
    with _client(server) as client:
        body = _compact(client)
    assert body["object"] == "response.compaction"
    kinds = [item["type"] for item in body["output"]]
    assert kinds == ["message", "message", "compaction"]
    assert body["output"][-1]["encrypted_content"].startswith("tsfc1.")
    assert body["usage"]["output_tokens"] > 0
    call = server.generator.calls[0]
    stop = responses_utils._get_encoding().stop_tokens_for_assistant_actions()
    assert sorted(call["sampling_params"].stop_token_ids) == sorted(stop)
    assert COMPACTION_PROMPT in _decode(call["inputs"])
    assert len(prompts) == 1 and body["usage"]["input_tokens"] == len(prompts[0])


def test_a_compaction_item_expands_before_upstreams_request_preprocessing():
    """Upstream's parser fails on a ``compaction`` item ('Unknown input type'); with the
    group the model reads the summary as an assistant message, and the turn completes."""
    prompts: list = []
    server = _server(prompts)
    with _client(server) as client:
        window = _compact(client)["output"]
        follow_up = {"type": "message", "role": "user", "content": "And add a test"}
        answer = client.post(
            "/v1/responses",
            json={"model": "gpt-oss-20b", "input": [*window, follow_up], "stream": True},
        )
    assert answer.status_code == 200, answer.text
    events = _events(answer.text)
    assert events[-1]["type"] == "response.completed"
    prompt = _decode(prompts[-1])
    assert SUMMARY_PREFIX.strip() in prompt
    assert prompt.index("Now make it print the date too") < prompt.index("And add a test")


def test_a_tampered_blob_is_a_400_naming_the_item_and_never_reaches_the_engine():
    prompts: list = []
    server = _server(prompts)
    with _client(server) as client:
        window = _compact(client)["output"]
        blob = window[-1]["encrypted_content"]
        window[-1]["encrypted_content"] = blob[:-6] + ("A" if blob[-6] != "A" else "B") + blob[-5:]
        answer = client.post("/v1/responses", json={"model": "gpt-oss-20b", "input": window})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == "input[2].encrypted_content"
    assert error["code"] == "invalid_encrypted_content"
    assert error["type"] == "invalid_request_error"
    assert len(prompts) == 1  # the compaction only


def test_a_trigger_turn_streams_exactly_one_compaction_item():
    prompts: list = []
    server = _server(prompts)
    trigger = [*CONVERSATION, {"type": "compaction_trigger"}]
    with _client(server) as client:
        streamed = client.post(
            "/v1/responses", json={"model": "gpt-oss-20b", "input": trigger, "stream": True}
        )
        plain = client.post("/v1/responses", json={"model": "gpt-oss-20b", "input": trigger})
    events = _events(streamed.text)
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    check = check_responses_events(events)
    assert check.ok, check.violations
    final = events[-1]["response"]
    assert [i["type"] for i in final["output"]] == ["compaction"]
    assert final["usage"]["output_tokens"] > 0
    assert plain.status_code == 200, plain.text
    assert [i["type"] for i in plain.json()["output"]] == ["compaction"]
    assert all(COMPACTION_PROMPT in _decode(p) for p in prompts)


def test_a_trigger_not_last_is_a_400_naming_it():
    server = _server([])
    items = [{"type": "compaction_trigger"}, *CONVERSATION]
    with _client(server) as client:
        answer = client.post("/v1/responses", json={"model": "gpt-oss-20b", "input": items})
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "input[0].type"


def test_refused_without_cryptography(monkeypatch):
    original = openai_server.OpenAIServer
    find_spec = importlib.util.find_spec

    def without(name, *args, **kwargs):
        return None if name == "cryptography" else find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", without)
    outcomes = [o for o in install().outcomes if o.target == SERVER]
    assert "refused" in {o.status for o in outcomes}
    assert install_mod.group_states()["compaction"] == "refused"
    assert "cryptography is not installed" in install_mod.last_refusals()["compaction"]
    assert not _ours(openai_server.OpenAIServer)
    assert issubclass(openai_server.OpenAIServer, original)
    assert install_mod.group_states()["responses"] == "installed"


def test_a_handler_of_another_shape_is_refused_with_the_reason(monkeypatch):
    original = openai_server.OpenAIServer

    class Changed(original):
        async def openai_responses(self, request):  # raw_request gone
            raise AssertionError("never called")

    monkeypatch.setattr(openai_server, "OpenAIServer", Changed)
    install()
    assert "OpenAIServer.openai_responses" in install_mod.last_refusals()["compaction"]
    assert not _ours(openai_server.OpenAIServer)


def test_a_second_group_on_openai_server_stacks_and_uninstall_takes_both_off(monkeypatch):
    """Two groups subclassing ``OpenAIServer`` (as the websocket group does): both
    subclasses are in place, the compaction route is served, and uninstall restores
    upstream's class."""
    original = openai_server.OpenAIServer
    other = registry.Group("other", "Other", required=False, when_off="-")
    patch = dataclasses.replace(
        registry.patch("compaction-server"),
        name="other-server",
        group="other",
        replacement=f"{__name__}:with_marker",
    )
    monkeypatch.setattr(registry, "GROUPS", (*registry.GROUPS[:-1], other, registry.GROUPS[-1]))
    monkeypatch.setattr(registry, "PATCHES", (*registry.PATCHES, patch))
    outcomes = [o for o in install().outcomes if o.target == SERVER]
    assert len(outcomes) >= 2 and {o.status for o in outcomes} == {"patched"}
    assert any("on group" in o.detail for o in outcomes)  # a layer on the first group's
    states = install_mod.group_states()
    assert states["other"] == states["compaction"] == "installed"
    server = openai_server.OpenAIServer(_engine([]))
    assert server.marked
    with _client(server) as client:
        assert _compact(client)["output"][-1]["type"] == "compaction"
    uninstall()
    assert openai_server.OpenAIServer is original


def with_marker(server_class):
    """Another group's subclass of ``OpenAIServer`` (the stacking test)."""

    def __init__(self, *args, **kwargs):
        server_class.__init__(self, *args, **kwargs)
        self.marked = True

    return type("Marked", (server_class,), {"__init__": __init__, "__trtllm_stream_fix__": True})


def test_the_selftest_probe_passes_on_the_standin():
    from trtllm_stream_fix.plugin.probes import compaction_items

    install()
    result = compaction_items([])
    assert result.ok, result.stats
    assert result.stats["checks"] == 6


def test_the_probe_fails_when_openai_server_is_not_ours():
    from trtllm_stream_fix.plugin.probes import compaction_items

    result = compaction_items([])
    assert not result.ok
    assert "binds the plugin's compaction server" in result.first_failure


def test_an_unset_key_still_works_within_the_process(monkeypatch):
    monkeypatch.delenv(KEY)
    server = _server([])
    with _client(server) as client:
        window = _compact(client)["output"]
        answer = client.post("/v1/responses", json={"model": "gpt-oss-20b", "input": window})
    assert answer.status_code == 200, answer.text


def test_compact_body_errors_are_openai_shaped():
    server = _server([])
    with _client(server) as client:
        no_model = client.post("/v1/responses/compact", json={"input": "hi"})
        previous = client.post(
            "/v1/responses/compact", json={"model": "m", "previous_response_id": "resp_1"}
        )
        bad_json = client.post("/v1/responses/compact", content=b"{")
    assert no_model.status_code == 400 and no_model.json()["error"]["param"] == "model"
    assert previous.json()["error"]["param"] == "previous_response_id"
    assert bad_json.status_code == 400 and "error" in bad_json.json()


def _long_conversation(turns: int = 12) -> list[dict]:
    words = " ".join(f"word{n}" for n in range(60))
    items: list[dict] = []
    for n in range(turns):
        items.append({"type": "message", "role": "user", "content": f"Step {n}: {words}"})
        answer = [{"type": "output_text", "text": f"Did step {n}. {words}"}]
        items.append({"type": "message", "role": "assistant", "content": answer})
    return [*items, {"type": "message", "role": "user", "content": "What next?"}]


MANAGED = [{"type": "compaction", "compact_threshold": 1000}]


def test_context_management_past_the_threshold_compacts_first_and_streams_the_item_first():
    prompts: list = []
    server = _server(prompts)
    body = {"model": "gpt-oss-20b", "input": _long_conversation(), "stream": True}
    with _client(server) as client:
        streamed = client.post("/v1/responses", json={**body, "context_management": MANAGED})
        plain = client.post(
            "/v1/responses",
            json={**body, "stream": False, "context_management": MANAGED},
        )
    assert streamed.status_code == 200, streamed.text
    events = _events(streamed.text)
    kinds = [e["type"] for e in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
    ]
    assert events[2]["item"]["type"] == "compaction" and events[2]["output_index"] == 0
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    later = [e["output_index"] for e in events[4:] if "output_index" in e]
    assert later and min(later) == 1
    check = check_responses_events(events)
    assert check.ok, check.violations
    final = events[-1]["response"]
    assert final["output"][0]["type"] == "compaction" and len(final["output"]) >= 2
    assert COMPACTION_PROMPT in _decode(prompts[0])
    answered = _decode(prompts[1])
    assert SUMMARY_PREFIX.strip() in answered and "What next?" in answered
    assert "Did step 0." not in answered  # the answers live in the summary only
    assert final["usage"]["input_tokens"] == len(prompts[0]) + len(prompts[1])
    assert plain.status_code == 200, plain.text
    assert plain.json()["output"][0]["type"] == "compaction"


def test_context_management_under_the_threshold_is_an_ordinary_turn():
    prompts: list = []
    server = _server(prompts)
    managed = [{"type": "compaction", "compact_threshold": 100_000}]
    with _client(server) as client:
        answer = client.post(
            "/v1/responses",
            json={"model": "gpt-oss-20b", "input": CONVERSATION, "context_management": managed},
        )
    assert answer.status_code == 200, answer.text
    assert [i["type"] for i in answer.json()["output"]] == ["reasoning", "message"]
    assert len(prompts) == 1


def test_a_bad_context_management_entry_is_a_400_naming_it():
    server = _server([])
    bad = [{"type": "compaction", "compact_threshold": 10}]
    with _client(server) as client:
        answer = client.post(
            "/v1/responses",
            json={"model": "gpt-oss-20b", "input": "hi", "context_management": bad},
        )
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "context_management[0].compact_threshold"


def _socket_turn(ws, **body) -> list[dict]:
    """One ``response.create`` over WebSocket mode and its events up to the terminal one."""
    ws.send_text(json.dumps({"type": "response.create", "model": "gpt-oss-20b", **body}))
    events: list[dict] = []
    while True:
        events.append(json.loads(ws.receive_text()))
        kind = events[-1]["type"]
        if kind in ("response.completed", "response.failed", "response.incomplete"):
            return events
        if kind == "error" and len(events) == 1:
            return events


def test_over_websocket_mode_the_trigger_and_compaction_items_work_alike():
    """The websocket group feeds each turn to the handler the app routes POST to: the
    compaction group's override, so a trigger streams its one item and a tampered blob is an
    ``error`` event naming it, on a socket that stays usable."""
    server = _server([])
    with _client(server) as client:
        with client.websocket_connect("/v1/responses") as ws:
            trigger = _socket_turn(
                ws, input=[*CONVERSATION, {"type": "compaction_trigger"}], store=False
            )
            item = trigger[-1]["response"]["output"][0]
            bad = {**item, "encrypted_content": item["encrypted_content"] + "x"}
            refused = _socket_turn(ws, input=[bad], store=False)
            after = _socket_turn(ws, input=[item, {"role": "user", "content": "go on"}])
    added = [e["item"]["type"] for e in trigger if e["type"] == "response.output_item.added"]
    assert added == ["compaction"]
    check = check_responses_events(trigger)
    assert check.ok, check.violations
    assert refused[0]["type"] == "error", refused
    assert refused[0]["error"]["param"] == "input[0].encrypted_content"
    assert after[-1]["type"] == "response.completed"
