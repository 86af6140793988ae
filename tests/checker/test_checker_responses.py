# SPDX-License-Identifier: Apache-2.0
"""Responses stream checker.

A hand-written valid stream passes (and the OpenAI SDK accumulator accepts it); every
single-rule mutation of it is reported under that rule.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from _checker_streams import (
    CALL_ID,
    CALL_ITEM_ID,
    MESSAGE_ID,
    REASONING_ID,
    find,
    renumber,
    valid_stream,
)
from openai._models import construct_type
from openai._types import omit
from openai.lib.streaming.responses import ResponseStreamState
from openai.types.responses import ResponseStreamEvent
from openai.types.responses.response_usage import InputTokensDetails

from trtllm_stream_fix.checker import RULES, ResponsesStreamChecker, check_responses_events
from trtllm_stream_fix.differential.sdk_oracle import REJECTS_DUPLICATE_INDEX

pytestmark = pytest.mark.cpu_only

Events = list[dict[str, Any]]


def sdk_accumulate(events: Events) -> Any:
    state = ResponseStreamState(text_format=omit, input_tools=omit)
    for d in events:
        state.handle_event(construct_type(type_=ResponseStreamEvent, value=d))
    return state._completed_response


# --------------------------------------------------------------------------- valid streams


@pytest.mark.parametrize("terminal", ["completed", "incomplete", "failed"])
def test_valid_stream_passes(terminal: str) -> None:
    result = check_responses_events(valid_stream(terminal=terminal))
    assert result.violations == []
    assert result.warnings == []
    assert result.ok
    assert result.terminal == terminal
    assert [it.id for it in result.items] == [REASONING_ID, MESSAGE_ID, CALL_ITEM_ID]
    assert [it.type for it in result.items] == ["reasoning", "message", "function_call"]
    assert result.items[0].text == "The user wants the weather."
    assert result.items[1].text == "Let me check Paris."
    assert result.items[2].call_id == CALL_ID
    assert result.items[2].name == "get_weather"
    assert result.response_id == "resp_0123456789abcdef"


def test_penalties_may_be_absent() -> None:
    """OpenAI's API sent no presence_penalty/frequency_penalty before 2026."""
    events = valid_stream()
    for event in events:
        if isinstance(event.get("response"), dict):
            event["response"].pop("presence_penalty", None)
            event["response"].pop("frequency_penalty", None)
    result = check_responses_events(events)
    assert result.violations == []
    assert result.ok


def test_valid_stream_assembly_details() -> None:
    done = check_responses_events(valid_stream())
    assert done.items[2].arguments == '{"city": "Paris"}'
    assert done.items[2].status == "completed"
    assert done.usage is not None and done.usage["total_tokens"] == 42
    cut = check_responses_events(valid_stream(terminal="incomplete"))
    assert cut.items[2].arguments == '{"city"'
    assert cut.items[2].status == "incomplete"
    assert cut.incomplete_reason == "max_output_tokens"
    failed = check_responses_events(valid_stream(terminal="failed"))
    assert failed.error is not None and failed.error["message"] == "engine died"


def test_sdk_accumulator_accepts_valid_streams() -> None:
    final = sdk_accumulate(valid_stream())
    assert final is not None
    assert [o.id for o in final.output] == [REASONING_ID, MESSAGE_ID, CALL_ITEM_ID]
    assert final.output[1].content[0].text == "Let me check Paris."
    # incomplete / failed are accepted without a final response
    assert sdk_accumulate(valid_stream(terminal="incomplete")) is None
    assert sdk_accumulate(valid_stream(terminal="failed")) is None


@pytest.mark.skipif(
    not REJECTS_DUPLICATE_INDEX, reason="this openai's accumulator has no index check"
)
def test_sdk_rejects_what_checker_rejects_structurally() -> None:
    """Sanity: the fixture drives the real accumulator (which raises on a duplicate index)."""
    events = valid_stream()
    events[find(events, "response.output_item.added", 2)]["output_index"] = 1
    with pytest.raises(RuntimeError, match="Duplicate response output index"):
        sdk_accumulate(events)
    assert check_responses_events(events).has("output-index")


