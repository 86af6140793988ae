# SPDX-License-Identifier: Apache-2.0
"""The plugin path through the stand-in ``openai_server`` flow.

Contract: with the plugin installed, what a client sees of a Harmony stream does not depend
on how many tokens each engine response carries (1 or 20), with or without PostprocWorkers,
and the OpenAI SDK accumulator accepts every stream. Non-Harmony requests run upstream's
code unchanged; non-streaming output matches the stream's final response; an assistant
preamble sent back as input renders on the commentary channel.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "standin"))
import plugin_harness as harness

harness.use_standin()

from tensorrt_llm.executor import GenerationResult
from tensorrt_llm.serve import openai_server, responses_utils
from tensorrt_llm.serve.openai_protocol import ResponsesRequest

from trtllm_stream_fix.differential.sdk_oracle import sdk_accumulate
from trtllm_stream_fix.plugin.installer import uninstall
from trtllm_stream_fix.sim.model import generate_outputs, named_output

pytestmark = pytest.mark.cpu_only

SEEDS = 100
OUTPUTS = list(generate_outputs(SEEDS, seed=7))
COMMENTARY = 200005, 200008  # <|channel|>, <|message|>


def _request(**fields) -> ResponsesRequest:
    return ResponsesRequest(input="hi", stream=True, store=False, **fields)


# ---------------------------------------------------------------------------------------
# Batch-size independence and SDK acceptance
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", range(4))
def test_one_and_twenty_tokens_per_response_give_the_same_client_events(fixed, chunk):
    for output in OUTPUTS[chunk::4]:
        request = _request()
        one = harness.stream(output, 1, request=request)
        twenty = harness.stream(output, 20, request=request)
        assert harness.comparable(one) == harness.comparable(twenty), output.seed
        for events in (one, twenty):
            _check_with_sdk(events, output.seed)
        assert one[-1]["type"] in ("response.completed", "response.incomplete", "response.failed")


def test_postproc_workers_give_the_same_client_events(fixed):
    for output in OUTPUTS[:25]:
        request = _request()
        inline = harness.stream(output, 20, request=request)
        workers = harness.stream(output, 20, request=request, workers=2)
        assert harness.comparable(inline) == harness.comparable(workers), output.seed
        _check_with_sdk(workers, output.seed)


def _check_with_sdk(events: list[dict], seed: int) -> None:
    """Sequence numbers 0..n-1; the SDK accumulator accepts (and completes) the stream."""
    assert [e["sequence_number"] for e in events] == list(range(len(events))), seed
    completed = sdk_accumulate(events)  # raises what the SDK raises
    if events[-1]["type"] == "response.completed":
        assert completed is not None and completed.id == events[0]["response"]["id"], seed


def test_without_the_plugin_the_standin_reproduces_upstreams_batch_dependence():
    """Pinning: the stand-in really has the bug, so the tests above can fail."""
    uninstall()
    differ = 0
    for output in OUTPUTS[:20]:
        request = _request()
        try:
            one = harness.stream(output, 1, request=request)
            twenty = harness.stream(output, 20, request=request)
        except Exception:
            differ += 1
            continue
        differ += harness.comparable(one) != harness.comparable(twenty)
    assert differ > 10


@pytest.mark.parametrize("name", ["preamble_tool_call", "analysis_tool_call", "length_cut"])
def test_final_response_ids_match_the_streamed_items(fixed, name):
    events = harness.stream(named_output(name), 20, tools=[_weather_tool()])
    added = [e["item"]["id"] for e in events if e["type"] == "response.output_item.added"]
    final = [item["id"] for item in events[-1]["response"]["output"]]
    assert added == final and all(added)
    calls = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    assert len(calls) == (name != "length_cut")


def _weather_tool() -> dict:
    return {
        "type": "function",
        "name": "get_weather",
        "description": "weather",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    }


# ---------------------------------------------------------------------------------------
# Non-Harmony passthrough and non-streaming parity
# ---------------------------------------------------------------------------------------


def _text_result(sampling_params, done: bool, text: str) -> GenerationResult:
    res = GenerationResult(1, sampling_params, [1, 2])
    res._handle_sequence([5], done=done, finish_reason="stop" if done else None, text=text)
    return res


def test_non_harmony_requests_run_upstream_code_unchanged(fixed):
    request = _request()
    sampling = request.to_sampling_params()
    base = responses_utils.ResponsesStreamingProcessor.__mro__[1]
    frames = {}
    for cls in (responses_utils.ResponsesStreamingProcessor, base):
        processor = cls(request, sampling, "m", create_time=1, use_harmony=False)
        res = _text_result(sampling, True, "Hello")
        body = processor.process_single_output(res)
        body.append(processor.get_final_response_non_store(res, 2))
        frames[cls] = [
            {k: v for k, v in e.items() if k not in ("item_id", "item", "response")}
            for e in harness.frames_to_events(processor.get_initial_responses() + body)
        ]
    assert frames[responses_utils.ResponsesStreamingProcessor] == frames[base]


def test_non_streaming_output_matches_the_stream_final_response(fixed):
    for output in OUTPUTS[:30]:
        if output.malformed:
            continue
        events = harness.stream(output, 20)
        streamed = events[-1]["response"]["output"]
        request = _request()
        request.stream = False
        server = openai_server.OpenAIServer(harness.engine_for(output, 20))
        response = asyncio.run(server.openai_responses(request))
        plain = response.model_dump(mode="json", exclude_none=True)["output"]

        def shape(items):
            return [(i["type"], i.get("status"), i.get("phase"), _text(i)) for i in items]

        assert shape(plain) == shape(streamed), output.seed


def _text(item: dict) -> str:
    if item["type"] == "function_call":
        return item["arguments"]
    parts = item.get("content") or []
    return "".join(p.get("text", "") for p in parts)


# ---------------------------------------------------------------------------------------
# Multi-turn: a streamed preamble sent back as input
# ---------------------------------------------------------------------------------------


def _prompt(input_items) -> list[int]:
    request = ResponsesRequest(input=input_items, stream=True, store=False)
    tokens, _ = asyncio.run(
        responses_utils.request_preprocess(
            request, None, responses_utils.ConversationHistoryStore(), False, True
        )
    )
    return tokens


def _preamble_turn(text: str) -> list[dict]:
    return [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {
            "type": "message",
            "role": "assistant",
            "phase": "commentary",
            "status": "completed",
            "id": "msg_1",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
    ]


def test_preamble_round_trip_renders_on_the_commentary_channel(fixed):
    from trtllm_stream_fix.encoding import load_gpt_oss_encoding

    text = "Let me check the weather first."
    rendered = load_gpt_oss_encoding().decode(_prompt(_preamble_turn(text)))
    assert f"<|start|>assistant<|channel|>commentary<|message|>{text}<|end|>" in rendered


def test_without_the_plugin_the_preamble_loses_its_channel():
    """Pinning: upstream renders the item with no channel at all."""
    from trtllm_stream_fix.encoding import load_gpt_oss_encoding

    uninstall()
    rendered = load_gpt_oss_encoding().decode(_prompt(_preamble_turn("Checking.")))
    assert "<|start|>assistant<|message|>Checking.<|end|>" in rendered


def _reasoning_tool_turn(thought: str) -> list[dict]:
    return [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": thought}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": '{"temp": 20}'},
    ]


def test_reasoning_round_trip_renders_on_the_analysis_channel(fixed):
    from trtllm_stream_fix.encoding import load_gpt_oss_encoding

    thought = "Need the weather for Paris."
    rendered = load_gpt_oss_encoding().decode(_prompt(_reasoning_tool_turn(thought)))
    assert f"<|start|>assistant<|channel|>analysis<|message|>{thought}<|end|>" in rendered


def test_without_the_plugin_reasoning_loses_its_channel():
    """Pinning: upstream renders a reasoning input item with no channel."""
    from trtllm_stream_fix.encoding import load_gpt_oss_encoding

    uninstall()
    thought = "Need the weather for Paris."
    rendered = load_gpt_oss_encoding().decode(_prompt(_reasoning_tool_turn(thought)))
    assert "<|channel|>analysis" not in rendered
    assert thought in rendered
