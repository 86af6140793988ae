# SPDX-License-Identifier: Apache-2.0
"""Disaggregated serving on the workers, on the stand-in (upstream's shape, see
``tests/standin/``) and the chat replacements: a generation-only result carries the context
worker's usage (``disaggregated_params.ctx_usage``) and the plugin reports its prompt and
cached tokens in the stream and the body, as upstream does; a context-only chat result (one
token, finish reason ``not_finished``) is the orchestrator's hand-off, not an error.

The real modules, over upstream's own server: ``tests/upstream/test_real_disagg.py``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "standin"))
import plugin_harness as harness

harness.use_standin()

from tensorrt_llm.serve import openai_server, responses_utils  # noqa: F401 (patched on install)

from trtllm_stream_fix.differential.chat import check_chat_payloads
from trtllm_stream_fix.plugin.chat import (
    chat_harmony_post_processor,
    chat_harmony_streaming_post_processor,
)
from trtllm_stream_fix.serving.disaggregated import (
    ContextCounts,
    context_counts,
    is_context_only,
    usage_counts,
)
from trtllm_stream_fix.sim.model import engine_responses, named_output

pytestmark = pytest.mark.cpu_only

#: The context worker's usage as the orchestrator relays it (``UsageInfo`` dumped): 96 prompt
#: tokens, 64 found in its KV cache. The generation worker reports the whole prompt cached.
CTX_USAGE = {
    "prompt_tokens": 96,
    "completion_tokens": 1,
    "total_tokens": 97,
    "prompt_tokens_details": {"cached_tokens": 64},
}
GENERATION_ONLY = SimpleNamespace(request_type="generation_only", ctx_usage=CTX_USAGE)


# -- reading the hand-off ------------------------------------------------------------------


@pytest.mark.parametrize(
    "usage, expected",
    [
        (CTX_USAGE, (96, 64)),
        ({"prompt_tokens": 96, "prompt_tokens_details": None}, (96, 0)),
        (SimpleNamespace(prompt_tokens=numpy.int64(5), prompt_tokens_details=None), (5, 0)),
        (
            SimpleNamespace(
                prompt_tokens=7, prompt_tokens_details=SimpleNamespace(cached_tokens=3)
            ),
            (7, 3),
        ),
        (None, None),
        ({"prompt_tokens": None}, None),
        ({"prompt_tokens": True}, None),
    ],
)
def test_usage_counts_read_a_context_usage_as_upstream_does(usage, expected):
    assert usage_counts(usage) == (None if expected is None else ContextCounts(*expected))


def test_context_counts_prefer_the_relayed_usage_then_the_outputs():
    outputs = [
        SimpleNamespace(disaggregated_params=None),
        SimpleNamespace(disaggregated_params=GENERATION_ONLY),
    ]
    assert context_counts(outputs) == (96, 64)
    assert context_counts(outputs, {"prompt_tokens": 5}) == (5, 0)
    assert context_counts([SimpleNamespace()]) is None
    assert context_counts(None) is None


def test_is_context_only():
    assert is_context_only(SimpleNamespace(disaggregated_params={"request_type": "context_only"}))
    assert not is_context_only(SimpleNamespace(disaggregated_params=GENERATION_ONLY))
    assert not is_context_only(SimpleNamespace(disaggregated_params=None))


# -- Responses, on the stand-in ---------------------------------------------------------------


def test_generation_only_stream_reports_the_context_workers_usage(fixed):
    """The terminal event's input and cached tokens are the context worker's, not the
    generation worker's (which received the whole prompt as KV cache: all of it cached)."""
    output = named_output("reasoning_answer")
    processor = harness.new_processor()
    assert getattr(type(processor), "__trtllm_stream_fix__", False)
    frames = harness.drive(
        processor, output, 20, cached_tokens=3, disaggregated_params=GENERATION_ONLY
    )
    usage = harness.frames_to_events(frames)[-1]["response"]["usage"]
    assert (usage["input_tokens"], usage["input_tokens_details"]["cached_tokens"]) == (96, 64)
    assert usage["total_tokens"] == 96 + usage["output_tokens"]


@pytest.mark.parametrize("name", ["reasoning_answer", "preamble_tool_call", "length_cut"])
def test_generation_only_body_and_stream_report_one_usage(fixed, name):
    """Upstream's body takes its input side from ``ctx_usage``; the plugin's usage wrapper
    keeps it, and the stream now reports the same."""
    from tensorrt_llm.executor import GenerationResult

    output = named_output(name)
    processor = harness.new_processor()
    frames = harness.drive(
        processor, output, 20, cached_tokens=3, disaggregated_params=GENERATION_ONLY
    )
    streamed = harness.frames_to_events(frames)[-1]["response"]["usage"]
    res = GenerationResult(1, processor.sampling_params, [1, 2, 3])
    res.cached_tokens = 3
    for response in engine_responses(output, 10**6):
        res._handle_sequence(
            list(response.token_ids_diff), done=True, finish_reason=response.finish_reason
        )
    res.outputs[0].disaggregated_params = GENERATION_ONLY
    body = responses_utils.create_response_non_store(
        generation_result=res,
        request=processor.request,
        sampling_params=processor.sampling_params,
        model_name="gpt-oss-20b",
        num_prompt_tokens=3,
    )
    usage = body.model_dump(mode="json")["usage"]
    assert (usage["input_tokens"], usage["input_tokens_details"]["cached_tokens"]) == (96, 64)
    assert usage == {**streamed, "input_tokens_details": usage["input_tokens_details"]}
    assert streamed["input_tokens_details"]["cached_tokens"] == 64