def test_reasoning_summary_parts() -> None:
    events = valid_stream()
    i = find(events, "response.content_part.added", output_index=0)
    ref = {"item_id": REASONING_ID, "output_index": 0, "summary_index": 0}
    summary = [
        {
            "type": "response.reasoning_summary_part.added",
            **ref,
            "part": {"type": "summary_text", "text": ""},
        },
        {"type": "response.reasoning_summary_text.delta", **ref, "delta": "Weather "},
        {"type": "response.reasoning_summary_text.delta", **ref, "delta": "lookup."},
        {"type": "response.reasoning_summary_text.done", **ref, "text": "Weather lookup."},
        {
            "type": "response.reasoning_summary_part.done",
            **ref,
            "part": {"type": "summary_text", "text": "Weather lookup."},
        },
    ]
    events[i:i] = summary
    summary_entry = [{"type": "summary_text", "text": "Weather lookup."}]
    events[find(events, "response.output_item.done", 0)]["item"]["summary"] = summary_entry
    events[-1]["response"]["output"][0]["summary"] = copy.deepcopy(summary_entry)
    result = check_responses_events(renumber(events))
    assert result.violations == []
    assert result.items[0].summary == ["Weather lookup."]
    # and a mismatching summary is caught
    events[-1]["response"]["output"][0]["summary"][0]["text"] = "Weather."
    assert check_responses_events(renumber(events)).has("text-mismatch")


# --------------------------------------------------------------------------- mutations


def _msg_delta(e: Events, nth: int = 0) -> dict[str, Any]:
    return e[find(e, "response.output_text.delta", nth)]


def _remove(etype: str, nth: int = 0, **match: Any) -> Callable[[Events], None]:
    def go(e: Events) -> None:
        del e[find(e, etype, nth, **match)]

    return go


def _move_after_terminal(e: Events) -> None:
    e.append(copy.deepcopy(_msg_delta(e)))


def _error_before_completed(e: Events) -> None:
    e.insert(len(e) - 1, {"type": "error", "code": "server_error", "message": "boom"})


def _interleave(e: Events) -> None:
    added = e.pop(find(e, "response.output_item.added", 1))
    e.insert(find(e, "response.output_item.done", 0), added)


def _set(path: str, value: Any, etype: str, nth: int = 0, **match: Any) -> Callable[[Events], None]:
    """Set a dotted path (``item.status``) on the nth event of a type."""

    def go(e: Events) -> None:
        target: Any = e[find(e, etype, nth, **match)]
        *head, last = path.split(".")
        for key in head:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            target[int(last)] = value
        elif value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return go


_DELETE = object()
_DONE = "response.output_item.done"
_ADDED = "response.output_item.added"
_TERM = "response.completed"


def _both(*fns: Callable[[Events], None]) -> Callable[[Events], None]:
    def go(e: Events) -> None:
        for fn in fns:
            fn(e)

    return go


def _seq_gap(e: Events) -> None:
    for ev in e[5:]:
        ev["sequence_number"] += 1


def _dup_id(e: Events) -> None:
    for ev in e:
        if ev.get("item_id") == MESSAGE_ID:
            ev["item_id"] = REASONING_ID
        for item in [ev.get("item")] + (ev.get("response", {}).get("output") or []):
            if isinstance(item, dict) and item.get("id") == MESSAGE_ID:
                item["id"] = REASONING_ID


def _call_args(args: str) -> Callable[[Events], None]:
    def go(e: Events) -> None:
        for ev in e:
            if ev["type"] == "response.function_call_arguments.delta":
                ev["delta"] = ""
            if ev["type"] == "response.function_call_arguments.done":
                ev["arguments"] = args
        e[find(e, "response.function_call_arguments.delta")]["delta"] = args
        e[find(e, _DONE, 2)]["item"]["arguments"] = args
        e[-1]["response"]["output"][2]["arguments"] = args
        for ev in list(e):
            if ev["type"] == "response.function_call_arguments.delta" and ev["delta"] == "":
                e.remove(ev)

    return go


def _compaction_without_blob(e: Events) -> None:
    """A compaction item (Codex's trigger answer) whose done event carries no blob."""
    item = {"id": "cmp_0123456789abcdef", "type": "compaction", "encrypted_content": ""}
    index = len(e[-1]["response"]["output"])
    e[-1:-1] = [
        {"type": "response.output_item.added", "output_index": index, "item": dict(item)},
        {"type": "response.output_item.done", "output_index": index, "item": dict(item)},
    ]
    e[-1]["response"]["output"].append(dict(item))


