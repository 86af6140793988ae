# SPDX-License-Identifier: Apache-2.0
"""A 40-turn agent conversation (a tool call and its answer each turn, the client keeping the
whole window, ``store: false``) that compacts twice through ``client.responses.compact`` and
keeps working: every turn after a compaction still calls the tool and answers from its
output, the window shrinks at each compaction, and the second summary carries the first."""

from __future__ import annotations

from typing import Any

import pytest
from _sdk_turns import client as sdk_client

from trtllm_stream_fix.compaction.blob import BlobCodec
from trtllm_stream_fix.compaction.prompt import turn_prompt
from trtllm_stream_fix.compaction.window import expand
from trtllm_stream_fix.encoding import load_gpt_oss_encoding

pytestmark = pytest.mark.cpu_only
MODEL = "gpt-oss-120b"
READ = {
    "type": "function",
    "name": "read_file",
    "description": "Read a file of the repository",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}
TURNS = 40
COMPACT_AFTER = (13, 26)


def _dicts(output: Any) -> list[dict[str, Any]]:
    return [item.to_dict(warnings=False) for item in output]


def _tokens(window: list[dict[str, Any]], codec: BlobCodec) -> int:
    return len(turn_prompt(load_gpt_oss_encoding(), expand(window, codec), None).tokens)


def test_forty_turns_compact_twice_and_keep_working(base_url, key):
    client = sdk_client(base_url)
    codec = BlobCodec(key)
    window: list[dict[str, Any]] = []
    summaries: list[str] = []
    sizes: list[tuple[int, int]] = []
    for turn in range(TURNS):
        window.append(
            {"role": "user", "content": f"Turn {turn}: use read_file on src/mod_{turn}.py."}
        )
        asked = client.responses.create(model=MODEL, input=window, tools=[READ], store=False)
        calls = [item for item in asked.output if item.type == "function_call"]
        assert [c.name for c in calls] == ["read_file"], f"turn {turn}: {asked.output}"
        window += _dicts(asked.output)
        window.append(
            {
                "type": "function_call_output",
                "call_id": calls[0].call_id,
                "output": f"mod_{turn}.py: {turn * 7} lines, one class",
            }
        )
        answered = client.responses.create(model=MODEL, input=window, tools=[READ], store=False)
        assert answered.status == "completed"
        assert f"mod_{turn}.py: {turn * 7} lines" in answered.output_text, f"turn {turn}"
        window += _dicts(answered.output)
        if turn in COMPACT_AFTER:
            before = _tokens(window, codec)
            compacted = client.responses.compact(model=MODEL, input=window)
            window = _dicts(compacted.output)
            assert [i["type"] for i in window][-1] == "compaction"
            summaries.append(codec.open(window[-1]["encrypted_content"], "x").summary)
            sizes.append((before, _tokens(window, codec)))
    assert len(summaries) == 2
    # The second summary was written from a context holding the first one.
    first_requests = summaries[0].splitlines()[0]
    assert first_requests.startswith("User requests (14") and "Turn 13" in first_requests
    assert summaries[1].startswith(f"Earlier summary: {first_requests[:40]}")
    for before, after in sizes:
        assert after < before / 2, sizes


def test_forty_stored_turns_compact_on_the_server_and_keep_working(base_url, key):
    """The same agent with ``store: true`` and ``previous_response_id``, compaction left to
    the server (``context_management``): it compacts at least twice, each compaction the
    first output item of the turn that passed the threshold, and every turn still works."""
    client = sdk_client(base_url)
    managed = {"context_management": [{"type": "compaction", "compact_threshold": 2500}]}
    previous = None
    compacted_turns = []
    for turn in range(TURNS):
        asked = client.responses.create(
            model=MODEL,
            input=f"Turn {turn}: use read_file on src/mod_{turn}.py.",
            tools=[READ],
            previous_response_id=previous,
            extra_body=managed,
        )
        kinds = [item.type for item in asked.output]
        calls = [item for item in asked.output if item.type == "function_call"]
        assert [c.name for c in calls] == ["read_file"], f"turn {turn}: {kinds}"
        answered = client.responses.create(
            model=MODEL,
            input=[
                {
                    "type": "function_call_output",
                    "call_id": calls[0].call_id,
                    "output": f"mod_{turn}.py: {turn * 7} lines",
                }
            ],
            tools=[READ],
            previous_response_id=asked.id,
            extra_body=managed,
        )
        assert f"mod_{turn}.py: {turn * 7} lines" in answered.output_text, f"turn {turn}"
        for response in (asked, answered):
            types = [item.type for item in response.output]
            if "compaction" in types:
                assert types.index("compaction") == 0 and types.count("compaction") == 1
                compacted_turns.append(turn)
        previous = answered.id
    assert len(compacted_turns) >= 2, compacted_turns
