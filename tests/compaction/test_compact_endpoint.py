# SPDX-License-Identifier: Apache-2.0
"""``POST /v1/responses/compact`` through the OpenAI Python SDK: the window it returns
continues the conversation (SSE, checked strictly and by the SDK's accumulator), ``usage``
counts the summary's generation, a missing model is OpenAI's 400, and the Open Responses
``compact-response`` checks hold."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import openai
import pytest
from _sdk_turns import client as sdk_client

from trtllm_stream_fix.checker.client import stream_responses
from trtllm_stream_fix.compaction.blob import BlobCodec
from trtllm_stream_fix.compaction.prompt import compaction_prompt
from trtllm_stream_fix.compaction.window import SUMMARY_PREFIX
from trtllm_stream_fix.encoding import load_gpt_oss_encoding

pytestmark = pytest.mark.cpu_only
MODEL = "gpt-oss-120b"
CONVERSATION = [
    {"role": "user", "content": [{"type": "input_text", "text": "Plan a trip to Lisbon."}]},
    {"role": "assistant", "content": [{"type": "output_text", "text": "Which month?"}]},
    {"role": "user", "content": [{"type": "input_text", "text": "May, for five days."}]},
]


def _window(compacted: Any) -> list[dict[str, Any]]:
    return [item.to_dict(warnings=False) for item in compacted.output]


def test_compact_returns_user_messages_then_one_compaction_item(base_url, key):
    compacted = sdk_client(base_url).responses.compact(
        model=MODEL, input=CONVERSATION, prompt_cache_key="openresponses-compact-test"
    )
    assert compacted.object == "response.compaction"
    assert compacted.id and compacted.created_at > 0
    kinds = [(i.type, getattr(i, "role", None)) for i in compacted.output]
    assert kinds == [("message", "user"), ("message", "user"), ("compaction", None)]
    blob = compacted.output[-1].encrypted_content
    assert blob.startswith("tsfc1.") and "Lisbon" not in blob  # opaque
    record = BlobCodec(key).open(blob, "x")
    assert "Lisbon" in record.summary and record.model == MODEL


def test_usage_counts_the_summary_generation(base_url):
    compacted = sdk_client(base_url).responses.compact(model=MODEL, input=CONVERSATION)
    prompt = compaction_prompt(load_gpt_oss_encoding(), CONVERSATION, None)
    usage = compacted.usage
    assert usage.input_tokens == len(prompt.tokens)
    assert usage.output_tokens > usage.output_tokens_details.reasoning_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens


def test_window_continues_over_sse_strictly_and_through_the_sdk(base_url):
    client = sdk_client(base_url)
    window = _window(client.responses.compact(model=MODEL, input=CONVERSATION))
    follow = [*window, {"role": "user", "content": "Continue with a day-by-day plan."}]

    async def strict():
        async with httpx.AsyncClient(timeout=30) as http:
            body = {"model": MODEL, "input": follow, "store": False, "tools": []}
            return await stream_responses(http, f"{base_url}/v1/responses", body)

    record = asyncio.run(strict())
    assert record.ok, record.violations
    assert record.terminal == "completed"
    with client.responses.stream(model=MODEL, input=follow) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.status == "completed" and final.output_text


def test_compaction_item_expands_into_the_models_context(base_url, key):
    """The summary is read as input: the turn's prompt holds more tokens than without it."""
    client = sdk_client(base_url)
    window = _window(client.responses.compact(model=MODEL, input=CONVERSATION))
    question = {"role": "user", "content": "Continue."}
    with_item = client.responses.create(model=MODEL, input=[*window, question])
    without = client.responses.create(model=MODEL, input=[*window[:-1], question])
    record = BlobCodec(key).open(window[-1]["encrypted_content"], "x")
    summary_tokens = len(load_gpt_oss_encoding().encode(SUMMARY_PREFIX + record.summary))
    grown = with_item.usage.input_tokens - without.usage.input_tokens
    assert summary_tokens - 2 <= grown <= summary_tokens + 2