# (name, stream kind, mutation, expected rule)
MUTATIONS: list[tuple[str, str, Callable[[Events], None], str]] = [
    (
        "string output_index",
        "completed",
        _set("output_index", "1", "response.output_text.delta"),
        "schema",
    ),
    (
        "unknown event type",
        "completed",
        _set("type", "response.bogus", "response.in_progress"),
        "unknown-type",
    ),
    ("sequence gap", "completed", _seq_gap, "sequence"),
    (
        "sequence null",
        "completed",
        _set("sequence_number", None, "response.in_progress"),
        "sequence",
    ),
    ("created missing", "completed", _remove("response.created"), "first-event"),
    ("second in_progress", "completed", lambda e: e.insert(2, copy.deepcopy(e[1])), "lifecycle"),
    ("in_progress after items", "completed", lambda e: e.insert(4, e.pop(1)), "lifecycle"),
    (
        "created with null temperature",
        "completed",
        _set("response.temperature", None, "response.created"),
        "sampling",
    ),
    (
        "terminal with null presence_penalty",
        "completed",
        _set("response.presence_penalty", None, _TERM),
        "sampling",
    ),
    (
        "in_progress with a string frequency_penalty",
        "completed",
        _set("response.frequency_penalty", "0", "response.in_progress"),
        "sampling",
    ),
    (
        "created with completed status",
        "completed",
        _set("response.status", "completed", "response.created"),
        "lifecycle-status",
    ),
    ("response id changed", "completed", _set("response.id", "resp_other", _TERM), "response-id"),
    (
        "wrong output_index on added",
        "completed",
        _set("output_index", 5, _ADDED, 1),
        "output-index",
    ),
    ("duplicate output_index", "completed", _set("output_index", 1, _ADDED, 2), "output-index"),
    ("item added before previous done", "completed", _interleave, "interleaved-items"),
    (
        "delta for a done item",
        "completed",
        _set("output_index", 0, "response.output_text.delta"),
        "item-ref",
    ),
    (
        "delta for a never-added index",
        "completed",
        _set("output_index", 9, "response.function_call_arguments.delta"),
        "item-ref",
    ),
    ("empty item id", "completed", _set("item.id", "", _ADDED, 1), "item-id"),
    (
        "empty item_id on delta",
        "completed",
        _set("item_id", "", "response.output_text.delta"),
        "item-id",
    ),
    (
        "wrong item_id on done",
        "completed",
        _set("item_id", REASONING_ID, "response.output_text.done"),
        "item-id",
    ),
    ("duplicate item id", "completed", _dup_id, "item-id"),
    (
        "missing content_part.added",
        "completed",
        _remove("response.content_part.added", output_index=1),
        "content-index",
    ),
    (
        "content_index 1 on first part",
        "completed",
        _set("content_index", 1, "response.content_part.added", output_index=1),
        "content-index",
    ),
    (
        "reasoning delta in message part",
        "completed",
        _set("type", "response.reasoning_text.delta", "response.output_text.delta"),
        "part-kind",
    ),
    (
        "output_text part in reasoning item",
        "completed",
        _set(
            "part",
            {"type": "output_text", "text": "", "annotations": []},
            "response.content_part.added",
            output_index=0,
        ),
        "part-kind",
    ),
    (
        "added part not empty",
        "completed",
        _set("part.text", "x", "response.content_part.added", output_index=1),
        "part-text",
    ),
    ("text done missing", "completed", _remove("response.output_text.done"), "part-order"),
    (
        "content_part.done missing",
        "completed",
        _remove("response.content_part.done", output_index=1),
        "part-order",
    ),
    (
        "arguments done missing",
        "completed",
        _remove("response.function_call_arguments.done"),
        "part-order",
    ),
    (
        "delta after text done",
        "completed",
        lambda e: e.insert(find(e, "response.output_text.done") + 1, copy.deepcopy(_msg_delta(e))),
        "part-order",
    ),
    (
        "done text mismatch",
        "completed",
        _set("text", "Let me check Rome.", "response.output_text.done"),
        "text-mismatch",
    ),
    (
        "part.done text mismatch",
        "completed",
        _set("part.text", "Let me", "response.content_part.done", output_index=1),
        "text-mismatch",
    ),
    (
        "item.done content mismatch",
        "completed",
        _set("item.content.0.text", "Other.", _DONE, 1),
        "text-mismatch",
    ),
    (
        "reasoning item.done content mismatch",
        "completed",
        _set("item.content.0.text", "Other.", _DONE, 0),
        "text-mismatch",
    ),
    (
        "terminal output text mismatch",
        "completed",
        _set("response.output.1.content.0.text", "Other.", _TERM),
        "text-mismatch",
    ),
    (
        "arguments done mismatch",
        "completed",
        _set("arguments", "{}", "response.function_call_arguments.done"),
        "arguments-mismatch",
    ),
    (
        "item.done arguments mismatch",
        "completed",
        _set("item.arguments", "{}", _DONE, 2),
        "arguments-mismatch",
    ),
    ("done id changed", "completed", _set("item.id", "msg_other", _DONE, 1), "item-identity"),
    ("done type changed", "completed", _set("item.type", "reasoning", _DONE, 1), "item-identity"),
    (
        "done call_id changed",
        "completed",
        _set("item.call_id", "call_x", _DONE, 2),
        "item-identity",
    ),
    ("done name changed", "completed", _set("item.name", "other", _DONE, 2), "item-identity"),
    (
        "added status completed",
        "completed",
        _set("item.status", "completed", _ADDED, 1),
        "item-status",
    ),
    (
        "done status in_progress",
        "completed",
        _set("item.status", "in_progress", _DONE, 1),
        "item-status",
    ),
    ("open item at completed", "completed", _remove(_DONE, 1), "open-item"),
    (
        "terminal output missing item",
        "completed",
        lambda e: e[-1]["response"]["output"].pop(),
        "terminal-output",
    ),
    (
        "terminal output id changed",
        "completed",
        _set("response.output.1.id", "msg_new", _TERM),
        "terminal-output",
    ),
    (
        "terminal output status differs",
        "completed",
        _set("response.output.1.status", "incomplete", _TERM),
        "terminal-output",
    ),
    (
        "completed with status incomplete",
        "completed",
        _set("response.status", "incomplete", _TERM),
        "terminal-status",
    ),
    (
        "completed with incomplete_details",
        "completed",
        _set("response.incomplete_details", {"reason": "max_output_tokens"}, _TERM),
        "terminal-status",
    ),
    (
        "incomplete without reason",
        "incomplete",
        _set("response.incomplete_details", _DELETE, "response.incomplete"),
        "terminal-status",
    ),
    (
        "failed without error",
        "failed",
        _set("response.error", _DELETE, "response.failed"),
        "terminal-status",
    ),
    (
        "completed with incomplete item",
        "completed",
        _both(
            _set("item.status", "incomplete", _DONE, 2),
            _set("response.output.2.status", "incomplete", _TERM),
        ),
        "incomplete-item",
    ),
    (
        "incomplete item not last",
        "incomplete",
        _both(
            _set("item.status", "incomplete", _DONE, 0),
            _set("response.output.0.status", "incomplete", "response.incomplete"),
        ),
        "incomplete-item",
    ),
    (
        "usage total wrong",
        "completed",
        _set("response.usage.total_tokens", 41, _TERM),
        "usage-total",
    ),
    ("event after terminal", "completed", _move_after_terminal, "after-terminal"),
    ("second terminal", "completed", lambda e: e.append(copy.deepcopy(e[-1])), "after-terminal"),
    ("no terminal", "completed", lambda e: e.pop(), "no-terminal"),
    ("error then completed", "completed", _error_before_completed, "error-without-failed"),
    ("error alone at end", "failed", lambda e: e.pop(), "error-without-failed"),
    (
        "empty delta",
        "completed",
        _set("delta", "", "response.reasoning_text.delta", 1),
        "delta-empty",
    ),
    (
        "logprobs missing",
        "completed",
        _set("logprobs", _DELETE, "response.output_text.delta"),
        "logprobs",
    ),
    ("empty function name", "completed", _set("item.name", "", _ADDED, 2), "function-call"),
    ("empty call_id", "completed", _set("item.call_id", "", _ADDED, 2), "function-call"),
    (
        "audio event in gpt-oss stream",
        "completed",
        lambda e: e.insert(
            3,
            {
                "type": "response.audio.delta",
                "delta": "AAAA",
                "response_id": "resp_0123456789abcdef",
            },
        ),
        "unsupported-event",
    ),
    ("compaction item done without its blob", "completed", _compaction_without_blob, "compaction"),
]


