# SPDX-License-Identifier: Apache-2.0
"""Chat chunk machine: role once, fields, tool calls, one finish, usage, [DONE], errors."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from trtllm_stream_fix.core import chat_chunks as cc
from trtllm_stream_fix.core.chat_machine import (
    DEFAULT_CHAT_OPTIONS,
    ChatChunkMachine,
    ChatContext,
    ChatGenerationError,
    ChatOptions,
    build_chat_completion,
)
from trtllm_stream_fix.core.errors import LifecycleError
from trtllm_stream_fix.core.harmony_tokens import MARKUP
from trtllm_stream_fix.core.turn import Stage
from trtllm_stream_fix.defaults import default_encoding
from trtllm_stream_fix.differential.chat import (
    chat_nonstreaming,
    chat_stream,
    chat_visible,
    check_chat_payloads,
)
from trtllm_stream_fix.differential.chat_oracle import sdk_accumulate_chat
from trtllm_stream_fix.sim.model import _corpus, engine_responses, named_output

pytestmark = pytest.mark.cpu_only

A = "<|start|>assistant"
ENC = default_encoding()


def tokens(text: str) -> list[int]:
    return list(_corpus().encode(text))


def context(**kwargs: Any) -> ChatContext:
    kwargs.setdefault("include_usage", True)
    return ChatContext("chatcmpl-test", "gpt-oss-20b", 1, num_prompt_tokens=5, **kwargs)


def run(
    token_ids: list[int],
    split: int = 1,
    finish_reason: str = "stop",
    options: ChatOptions = DEFAULT_CHAT_OPTIONS,
    **ctx: Any,
) -> list[Any]:
    """Payloads of a stream of ``token_ids`` at ``split`` tokens per response."""
    machine = ChatChunkMachine(context(**ctx), options=options, encoding=ENC)
    frames = machine.start()
    batches = [token_ids[i : i + split] for i in range(0, len(token_ids), split)] or [[]]
    for i, batch in enumerate(batches):
        last = i == len(batches) - 1
        frames += machine.feed(batch, finished=last, finish_reason=finish_reason if last else None)
    return [cc.to_dict(f) for f in frames]


def deltas(payloads: list[Any], key: str) -> str:
    return "".join(
        c["delta"].get(key) or ""
        for p in payloads
        if isinstance(p, dict) and "choices" in p
        for c in p["choices"]
    )


def finishes(payloads: list[Any]) -> list[str]:
    return [
        c["finish_reason"]
        for p in payloads
        if isinstance(p, dict)
        for c in p.get("choices", [])
        if c.get("finish_reason")
    ]


PREAMBLE_TOOL = (
    "<|channel|>analysis<|message|>Need the weather.<|end|>"
    f"{A}<|channel|>commentary<|message|>Let me look it up.<|end|>"
    f"{A} to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>"
    '{"city": "Paris"}'
)


def test_role_once_then_fields_then_one_finish_usage_done() -> None:
    payloads = run(tokens(PREAMBLE_TOOL), split=20)
    roles = [
        c["delta"]["role"] for p in payloads[:-1] for c in p["choices"] if "role" in c["delta"]
    ]
    assert roles == ["assistant"]
    assert payloads[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert deltas(payloads, "reasoning") == "Need the weather."
    assert deltas(payloads, "content") == "Let me look it up."
    assert finishes(payloads) == ["tool_calls"]
    assert payloads[-1] == "[DONE]"
    usage = payloads[-2]
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] == 5 + len(
        tokens(PREAMBLE_TOOL)
    )
    assert len({p["id"] for p in payloads[:-1]}) == 1


@pytest.mark.parametrize(
    "header",
    [
        f"{A} to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>",
        f"{A}<|channel|>commentary to=functions.get_weather json<|message|>",
        f"{A} to=functions.get_weather<|channel|>analysis <|constrain|>json<|message|>",
        f"{A}<|channel|>analysis to=functions.get_weather<|message|>",
    ],
)
@pytest.mark.parametrize("split", [1, 3, 20])
def test_tool_call_on_either_channel_streams_arguments(header: str, split: int) -> None:
    text = "<|channel|>analysis<|message|>Think.<|end|>" + header + '{"city": "Tokyo"}'
    payloads = run(tokens(text), split=split)
    calls = [
        call
        for p in payloads
        if isinstance(p, dict)
        for c in p.get("choices", [])
        for call in c["delta"].get("tool_calls") or []
    ]
    first = calls[0]
    assert first["index"] == 0 and first["type"] == "function"
    assert first["id"] == "call_test_0" and first["function"]["name"] == "get_weather"
    assert all("id" not in call and "name" not in call["function"] for call in calls[1:])
    assert "".join(call["function"]["arguments"] for call in calls) == '{"city": "Tokyo"}'
    assert deltas(payloads, "reasoning") == "Think."  # the arguments never land in reasoning
    assert finishes(payloads) == ["tool_calls"]


def test_two_calls_get_indexes_0_and_1() -> None:
    call = f"{A} to=functions.f<|channel|>commentary <|constrain|>json<|message|>{{}}<|call|>"
    payloads = run(tokens(call[len(A) :] + call))
    ids = [
        (t["index"], t.get("id"))
        for p in payloads
        if isinstance(p, dict)
        for c in p.get("choices", [])
        for t in c["delta"].get("tool_calls") or []
        if t.get("id")
    ]
    assert ids == [(0, "call_test_0"), (1, "call_test_1")]


@pytest.mark.parametrize(
    ("preambles", "content", "reasoning"),
    [
        ("content", "Let me look it up.", "Need the weather."),
        ("reasoning", "", "Need the weather.\n\nLet me look it up."),
        ("drop", "", "Need the weather."),
    ],
)
def test_preamble_options_never_carry_markup(preambles: str, content: str, reasoning: str) -> None:
    payloads = run(tokens(PREAMBLE_TOOL), options=ChatOptions(preambles=preambles))
    assert deltas(payloads, "content") == content
    assert deltas(payloads, "reasoning") == reasoning
    assert not any(m in deltas(payloads, "content") for m in MARKUP)


def test_reasoning_content_option() -> None:
    payloads = run(tokens(PREAMBLE_TOOL), options=ChatOptions(reasoning_field="reasoning_content"))
    assert deltas(payloads, "reasoning_content") == "Need the weather."
    assert deltas(payloads, "reasoning") == ""


def test_preamble_then_final_answer_is_sent() -> None:
    # Upstream's newer line aborts here ("repeated message") and never sends the answer.
    text = (
        "<|channel|>analysis<|message|>Plan.<|end|>"
        f"{A}<|channel|>commentary<|message|>One moment.<|end|>"
        f"{A}<|channel|>final<|message|>The answer is 42."
    )
    for split in (1, 7, 100):
        payloads = run(tokens(text), split=split)
        assert deltas(payloads, "content") == "One moment.\n\nThe answer is 42."
        assert finishes(payloads) == ["stop"]


def test_length_and_stop_finish() -> None:
    text = "<|channel|>final<|message|>Rivers shape valleys and"
    assert finishes(run(tokens(text), finish_reason="length")) == ["length"]
    assert finishes(run(tokens(text + "<|return|>"), finish_reason="stop")) == ["stop"]
    # A stop inside a header is not a token limit; a cut inside a header is one.
    cut = tokens("<|channel|>final<|message|>Hi.<|end|>" + A + "<|channel|>fin")
    assert finishes(run(cut, finish_reason="stop")) == ["stop"]
    assert finishes(run(cut, finish_reason="length")) == ["length"]


def test_usage_only_when_asked() -> None:
    payloads = run(tokens("<|channel|>final<|message|>Hi."), include_usage=False)
    assert not any(isinstance(p, dict) and "usage" in p for p in payloads)
    assert payloads[-2]["choices"][0]["finish_reason"] == "stop"


def test_coalesced_within_a_response_nothing_held_back() -> None:
    text = tokens("<|channel|>analysis<|message|>abc def ghi<|end|>" + A)
    text += tokens("<|channel|>final<|message|>one two three four five six seven eight")
    machine = ChatChunkMachine(context(), encoding=ENC)
    machine.start()
    sent = ""
    for i in range(0, len(text), 5):
        batch = text[i : i + 5]
        chunks = [cc.to_dict(f) for f in machine.feed(batch)]
        fields = [next(iter(c["choices"][0]["delta"])) for c in chunks]
        assert len(fields) == len(set(fields)) or fields == ["reasoning", "content"]
        sent += deltas(chunks, "content")
        decoded = _corpus()._enc.decode(text[: i + len(batch)])
        answer = decoded.split("<|message|>")[-1] if "final<|message|>" in decoded else ""
        assert sent == answer  # every content token of the response is out
    # All 20 tokens of one message in one response: one chunk.
    machine = ChatChunkMachine(context(), encoding=ENC)
    machine.start()
    one = tokens("<|channel|>final<|message|>") + tokens(" word" * 20)
    chunks = machine.feed(one)
    assert len(chunks) == 1


def test_parse_error_is_readable_and_whole() -> None:
    out = named_output("malformed_missing_start")
    for split in (1, 20):
        payloads = chat_stream(out, split)
        assert payloads[-1] == "[DONE]"
        error = payloads[-2]["error"]
        assert "invalid Harmony token sequence" in error["message"]
        assert finishes(payloads) == []
        assert deltas(payloads, "reasoning") == "Think briefly."
        assert sdk_accumulate_chat(payloads).error == error["message"]
        check = check_chat_payloads(payloads)
        assert not check.violations and check.error["message"] == error["message"]
    with pytest.raises(ChatGenerationError, match="invalid Harmony token sequence"):
        build_chat_completion(context(), out.delivered, "stop", encoding=ENC)


@pytest.mark.parametrize(
    ("text", "finish", "message"),
    [
        ("<|channel|>commentary to=functions. <|constrain|>json<|message|>{}", "stop", "name"),
        ("<|channel|>final<|message|>Hi", "abort", "finish reason 'abort'"),
    ],
)
def test_turn_errors_end_the_stream(text: str, finish: str, message: str) -> None:
    payloads = run(tokens(text), finish_reason=finish)
    assert message in payloads[-2]["error"]["message"]
    assert payloads[-1] == "[DONE]"


def test_nothing_after_done() -> None:
    machine = ChatChunkMachine(context(), encoding=ENC)
    machine.start()
    frames = machine.feed(tokens("<|channel|>final<|message|>Hi"), finished=True)
    assert frames[-1] is cc.DONE
    assert machine.feed(tokens(" more"), finished=True) == []
    assert machine.fail("late") == []


def test_sse_framing() -> None:
    machine = ChatChunkMachine(context(), encoding=ENC)
    frames = machine.start() + machine.feed(tokens("<|channel|>final<|message|>Hi"), finished=True)
    wire = "".join(cc.format_chat_sse(f) for f in frames)
    assert wire.endswith("data: [DONE]\n\n")
    assert wire.startswith('data: {"id":"chatcmpl-test","object":"chat.completion.chunk"')
    assert '"finish_reason":null' in wire  # on the wire until the finish chunk


def test_feed_or_fail_before_start_raises_as_on_the_responses_machine() -> None:
    machine = ChatChunkMachine(context(), encoding=ENC)
    with pytest.raises(LifecycleError, match="before start"):
        machine.feed(tokens("<|channel|>final<|message|>Hi"))
    with pytest.raises(LifecycleError, match="before start"):
        machine.fail("early")
    assert machine.stage is Stage.NEW
    assert [cc.to_dict(f)["choices"][0]["delta"] for f in machine.start()] == [
        {"role": "assistant"}
    ]


def test_partial_utf8_then_later_message_in_same_response() -> None:
    # The settled U+FFFD of message 0 must not be read from message 1 (batch-size dependence).
    emoji = list(_corpus().encode(" 🇫🇷"))
    # " 🇫🇷" is 4 tokens; the third leaves a UTF-8 sequence unfinished.
    text = tokens("<|channel|>final<|message|>Hi") + emoji[:3] + tokens("<|end|>")
    text += tokens(A + "<|channel|>final<|message|>SECOND message<|return|>")
    streams = [chat_visible(run(text, split=s)) for s in (1, 2, 7, len(text))]
    assert all(s == streams[0] for s in streams)


@pytest.mark.parametrize("name", ["preamble_tool_call", "reasoning_answer", "length_cut"])
def test_nonstreaming_equals_sdk_accumulated_stream(name: str) -> None:
    out = named_output(name)
    streamed = sdk_accumulate_chat(chat_stream(out, random.Random(3))).completion
    body = chat_nonstreaming(out)

    def view(completion: dict[str, Any]) -> tuple[Any, ...]:
        (choice,) = completion["choices"]
        message = choice["message"]
        calls = [
            (c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls") or []
        ]
        usage = completion["usage"]
        return (
            completion["id"],
            message["role"],
            message.get("content"),
            message.get("reasoning"),
            calls,
            choice["finish_reason"],
            (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]),
        )

    assert view(body) == view(streamed)


def test_engine_responses_unchanged_by_machine() -> None:
    # The differential's stream helper and a hand-driven machine agree.
    out = named_output("preamble_answer")
    machine = ChatChunkMachine(
        ChatContext("chatcmpl-differential", "gpt-oss-20b", 0, include_usage=True), encoding=ENC
    )
    frames = machine.start()
    for r in engine_responses(out, 7):
        frames += machine.feed(r.token_ids_diff, finished=r.finished, finish_reason=r.finish_reason)
    assert [cc.to_dict(f) for f in frames] == chat_stream(out, 7)


def test_numpy_token_arrays_give_the_same_stream() -> None:
    import numpy as np

    text = tokens(PREAMBLE_TOOL)
    expected = chat_visible(run(text, split=3))
    for dtype in (np.int32, np.int64, np.uint32):
        machine = ChatChunkMachine(context(), encoding=ENC)
        frames = machine.start()
        for i in range(0, len(text), 3):
            batch = np.asarray(text[i : i + 3], dtype=dtype)
            frames += machine.feed(batch, finished=i + 3 >= len(text), finish_reason="stop")
        assert chat_visible([cc.to_dict(f) for f in frames]) == expected


@pytest.mark.parametrize("field", ["content", "reasoning", "reasoning_content"])
def test_fast_text_json_equals_the_models_json(field: str) -> None:
    import json

    from trtllm_stream_fix.core.compat import json_dumps  # orjson where installed

    header = cc.ChatHeader('chatcmpl-"x"', "gpt-oss-20b", 7)
    chunk = cc.text_chunk(header, field, 'a "quoted" 🎉\n\\ text')
    fast = json.loads(cc.to_json(chunk))
    assert fast == chunk.model_dump(mode="json", exclude_unset=True)
    assert fast == json.loads(json_dumps(chunk, default=cc._fields))


@pytest.mark.parametrize("odd", [5.0, np.float64(5.0), "5", None], ids=repr)
@pytest.mark.parametrize("parser", ["fast", "reference"])
def test_a_value_that_is_no_token_id_fails_the_same_at_every_split(odd, parser) -> None:
    token_ids = tokens("<|channel|>final<|message|>Hello") + [odd, 13, 14]
    options = ChatOptions(parser=parser)
    errors = set()
    for split in (1, 2, 3, len(token_ids)):
        payloads = run(token_ids, split, options=options)
        assert payloads[-1] == "[DONE]"
        error = payloads[-2]["error"]
        errors.add((error["message"], error.get("code"), error.get("type")))
    assert len(errors) == 1, errors
    assert "is not a token id" in errors.pop()[0]
