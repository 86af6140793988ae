# SPDX-License-Identifier: Apache-2.0
"""Chat Completions stream checker.

Covers [DONE], one finish per choice, reasoning apart from content, tool-call assembly and
error payloads.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from trtllm_stream_fix.checker import CHAT_ADVISORY_RULES, CHAT_RULES, ChatStreamChecker

pytestmark = pytest.mark.cpu_only


def chunk(
    delta: dict[str, Any], finish: str | None = None, index: int = 0, **extra: Any
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-oss-20b",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def valid_chunks() -> list[dict[str, Any]]:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    return [
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "Need the "}),
        chunk({"reasoning_content": "weather."}),
        chunk({"content": "Checking "}),
        chunk({"content": "now."}),
        chunk({"tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
        chunk({}, "tool_calls"),
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-oss-20b",
            "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
        },
    ]


def run(
    chunks: list[Any],
    done: bool = True,
    allow: tuple[str, ...] = (),
    require: tuple[str, ...] = (),
) -> Any:
    checker = ChatStreamChecker(allow=allow, require=require)
    for c in chunks:
        if c == "[DONE]":
            checker.feed_done()
        else:
            checker.feed(c)
    if done:
        checker.feed_done()
    return checker.finish()


def test_valid_stream_assembles() -> None:
    result = run(valid_chunks())
    assert result.ok, result.violations
    assert result.terminal == "completed"
    (choice,) = result.choices
    assert choice.role == "assistant"
    assert choice.reasoning == "Need the weather."
    assert choice.content == "Checking now."
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "get_weather", '{"city": "Paris"}')
    assert result.usage == {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
    assert result.completion_id == "chatcmpl-1"


def test_reasoning_alias_kept_apart() -> None:
    result = run([chunk({"reasoning": "think"}), chunk({"content": "say"}, "stop")])
    assert result.ok
    assert (result.choices[0].reasoning, result.choices[0].content) == ("think", "say")


def _mutate(fn: Any) -> list[Any]:
    chunks = copy.deepcopy(valid_chunks())
    fn(chunks)
    return chunks


CASES = [
    ("done missing", lambda c: None, False, "done-missing"),
    (
        "chunk after done",
        lambda c: c.append("[DONE]") or c.append(chunk({"content": "x"})),
        False,
        "after-done",
    ),
    ("second finish", lambda c: c.insert(9, chunk({}, "stop")), True, "finish-twice"),
    (
        "content after finish",
        lambda c: c.insert(9, chunk({"content": "late"})),
        True,
        "after-finish",
    ),
    (
        "unknown finish reason",
        lambda c: c[8]["choices"][0].update(finish_reason="eos"),
        True,
        "finish-reason",
    ),
    ("never finished", lambda c: c.pop(8), True, "finish-missing"),
    (
        "markup in content",
        lambda c: c[4]["choices"][0]["delta"].update(content="now.<|end|>"),
        True,
        "markup-leak",
    ),
    (
        "tool call without name",
        lambda c: c[5]["choices"][0]["delta"]["tool_calls"][0]["function"].pop("name"),
        True,
        "tool-call-first",
    ),
    (
        "tool call index gap",
        lambda c: c[5]["choices"][0]["delta"]["tool_calls"][0].update(index=1),
        True,
        "tool-call-index",
    ),
    (
        "tool call id changed",
        lambda c: c[6]["choices"][0]["delta"]["tool_calls"][0].update(id="call_2"),
        True,
        "tool-call-identity",
    ),
    ("id changed", lambda c: c[3].update(id="chatcmpl-2"), True, "chunk-id"),
    ("wrong object", lambda c: c[3].update(object="chat.completion"), True, "schema"),
    ("usage total", lambda c: c[9]["usage"].update(total_tokens=3), True, "usage-total"),
    ("string index", lambda c: c[3]["choices"][0].update(index="0"), True, "choice-index"),
]


@pytest.mark.parametrize(
    ("mutate", "done", "rule"), [pytest.param(m, d, r, id=n) for n, m, d, r in CASES]
)
def test_mutation_is_reported(mutate: Any, done: bool, rule: str) -> None:
    result = run(_mutate(mutate), done=done, require=tuple(CHAT_ADVISORY_RULES))
    assert not result.ok
    assert result.has(rule), result.violations


def test_every_rule_has_a_case() -> None:
    assert {r for *_, r in CASES} == set(CHAT_RULES)


@pytest.mark.parametrize(
    "payload",
    [
        {"error": {"message": "overloaded", "type": "server_error", "code": 503}},
        {"object": "error", "message": "bad request", "type": "BadRequestError", "code": 400},
        {"error": "plain text error"},
    ],
)
def test_error_payload_is_detected(payload: dict[str, Any]) -> None:
    result = run([chunk({"content": "partial"}), payload], done=False)
    assert result.error is not None and result.error.get("message")
    assert result.terminal == "failed"
    assert not result.ok
    assert not result.has("done-missing")


def test_multiple_choices_kept_apart() -> None:
    result = run(
        [
            chunk({"content": "a"}, index=0),
            chunk({"content": "b"}, index=1),
            chunk({"content": "c"}, "stop", index=0),
            chunk({}, "length", index=1),
        ]
    )
    assert result.ok
    assert [(c.content, c.finish_reason) for c in result.choices] == [
        ("ac", "stop"),
        ("b", "length"),
    ]


def test_allow_and_unknown_allow() -> None:
    chunks = valid_chunks()
    chunks[9]["usage"]["total_tokens"] = 0
    assert run(chunks, allow=("usage-total",)).ok
    with pytest.raises(ValueError, match="unknown rule codes"):
        ChatStreamChecker(allow=("nope",))


def test_markup_split_over_deltas_is_a_leak_when_required() -> None:
    chunks = valid_chunks()
    chunks[3]["choices"][0]["delta"]["content"] = "Checking <|e"
    chunks[4]["choices"][0]["delta"]["content"] = "nd|>now."
    result = run(chunks, require=("markup-leak",))
    assert result.has("markup-leak"), result.violations
    assert any("[markup-leak]" in w for w in run(chunks).warnings)


@pytest.mark.parametrize("marker", ["<|end|>", "<|return|>", "<|call|>"])
def test_stop_marker_text_is_a_warning(marker: str) -> None:
    # A model explaining Harmony writes "<|end|>" with ordinary tokens; the chat machine
    # streams it as content, and the checker sees text, not token ids: a warning.
    chunks = valid_chunks()
    chunks[4]["choices"][0]["delta"]["content"] = f"A message ends with {marker} in Harmony."
    result = run(chunks)
    assert result.ok, result.violations
    assert any("[markup-leak]" in w for w in result.warnings), result.warnings


def test_literal_special_token_text_is_a_warning() -> None:
    # A special token inside content is text to the parser: the model wrote it.
    chunks = valid_chunks()
    chunks[4]["choices"][0]["delta"]["content"] = "Use <|channel|>final<|message|> literally."
    result = run(chunks)
    assert result.ok, result.violations
    assert any("[markup-leak]" in w for w in result.warnings)