@pytest.mark.parametrize(
    ("kind", "mutate", "rule"),
    [pytest.param(k, m, r, id=name) for name, k, m, r in MUTATIONS],
)
def test_mutation_is_reported(kind: str, mutate: Callable[[Events], None], rule: str) -> None:
    events = valid_stream(terminal=kind)
    assert check_responses_events(events).ok  # the unmutated stream passes
    mutate(events)
    if rule not in ("sequence",):
        events = renumber(events)
    result = check_responses_events(events)
    assert not result.ok
    assert result.has(rule), result.violations
    message = next(v for v in result.violations if f"[{rule}]" in v)
    assert message.startswith(("event ", "end of stream")), message


def test_every_rule_has_a_mutation() -> None:
    covered = {rule for *_, rule in MUTATIONS} | {"event-name", "arguments-json"}
    assert covered == set(RULES)


def test_invalid_json_arguments_are_a_warning_unless_required() -> None:
    events = valid_stream(terminal="completed")
    _call_args('{"city"')(events)
    events = renumber(events)
    lenient = check_responses_events(events)
    assert lenient.ok, lenient.violations
    assert any("[arguments-json]" in w for w in lenient.warnings), lenient.warnings
    strict = check_responses_events(events, require=["arguments-json"])
    assert strict.has("arguments-json"), strict.violations