def test_aggregated_stream_usage_is_unchanged(fixed):
    frames = harness.drive(harness.new_processor(), named_output("reasoning_answer"), 20, 2)
    usage = harness.frames_to_events(frames)[-1]["response"]["usage"]
    assert (usage["input_tokens"], usage["input_tokens_details"]["cached_tokens"]) == (3, 2)


# -- chat --------------------------------------------------------------------------------------


@dataclass
class StreamOptions:
    include_usage: bool = True


@dataclass(kw_only=True)
class ChatArgs:
    """The fields of upstream's ``ChatCompletionPostprocArgs`` the replacements read
    (``ctx_usage``: ``request.disaggregated_params.ctx_usage``, as ``from_request`` sets it)."""

    model: str = "gpt-oss-20b"
    tools: Any = None
    tool_choice: Any = None
    num_prompt_tokens: int = 7
    stream_options: StreamOptions | None = field(default_factory=StreamOptions)
    stream_response_id: str | None = None
    stream_created: int | None = None
    ctx_usage: Any = None


@dataclass
class ChatOutput:
    token_ids: list[int]
    token_ids_diff: list[int]
    finish_reason: str | None
    disaggregated_params: Any = None


@dataclass
class ChatResult:
    outputs: list[ChatOutput]
    _done: bool
    cached_tokens: int = 0


def chat_stream(args: ChatArgs, params: Any = None) -> list[Any]:
    import json

    sent: list[int] = []
    payloads: list[Any] = []
    for r in engine_responses(named_output("reasoning_answer"), 20):
        sent += r.token_ids_diff
        output = ChatOutput(list(sent), list(r.token_ids_diff), r.finish_reason, params)
        for frame in chat_harmony_streaming_post_processor(
            ChatResult([output], r.finished, 7), args
        ):
            payloads.append(json.loads(frame[len("data: ") :]))
    return payloads + ["[DONE]"]


@pytest.mark.parametrize("carrier", ["args", "outputs"])
def test_chat_generation_only_stream_and_body_report_the_context_usage(carrier):
    """``ctx_usage`` from the post-processing arguments (upstream's ``from_request``) or the
    outputs' ``disaggregated_params``: prompt tokens and ``prompt_tokens_details`` as
    upstream's ``rewrite_usage_info_from_ctx`` sets them, in the usage chunk and the body."""
    args = ChatArgs(ctx_usage=CTX_USAGE if carrier == "args" else None)
    params = GENERATION_ONLY if carrier == "outputs" else None
    payloads = chat_stream(args, params)
    assert not check_chat_payloads(payloads).violations
    usage = next(p["usage"] for p in payloads if isinstance(p, dict) and p.get("usage"))
    assert (usage["prompt_tokens"], usage["prompt_tokens_details"]) == (96, {"cached_tokens": 64})
    assert usage["total_tokens"] == 96 + usage["completion_tokens"]

    tokens = list(named_output("reasoning_answer").delivered)
    result = ChatResult([ChatOutput(tokens, tokens, "stop", params)], True, 7)
    body = chat_harmony_post_processor(
        result, ChatArgs(ctx_usage=args.ctx_usage, stream_options=None)
    )
    assert body.usage.prompt_tokens == 96 and body.usage.prompt_tokens_details.cached_tokens == 64
    assert body.usage.completion_tokens == usage["completion_tokens"]


def test_chat_aggregated_usage_has_no_prompt_details():
    """Without a hand-off the usage chunk is as before (no ``prompt_tokens_details``)."""
    payloads = chat_stream(ChatArgs())
    usage = next(p["usage"] for p in payloads if isinstance(p, dict) and p.get("usage"))
    assert usage["prompt_tokens"] == 7 and "prompt_tokens_details" not in usage


def test_chat_context_only_result_is_the_handoff_not_an_error():
    """The context worker's result is one token with finish reason ``not_finished``: the body
    hands it on (finish reason, ``disaggregated_params``, usage with the engine's cached
    tokens, which the orchestrator relays as ``ctx_usage``) instead of raising."""
    handoff = SimpleNamespace(request_type="context_only", first_gen_tokens=[200005])
    result = ChatResult([ChatOutput([200005], [200005], "not_finished", handoff)], True, 3)
    body = chat_harmony_post_processor(result, ChatArgs(stream_options=None))
    body = body if isinstance(body, dict) else body.model_dump()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "not_finished"
    assert choice["message"]["content"] is None and not choice["message"].get("tool_calls")
    assert body["usage"] == {
        "prompt_tokens": 7,
        "completion_tokens": 1,
        "total_tokens": 8,
        "prompt_tokens_details": {"cached_tokens": 3},
    }


def test_a_not_finished_result_without_a_handoff_is_still_an_error():
    result = ChatResult([ChatOutput([200005], [200005], "not_finished")], True)
    with pytest.raises(ValueError, match="not_finished"):
        chat_harmony_post_processor(result, ChatArgs(stream_options=None))
