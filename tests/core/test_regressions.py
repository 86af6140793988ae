# SPDX-License-Identifier: Apache-2.0
"""Regression tests: each one passes on ours and fails on the upstream-equivalent baseline.

The ``upstream`` parameter is marked ``xfail(strict=True)``: if the baseline ever passed,
the test would report XPASS as a failure, proving the test can detect the bug.
"""

from __future__ import annotations

import pytest
from _streams import of_type, run, split, text_by_item

from trtllm_stream_fix.checker import check_responses_events
from trtllm_stream_fix.differential.sdk_oracle import sdk_accumulate
from trtllm_stream_fix.differential.visible import client_visible

pytestmark = pytest.mark.cpu_only

IMPLS = [
    "ours",
    pytest.param("upstream", marks=pytest.mark.xfail(strict=True, reason="upstream bug")),
]

REASONING_ANSWER = (
    "<|channel|>analysis<|message|>User asks the capital.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Paris is the capital.<|return|>"
)
PREAMBLE_TOOL = (
    "<|channel|>analysis<|message|>Need weather.<|end|>"
    "<|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city":"Paris"}<|call|>'
)
PREAMBLE_ANSWER = (
    "<|channel|>analysis<|message|>Think.<|end|>"
    "<|start|>assistant<|channel|>commentary<|message|>One moment.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Done here.<|return|>"
)


def assert_valid(events):
    check = check_responses_events(events)
    assert check.ok, check.violations
    sdk_accumulate(events)


@pytest.mark.parametrize("impl", IMPLS)
def test_reasoning_then_answer_in_one_20_token_response(impl, encoding, tokens):
    token_ids = tokens(REASONING_ANSWER)[:-1]  # <|return|> trimmed
    assert len(token_ids) <= 20
    events = run(impl, [token_ids], encoding=encoding)
    texts = sorted(text_by_item(events).values())
    assert texts == ["Paris is the capital.", "User asks the capital."]
    assert_valid(events)


@pytest.mark.parametrize("impl", IMPLS)
def test_preamble_then_tool_call_streams_the_call(impl, encoding, tokens):
    events = run(impl, split(tokens(PREAMBLE_TOOL)[:-1], 20), encoding=encoding)
    args = of_type(events, "function_call_arguments.done")
    assert [a["arguments"] for a in args] == ['{"city":"Paris"}']
    added = {e["output_index"]: e["item"]["type"] for e in of_type(events, "output_item.added")}
    assert added == {0: "reasoning", 1: "message", 2: "function_call"}
    assert_valid(events)


@pytest.mark.parametrize("impl", IMPLS)
def test_preamble_then_answer_indices_are_final_positions(impl, encoding, tokens):
    events = run(impl, split(tokens(PREAMBLE_ANSWER)[:-1], 1), encoding=encoding)
    final = events[-1]["response"]["output"]
    for event in events:
        if "output_index" in event:
            item_id = event.get("item_id") or event["item"]["id"]
            assert final[event["output_index"]]["id"] == item_id
    assert [i.get("phase") for i in final] == [None, "commentary", "final_answer"]


@pytest.mark.parametrize("impl", IMPLS)
def test_answer_cut_by_token_limit(impl, encoding, tokens):
    token_ids = tokens("<|channel|>final<|message|>The answer is forty")
    events = run(impl, split(token_ids, 20), "length", encoding=encoding)
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"]["reason"] == "max_output_tokens"
    done = of_type(events, "output_item.done")
    assert [d["item"]["status"] for d in done] == ["incomplete"]
    assert_valid(events)


@pytest.mark.parametrize("impl", IMPLS)
def test_stop_token_trimmed_on_last_response_closes_item(impl, encoding, tokens):
    token_ids = tokens("<|channel|>final<|message|>Hello there, city.<|return|>")
    responses = split(token_ids, 1)
    responses[-1] = []  # the trimmed stop token leaves an empty last response
    events = run(impl, responses, encoding=encoding)
    assert text_by_item(events) and list(text_by_item(events).values()) == ["Hello there, city."]
    assert [d["item"]["status"] for d in of_type(events, "output_item.done")] == ["completed"]
    assert_valid(events)


@pytest.mark.parametrize("impl", IMPLS)
def test_response_with_no_new_tokens_emits_and_shifts_nothing(impl, encoding, tokens):
    token_ids = tokens(REASONING_ANSWER)[:-1]
    half = len(token_ids) // 2
    plain = run(impl, [token_ids[:half], token_ids[half:]], encoding=encoding)
    padded = run(impl, [token_ids[:half], [], [], token_ids[half:]], encoding=encoding)
    assert client_visible(plain) == client_visible(padded)
    assert [e["sequence_number"] for e in padded] == list(range(len(padded)))
    assert_valid(padded)


@pytest.mark.parametrize("impl", IMPLS)
def test_multibyte_character_split_across_responses(impl, encoding, tokens):
    token_ids = tokens("<|channel|>final<|message|>Family: 👨‍👩‍👧‍👦 and 日本語.<|return|>")[:-1]
    events = run(impl, split(token_ids, 3), encoding=encoding)
    assert list(text_by_item(events).values()) == ["Family: 👨‍👩‍👧‍👦 and 日本語."]
    assert_valid(events)


@pytest.mark.parametrize("impl", IMPLS)
def test_parser_error_mid_stream_ends_failed_without_exception(impl, encoding, tokens):
    token_ids = tokens(
        "<|channel|>analysis<|message|>Think.<|end|><|channel|>final<|message|>Hi<|return|>"
    )[:-1]
    events = run(impl, split(token_ids, 4), encoding=encoding)
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert events[-1]["response"]["status"] == "failed"
    assert_valid(events)


@pytest.mark.parametrize("impl", IMPLS)
def test_item_ids_shared_with_final_response(impl, encoding, tokens):
    events = run(impl, split(tokens(PREAMBLE_TOOL)[:-1], 5), encoding=encoding)
    streamed = [e["item"]["id"] for e in of_type(events, "output_item.added")]
    assert all(streamed)
    assert streamed == [i["id"] for i in events[-1]["response"]["output"]]
