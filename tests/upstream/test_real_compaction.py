# SPDX-License-Identifier: Apache-2.0
"""The ``compaction`` group on upstream's own ``openai_server`` (CPU, fake engine, over HTTP).

Runs for each tree of ``TRTLLM_SOURCE_DIRS`` / ``TRTLLM_SOURCE_DIR`` with an
``openai_server.py``; skips with the reason otherwise. The fake engine answers the
compaction prompt with the simulated summary (``sim.compaction_model``), generated through
upstream's ``generator.generate_async``. Contract: unpatched, ``/v1/responses/compact`` is
not served and a ``compaction`` input item is refused; with the plugin, openai-python's
``responses.compact`` returns a window ending in one compaction item, that window continues
the conversation (the summary in the model's context), a tampered blob is OpenAI's 400
naming it, and a create ending in ``compaction_trigger`` streams exactly one compaction
item that the strict checker and the SDK accept.
"""

from __future__ import annotations

import pytest
from test_real_server import _trees  # the configured trees (skips with the reason)

from trtllm_stream_fix.checker.responses import check_responses_events
from trtllm_stream_fix.plugin.realstub.serve_matrix import MODEL, running_server

pytestmark = pytest.mark.cpu_only

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


@pytest.fixture(params=_trees())
def tree(request, monkeypatch):
    from cryptography.fernet import Fernet

    monkeypatch.setenv(KEY, Fernet.generate_key().decode())
    return request.param


def _client(url: str):
    import openai

    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)


def test_upstream_alone_has_no_compaction(tree):
    import httpx

    with running_server(tree, plugin=False) as url:
        compact = httpx.post(f"{url}/v1/responses/compact", json={"model": MODEL, "input": "hi"})
        item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "tsfc1.x"}
        create = httpx.post(f"{url}/v1/responses", json={"model": MODEL, "input": [item]})
    assert compact.status_code in (404, 405)
    assert create.status_code == 400 and "compaction" in create.text


def test_compact_then_continue_with_the_window(tree):
    import httpx

    with running_server(tree, plugin=True) as url:
        client = _client(url)
        compacted = client.responses.compact(model=MODEL, input=CONVERSATION)
        window = [item.model_dump(exclude_none=True, warnings=False) for item in compacted.output]
        follow_up = {
            "type": "message",
            "role": "user",
            "content": "And add a test, scenario reasoning_answer",
        }
        answer = client.responses.create(model=MODEL, input=[*window, follow_up], store=False)
        tampered = dict(window[-1])
        blob = tampered["encrypted_content"]
        tampered["encrypted_content"] = blob[:-6] + ("A" if blob[-6] != "A" else "B") + blob[-5:]
        refused = httpx.post(
            f"{url}/v1/responses", json={"model": MODEL, "input": [*window[:-1], tampered]}
        )
    assert [item.type for item in compacted.output][-1] == "compaction"
    assert compacted.usage.output_tokens > 0
    assert answer.status == "completed"
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["param"] == f"input[{len(window) - 1}].encrypted_content"
    assert error["code"] == "invalid_encrypted_content"


def test_a_trigger_turn_streams_exactly_one_compaction_item(tree):
    trigger = [*CONVERSATION, {"type": "compaction_trigger"}]
    with running_server(tree, plugin=True) as url:
        client = _client(url)
        with client.responses.stream(model=MODEL, input=trigger, store=False) as stream:
            events = [event.model_dump() for event in stream]
            final = stream.get_final_response()
    added = [e["item"]["type"] for e in events if e["type"] == "response.output_item.added"]
    assert added == ["compaction"]
    check = check_responses_events(events)
    assert check.ok, check.violations
    assert [item.type for item in final.output] == ["compaction"]


def test_context_management_streams_the_item_first_then_upstreams_answer(tree):
    words = " ".join(f"word{n}" for n in range(60))
    history = []
    for n in range(12):
        history.append({"type": "message", "role": "user", "content": f"Step {n}: {words}"})
        answer = [{"type": "output_text", "text": f"Did step {n}. {words}"}]
        history.append({"type": "message", "role": "assistant", "content": answer})
    question = {"type": "message", "role": "user", "content": "Go on, scenario reasoning_answer"}
    managed = [{"type": "compaction", "compact_threshold": 1000}]
    with running_server(tree, plugin=True) as url:
        client = _client(url)
        with client.responses.stream(
            model=MODEL,
            input=[*history, question],
            store=False,
            extra_body={"context_management": managed},
        ) as stream:
            events = [event.model_dump() for event in stream]
            final = stream.get_final_response()
    added = [e["item"]["type"] for e in events if e["type"] == "response.output_item.added"]
    assert added[0] == "compaction" and len(added) >= 2
    check = check_responses_events(events)
    assert check.ok, check.violations
    assert final.output[0].type == "compaction"
    assert final.status == "completed"
