# SPDX-License-Identifier: Apache-2.0
"""``context_management: [{"type": "compaction", "compact_threshold": N}]`` on a create: past
N rendered input tokens the turn compacts first, streams the compaction item as its first
output item (strict checker, SDK accumulator) and answers from the compacted context."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from _sdk_turns import client as sdk_client

from trtllm_stream_fix.checker.client import stream_responses
from trtllm_stream_fix.compaction.blob import BlobCodec

pytestmark = pytest.mark.cpu_only
MODEL = "gpt-oss-120b"
SENTENCE = "We reviewed module {n} of the billing service and noted its retry policy and limits."
ANSWER = (
    "Step {n} is done: the module's handlers were read one by one, its retries counted, its "
    "timeouts compared with the gateway's, and each finding written to the notes file."
)
#: Past the whole conversation's rendered tokens, above its compacted window's.
SECOND_THRESHOLD = 1800


def _long_conversation(turns: int = 30) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n in range(turns):
        items.append({"role": "user", "content": SENTENCE.format(n=n) + " What next?"})
        items.append(
            {"role": "assistant", "content": [{"type": "output_text", "text": ANSWER.format(n=n)}]}
        )
    items.append({"role": "user", "content": "Write the final report."})
    return items


def _managed(threshold: int) -> list[dict[str, Any]]:
    return [{"type": "compaction", "compact_threshold": threshold}]


def test_past_the_threshold_the_stream_starts_with_a_compaction_item(base_url, key):
    body = {"model": MODEL, "input": _long_conversation(), "context_management": _managed(1000)}

    async def run():
        async with httpx.AsyncClient(timeout=30) as http:
            return await stream_responses(http, f"{base_url}/v1/responses", body)

    record = asyncio.run(run())
    assert record.ok, record.violations
    assert record.warnings == []
    kinds = [i["type"] for i in record.items]
    assert kinds[0] == "compaction" and kinds[-1] == "message" and "compaction" not in kinds[1:]
    final = json.loads(record.events[-1]["data"])["response"]
    blob = final["output"][0]["encrypted_content"]
    assert "report" in BlobCodec(key).open(blob, "x").summary


def test_sdk_accumulates_it_and_usage_counts_both_generations(base_url):
    client = sdk_client(base_url)
    conversation = _long_conversation()
    with client.responses.stream(
        model=MODEL, input=conversation, extra_body={"context_management": _managed(1000)}
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.output[0].type == "compaction" and final.output_text
    plain = client.responses.create(model=MODEL, input=conversation)
    # The answer reads the compacted context: fewer prompt tokens than the whole conversation,
    # although the usage adds the summary's prompt (the whole conversation) to it.
    assert final.usage.input_tokens > plain.usage.input_tokens
    assert final.usage.output_tokens > plain.usage.output_tokens


@pytest.fixture(scope="module")
def window_2500_url(key):
    from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
    from trtllm_stream_fix.sim.limits import ServerLimits

    limits = ServerLimits(max_input_tokens=2500)
    with serve_in_thread(create_app(EngineConfig(), limits=limits, compaction_key=key)) as url:
        yield url


@pytest.mark.parametrize(("turns", "compacted"), [(30, True), (10, False)])
def test_an_entry_without_a_threshold_compacts_at_80_percent_of_the_window(
    window_2500_url, turns, compacted
):
    # 30 turns render to 2,101 tokens, past 2,000 (80 % of 2,500); 10 turns stay under it.
    body = {
        "model": MODEL,
        "input": _long_conversation(turns),
        "context_management": [{"type": "compaction"}],
    }
    answer = httpx.post(f"{window_2500_url}/v1/responses", json=body, timeout=30).json()
    assert (answer["output"][0]["type"] == "compaction") is compacted


def test_under_the_threshold_nothing_is_compacted(base_url):
    body = {
        "model": MODEL,
        "input": _long_conversation(2),
        "context_management": _managed(100_000),
    }
    answer = httpx.post(f"{base_url}/v1/responses", json=body, timeout=30).json()
    assert "compaction" not in [i["type"] for i in answer["output"]]


def test_non_streaming_and_continuation_by_previous_response_id(base_url):
    client = sdk_client(base_url)
    first = client.responses.create(
        model=MODEL,
        input=_long_conversation(),
        extra_body={"context_management": _managed(1000)},
    )
    assert first.output[0].type == "compaction"
    second = client.responses.create(
        model=MODEL,
        input="Shorter, please.",
        previous_response_id=first.id,
        extra_body={"context_management": _managed(SECOND_THRESHOLD)},
    )
    # The stored conversation is the compacted window, under a threshold the whole
    # conversation passes.
    whole = client.responses.create(
        model=MODEL,
        input=_long_conversation(),
        extra_body={"context_management": _managed(SECOND_THRESHOLD)},
    )
    assert whole.output[0].type == "compaction"
    assert second.output[0].type != "compaction" and second.status == "completed"


@pytest.mark.parametrize(
    ("value", "param"),
    [
        (
            [{"type": "compaction", "compact_threshold": 999}],
            "context_management[0].compact_threshold",
        ),
        (
            [{"type": "compaction", "compact_threshold": "2000"}],
            "context_management[0].compact_threshold",
        ),
        (
            [{"type": "compaction", "compact_threshold": True}],
            "context_management[0].compact_threshold",
        ),
        ([{"type": "truncation"}], "context_management[0].type"),
        ({"type": "compaction"}, "context_management"),
    ],
)
def test_invalid_context_management_is_a_400_naming_it(base_url, value, param):
    body = {"model": MODEL, "input": "hi", "context_management": value}
    answer = httpx.post(f"{base_url}/v1/responses", json=body, timeout=30)
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == param
