# SPDX-License-Identifier: Apache-2.0
"""Hostile input cannot crash or slow down the checkers: wrong types, deep nesting, floods.

Real OpenAI stream forms (nested ``error`` object, codes the SDK does not list) pass with a
warning.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from _checker_streams import renumber, to_sse, valid_stream
from test_checker_chat import run as run_chat
from test_checker_chat import valid_chunks

from trtllm_stream_fix.checker import (
    ChatChoice,
    ChatStreamChecker,
    SSELimits,
    SSEReader,
    check_responses_events,
    replay_record,
)
from trtllm_stream_fix.checker import responses as responses_module

pytestmark = pytest.mark.cpu_only


def _nested(depth: int) -> list[Any]:
    """A list nested ``depth`` deep, built without recursion."""
    root: list[Any] = []
    node = root
    for _ in range(depth - 1):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


def _variants(value: Any) -> list[Any]:
    return [[value], {"x": value}, [[value, value]], None, 10**30, "x"]


def _mutations(event: dict[str, Any]) -> list[dict[str, Any]]:
    """Every top-level and second-level field of ``event`` replaced by a wrong type."""
    out = []
    for key, value in event.items():
        for bad in _variants(value):
            out.append({**event, key: bad})
        if isinstance(value, dict):
            for sub, sub_value in value.items():
                for bad in _variants(sub_value):
                    out.append({**event, key: {**value, sub: bad}})
    return out


def test_item_type_as_a_list_is_a_violation_not_a_type_error() -> None:
    events = valid_stream()
    events[2]["item"]["type"] = ["reasoning"]
    result = check_responses_events(events)
    assert not result.ok
    assert any("item type ['reasoning'] is not a string" in v for v in result.violations)


def test_finish_reason_as_a_list_is_a_violation_not_a_type_error() -> None:
    chunks = valid_chunks()
    chunks[8]["choices"][0]["finish_reason"] = ["tool_calls"]
    result = run_chat(chunks)
    assert result.has("finish-reason")
    assert any("is not a string" in v for v in result.violations)


def test_every_wrongly_typed_field_is_reported_never_raised() -> None:
    # Some replacements are valid (None for an optional field); none may raise.
    base = valid_stream()
    results = []
    for position, event in enumerate(base):
        for mutated in _mutations(event):
            events = copy.deepcopy(base)
            events[position] = mutated
            results.append(check_responses_events(events).ok)
    chunks = valid_chunks()
    for position, chunk in enumerate(chunks):
        for mutated in _mutations(chunk):
            results.append(run_chat([*chunks[:position], mutated, *chunks[position + 1 :]]).ok)
    assert results.count(False) > 0.8 * len(results)


def test_event_nested_1500_deep_is_a_violation() -> None:
    events = valid_stream()
    events[3]["extra"] = _nested(1500)
    result = check_responses_events(events)
    assert result.has("schema")
    assert any("nested deeper than" in v for v in result.violations)
    chunks = valid_chunks()
    chunks[1]["extra"] = _nested(1500)
    assert run_chat(chunks).has("schema")


@pytest.mark.parametrize("protocol", ["responses", "chat", "triton"])
def test_sse_data_nested_1500_deep_is_malformed_json(protocol: str) -> None:
    body = b"data: " + b"[" * 1500 + b"]" * 1500 + b"\n\n"
    record = replay_record(body, protocol)
    assert record.outcome == "malformed_json"
    assert "nested too deep" in record.detail


def test_arguments_nested_deep_or_with_a_huge_number_are_not_valid_json() -> None:
    for arguments in ("[" * 1500 + "]" * 1500, '{"n": ' + "9" * 5000 + "}"):
        events = valid_stream()
        for event in events:
            item = event.get("item") or {}
            if item.get("type") == "function_call" and item.get("status") == "completed":
                item["arguments"] = arguments
        # Advisory by default (arguments reach the client verbatim), a violation on request.
        assert any("[arguments-json]" in w for w in check_responses_events(events).warnings)
        result = check_responses_events(events, require=["arguments-json"])
        assert result.has("arguments-json")


class _CountingList(list):
    """A list that counts the elements its iterations visit."""

    visited = 0

    def __iter__(self):
        for element in super().__iter__():
            _CountingList.visited += 1
            yield element


def _many_items(count: int) -> list[dict[str, Any]]:
    base = valid_stream()
    created, in_progress = base[:2]
    start = next(i for i, e in enumerate(base) if e.get("item", {}).get("type") == "function_call")
    call = base[start:-1]
    events = [created, in_progress]
    for k in range(count):
        for event in copy.deepcopy(call):
            event["output_index"] = k
            if "item_id" in event:
                event["item_id"] = f"fc_{k}"
            if "item" in event:
                event["item"]["id"] = f"fc_{k}"
                event["item"]["call_id"] = f"call_{k}"
            events.append(event)
    return renumber(events)


def _items_visited(count: int) -> int:
    checker = responses_module.ResponsesStreamChecker(validate_schema=False)
    checker._items = _CountingList()
    _CountingList.visited = 0
    for event in _many_items(count):
        checker.feed(event)
    return _CountingList.visited


def test_responses_checker_work_is_linear_in_items() -> None:
    # Adding item k must not rescan the k items before it: visits per item stay flat.
    small, large = _items_visited(200), _items_visited(800)
    assert large <= 4 * small + 10, (small, large)


def test_sse_reader_warnings_are_capped_and_counted() -> None:
    reader = SSEReader(SSELimits(max_warnings=50))
    reader.feed(b"x:\n" * 100_000)
    assert len(reader.warnings) == 50
    assert reader.warning_count == 100_000
    assert reader.warnings_dropped == 99_950


def test_stream_record_says_how_many_sse_warnings_were_dropped() -> None:
    body = b"x:\n" * 1000 + to_sse(valid_stream())
    record = replay_record(body, "responses")
    assert record.ok
    assert sum("unknown field" in w for w in record.warnings) == SSELimits().max_warnings
    assert any("more SSE warnings not kept (1000 in all)" in w for w in record.warnings)


def _openai_failure(code: str) -> list[dict[str, Any]]:
    events = valid_stream(terminal="failed")
    error_at = next(i for i, e in enumerate(events) if e["type"] == "error")
    events[error_at] = {
        "type": "error",
        "sequence_number": error_at,
        "error": {"type": "insufficient_quota", "code": code, "message": "quota exceeded"},
    }
    events[-1]["response"]["error"] = {"code": code, "message": "quota exceeded"}
    return events


def test_openai_error_event_with_nested_error_and_unlisted_code_passes_with_warnings() -> None:
    result = check_responses_events(_openai_failure("insufficient_quota"))
    assert result.ok, result.violations
    assert result.terminal == "failed"
    assert result.error is not None and result.error["code"] == "insufficient_quota"
    assert any("nests code/message" in w for w in result.warnings)
    assert any("'insufficient_quota' is not in the openai SDK" in w for w in result.warnings)


def test_nested_error_event_without_message_is_still_a_schema_violation() -> None:
    events = _openai_failure("server_error")
    error_at = next(i for i, e in enumerate(events) if e["type"] == "error")
    del events[error_at]["error"]["message"]
    assert check_responses_events(events).has("schema")


def test_replay_of_a_record_with_bad_events_is_a_value_error(tmp_path) -> None:
    path = tmp_path / "record.json"
    path.write_text(json.dumps({"protocol": "responses", "outcome": "ok", "events": [1, 2]}))
    with pytest.raises(ValueError, match="events"):
        replay_record(path)


class _CountingChoice(ChatChoice):
    """A choice that counts how often its texts are rewritten."""

    writes = 0

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("content", "reasoning"):
            _CountingChoice.writes += 1
        super().__setattr__(name, value)


def test_chat_checker_work_is_linear_in_deltas_and_tool_calls() -> None:
    # Old: `content += delta` rewrote (copied) the whole text on every delta, and each tool
    # call delta scanned every call before it.
    checker = ChatStreamChecker()
    checker.choices[0] = _CountingChoice(index=0, tool_calls=_CountingList())
    _CountingChoice.writes = _CountingList.visited = 0
    for k in range(500):
        delta: dict[str, Any] = {"content": "word "}
        delta["tool_calls"] = [{"index": k, "id": f"c{k}", "function": {"name": "f"}}]
        checker.feed(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
        )
    assert _CountingChoice.writes <= 2 and _CountingList.visited == 0
    result = checker.finish()
    assert result.choices[0].content == "word " * 500
    assert len(result.choices[0].tool_calls) == 500


@pytest.mark.parametrize("protocol", ["responses", "chat", "triton"])
def test_report_is_bounded_on_a_flood_of_violations(protocol: str) -> None:
    # Counting, not timing: 4x the hostile input gives the same report size (within the
    # digits of the counts), far below the input's, and the counts show every finding.
    from trtllm_stream_fix.testing.hostile_streams import hostile_body

    reports, counted = [], []
    for size in (50_000, 200_000):
        record = replay_record(hostile_body(protocol, size), protocol)
        report = json.dumps({"violations": record.violations, "warnings": record.warnings})
        reports.append(len(report))
        counted.append(
            sum(
                int(line.split(" in all")[0].rsplit("(", 1)[1])
                for line in record.violations
                if " in all, the first " in line
            )
        )
    assert reports[1] <= 16_384, reports
    assert reports[1] - reports[0] <= 64, reports
    assert counted[1] >= 3 * counted[0] > 300, counted
