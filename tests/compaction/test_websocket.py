# SPDX-License-Identifier: Apache-2.0
"""Compaction over Responses WebSocket mode (openai-python's ``client.responses.connect()``):
Open Responses' ``websocket-compact-new-chain`` (a ``/responses/compact`` window continued
with ``store: false`` and no ``previous_response_id``), the ``compaction_trigger`` turn and
a tampered blob's 400 as an ``error`` event; every event checked strictly."""

from __future__ import annotations

import pytest
from _sdk_turns import client as sdk_client

from trtllm_stream_fix.testing.ws_client import MODEL, sdk_checked, sdk_turn

pytest.importorskip("websockets")

pytestmark = pytest.mark.cpu_only
CONVERSATION = [
    {"role": "user", "content": [{"type": "input_text", "text": "Remember: cobalt."}]},
    {"role": "assistant", "content": [{"type": "output_text", "text": "Noted: cobalt."}]},
    {"role": "user", "content": [{"type": "input_text", "text": "And the second word?"}]},
]


def _window(base_url: str) -> list[dict]:
    compacted = sdk_client(base_url).responses.compact(model=MODEL, input=CONVERSATION)
    return [item.to_dict(warnings=False) for item in compacted.output]


def test_compact_new_chain_over_websocket(base_url):
    window = _window(base_url)
    follow = [*window, {"role": "user", "content": "Continue from the compacted window."}]
    with sdk_client(base_url).responses.connect() as connection:
        events = sdk_turn(connection, input=follow, tools=[], store=False)
    sdk_checked(events)
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text


def test_trigger_over_websocket_is_one_compaction_item(base_url):
    with sdk_client(base_url).responses.connect() as connection:
        events = sdk_turn(connection, input=[*CONVERSATION, {"type": "compaction_trigger"}])
    sdk_checked(events)
    assert [o.type for o in events[-1].response.output] == ["compaction"]


def test_tampered_blob_over_websocket_is_an_error_event_naming_it(base_url):
    window = _window(base_url)
    blob = window[-1]["encrypted_content"]
    window[-1]["encrypted_content"] = blob[:-10] + ("A" if blob[-10] != "A" else "B") + blob[-9:]
    with sdk_client(base_url).responses.connect() as connection:
        events = sdk_turn(connection, input=window, store=False)
    assert events[-1].type == "error"
    error = events[-1].model_dump(mode="json")
    assert error["status"] == 400
    assert error["error"]["param"] == f"input[{len(window) - 1}].encrypted_content"