def test_violation_names_the_event_index() -> None:
    events = valid_stream()
    i = find(events, "response.output_text.done")
    events[i]["text"] = "nope"
    result = check_responses_events(events)
    assert any(
        v.startswith(f"event {i} (response.output_text.done): [text-mismatch]")
        for v in result.violations
    ), result.violations


def test_event_name_mismatch() -> None:
    checker = ResponsesStreamChecker()
    events = valid_stream()
    for ev in events[:-1]:
        checker.feed(ev, sse_event=ev["type"])
    checker.feed(events[-1], sse_event="response.done")
    result = checker.finish()
    assert result.has("event-name")
    assert result.terminal == "completed"


def test_allow_downgrades_to_warning() -> None:
    events = valid_stream()
    events[-1]["response"]["usage"]["total_tokens"] = 1
    assert not check_responses_events(events).ok
    relaxed = check_responses_events(events, allow={"usage-total"})
    assert relaxed.ok
    assert any("[usage-total]" in w for w in relaxed.warnings)


def test_allow_error_alone_counts_as_failed() -> None:
    events = valid_stream(terminal="failed")[:-1]
    result = check_responses_events(events, allow={"error-without-failed"})
    assert result.terminal == "failed"
    assert result.ok


def test_unknown_allow_code_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown rule codes"):
        check_responses_events([], allow={"no-such-rule"})


@pytest.mark.skipif(
    "cache_write_tokens" not in InputTokensDetails.model_fields,
    reason="this openai's schema does not require cache_write_tokens",
)
def test_usage_without_cache_write_tokens_is_only_a_warning() -> None:
    events = valid_stream()
    del events[-1]["response"]["usage"]["input_tokens_details"]["cache_write_tokens"]
    result = check_responses_events(events)
    assert result.ok
    assert any("cache_write_tokens" in w for w in result.warnings)


def test_obfuscation_is_allowed() -> None:
    events = valid_stream()
    for ev in events:
        if ev["type"].endswith(".delta"):
            ev["obfuscation"] = "xYz"
    assert check_responses_events(events).ok


def test_incremental_equals_batch_and_feed_after_finish_raises() -> None:
    events = valid_stream()
    events[5]["delta"] = "X"
    checker = ResponsesStreamChecker()
    for ev in events:
        checker.feed(ev)
    assert checker.finish().violations == check_responses_events(events).violations
    with pytest.raises(RuntimeError, match="after finish"):
        checker.feed(events[0])


def test_first_sequence_number() -> None:
    events = valid_stream()
    for ev in events:
        ev["sequence_number"] += 3
    assert check_responses_events(events).has("sequence")
    assert check_responses_events(events, first_sequence_number=3).ok


def test_empty_stream() -> None:
    result = check_responses_events([])
    assert not result.ok
    assert result.has("no-terminal")
    assert result.terminal is None
