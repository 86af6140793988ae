# SPDX-License-Identifier: Apache-2.0
"""Codex's ``compaction_trigger``: exactly one ``compaction`` output item, a stream the strict
checker passes without a finding and the OpenAI SDK's accumulator completes; the checker
refuses what a compaction item cannot carry."""

from __future__ import annotations

import asyncio
import copy
import json

import httpx
import pytest
from _sdk_turns import client as sdk_client

from trtllm_stream_fix.checker import check_responses_events
from trtllm_stream_fix.checker.client import stream_responses

pytestmark = pytest.mark.cpu_only
MODEL = "gpt-oss-120b"
HISTORY = [
    {"role": "user", "content": "Refactor the parser in src/parse.py."},
    {"role": "assistant", "content": [{"type": "output_text", "text": "Done: split in two."}]},
    {"role": "user", "content": "Now add tests."},
]
TRIGGER = {"type": "compaction_trigger"}


def _record(url: str):
    async def run():
        async with httpx.AsyncClient(timeout=30) as client:
            body = {"model": MODEL, "input": [*HISTORY, TRIGGER]}
            return await stream_responses(client, f"{url}/v1/responses", body)

    return asyncio.run(run())


def test_trigger_streams_exactly_one_compaction_item_that_the_strict_checker_passes(base_url):
    record = _record(base_url)
    assert record.ok, record.violations
    assert record.warnings == []
    assert [i["type"] for i in record.items] == ["compaction"]
    assert [e["event"] for e in record.events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]


def test_trigger_stream_completes_in_the_sdk_accumulator(base_url):
    client = sdk_client(base_url)
    with client.responses.stream(model=MODEL, input=[*HISTORY, TRIGGER]) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert [item.type for item in final.output] == ["compaction"]
    assert final.output[0].encrypted_content.startswith("tsfc1.")
    assert final.usage.output_tokens > 0


def test_trigger_not_last_is_a_400_naming_it(base_url):
    body = {"model": MODEL, "input": [TRIGGER, *HISTORY]}
    answer = httpx.post(f"{base_url}/v1/responses", json=body, timeout=30)
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "input[0].type"


def _events(base_url):
    record = _record(base_url)
    return [json.loads(e["data"]) for e in record.events]


def test_checker_refuses_content_in_a_compaction_item(base_url):
    events = _events(base_url)
    added = next(e for e in events if e["type"] == "response.output_item.added")
    part = {
        "type": "response.content_part.added",
        "item_id": added["item"]["id"],
        "output_index": 0,
        "content_index": 0,
        "part": {"type": "output_text", "text": "", "annotations": []},
        "sequence_number": added["sequence_number"] + 1,
    }
    at = events.index(added) + 1
    bad = [*events[:at], part, *events[at:]]
    for n, event in enumerate(bad):
        event = dict(event)
        bad[n] = event
        event["sequence_number"] = n
    result = check_responses_events(bad)
    assert not result.ok
    assert any("compaction" in v for v in result.violations), result.violations


def test_checker_refuses_a_compaction_item_done_without_its_blob(base_url):
    events = copy.deepcopy(_events(base_url))
    done = next(e for e in events if e["type"] == "response.output_item.done")
    done["item"]["encrypted_content"] = ""
    result = check_responses_events(events)
    assert not result.ok
    assert any("encrypted_content" in v for v in result.violations), result.violations


def _with_compacting(events, *, item_id=None, after_done=False):
    added = next(e for e in events if e["type"] == "response.output_item.added")
    kind = "response.output_item.done" if after_done else "response.output_item.added"
    at = next(n for n, e in enumerate(events) if e["type"] == kind) + 1
    compacting = {
        "type": "response.compaction.compacting",
        "item_id": item_id or added["item"]["id"],
        "output_index": 0,
        "sequence_number": 0,
    }
    out = [dict(e) for e in [*events[:at], compacting, *events[at:]]]
    for n, event in enumerate(out):
        event["sequence_number"] = n
    return out


def test_checker_takes_compacting_events_of_the_open_compaction_item_only(base_url):
    events = _events(base_url)
    assert check_responses_events(_with_compacting(events)).ok
    wrong = check_responses_events(_with_compacting(events, item_id="cmp_other"))
    assert wrong.has("item-id"), wrong.violations
    late = check_responses_events(_with_compacting(events, after_done=True))
    assert late.has("item-ref"), late.violations