def test_compact_continues_a_stored_conversation(base_url):
    client = sdk_client(base_url)
    first = client.responses.create(model=MODEL, input="Name three rivers of Portugal.")
    compacted = client.responses.compact(
        model=MODEL, previous_response_id=first.id, input="And their lengths?"
    )
    texts = [i.content[0].text for i in compacted.output if i.type == "message"]
    assert texts == ["Name three rivers of Portugal.", "And their lengths?"]


@pytest.mark.parametrize(
    "body",
    [
        {"input": CONVERSATION},
        {"model": None, "input": CONVERSATION},
        {"model": "", "input": CONVERSATION},
    ],
)
def test_missing_model_is_openais_400(base_url, body):
    answer = httpx.post(f"{base_url}/v1/responses/compact", json=body, timeout=30)
    assert answer.status_code == 400  # Open Responses' compact-missing-model: 400 or 422
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == "model"


def test_missing_model_through_the_sdk_is_a_bad_request(base_url):
    with pytest.raises(openai.BadRequestError):
        sdk_client(base_url).responses.compact(model="", input=CONVERSATION)


def test_unknown_model_and_empty_request(base_url):
    unknown = httpx.post(
        f"{base_url}/v1/responses/compact", json={"model": "gpt-9", "input": "hi"}, timeout=30
    )
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found"
    empty = httpx.post(f"{base_url}/v1/responses/compact", json={"model": MODEL}, timeout=30)
    assert empty.status_code == 400 and empty.json()["error"]["param"] == "input"
    trigger = httpx.post(
        f"{base_url}/v1/responses/compact",
        json={"model": MODEL, "input": [{"type": "compaction_trigger"}]},
        timeout=30,
    )
    assert trigger.status_code == 400 and trigger.json()["error"]["param"] == "input[0].type"


@pytest.fixture(scope="module")
def small_window_url(key):
    from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
    from trtllm_stream_fix.sim.limits import ServerLimits

    app = create_app(EngineConfig(), limits=ServerLimits(max_input_tokens=300), compaction_key=key)
    with serve_in_thread(app) as url:
        yield url


LONG = [{"role": "user", "content": f"Request {n}: check the logs of host {n}."} for n in range(40)]


def test_a_conversation_past_the_context_window_is_a_400(small_window_url):
    answer = httpx.post(
        f"{small_window_url}/v1/responses/compact",
        json={"model": MODEL, "input": LONG},
        timeout=30,
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "context_length_exceeded"


def test_a_trigger_that_cannot_compact_fails_the_stream_cleanly(small_window_url):
    async def run():
        async with httpx.AsyncClient(timeout=30) as http:
            body = {"model": MODEL, "input": [*LONG[:12], {"type": "compaction_trigger"}]}
            return await stream_responses(
                http, f"{small_window_url}/v1/responses", body, allow_failed=True
            )

    record = asyncio.run(run())
    assert record.terminal == "failed" and record.violations == []
    assert "context_length_exceeded" in record.events[-2]["data"]


def test_compact_resolves_item_references(base_url, key):
    client = sdk_client(base_url)
    first = client.responses.create(model=MODEL, input="Describe the Tagus.")
    answer = next(item for item in first.output if item.type == "message")
    compacted = client.responses.compact(
        model=MODEL,
        input=[
            {"role": "user", "content": "Describe the Tagus."},
            {"type": "item_reference", "id": answer.id},
        ],
    )
    summary = BlobCodec(key).open(compacted.output[-1].encrypted_content, "x").summary
    assert f"Last answer: {answer.content[0].text[:40]}" in summary
    unknown = httpx.post(
        f"{base_url}/v1/responses/compact",
        json={"model": MODEL, "input": [{"type": "item_reference", "id": "msg_nope"}]},
        timeout=30,
    )
    assert unknown.status_code == 400 and unknown.json()["error"]["param"] == "input"
