# SPDX-License-Identifier: Apache-2.0
"""Event machine behaviour beyond batch-size independence."""

from __future__ import annotations

import numpy as np
import pytest
from _streams import of_type, run, split

from trtllm_stream_fix.checker import check_responses_events
from trtllm_stream_fix.core.config import StreamConfig
from trtllm_stream_fix.core.machine import ResponsesEventMachine
from trtllm_stream_fix.core.nonstreaming import build_response
from trtllm_stream_fix.core.sse import SSEEncoder, event_to_dict, format_sse
from trtllm_stream_fix.defaults import new_context
from trtllm_stream_fix.sim.model import generate_outputs, named_output

pytestmark = pytest.mark.cpu_only

PREAMBLE_ANSWER = (
    "<|channel|>analysis<|message|>Think.<|end|>"
    "<|start|>assistant<|channel|>commentary<|message|>One moment.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Done here.<|return|>"
)


def test_consecutive_deltas_in_one_response_are_one_event(encoding, tokens):
    token_ids = tokens("<|channel|>final<|message|>one two three four five six<|return|>")[:-1]
    events = run("ours", [token_ids[:6], token_ids[6:]], encoding=encoding)
    deltas = of_type(events, "output_text.delta")
    assert len(deltas) == 2
    assert "".join(d["delta"] for d in deltas) == "one two three four five six"


def test_preambles_dropped_in_upstream_parity_mode(encoding, tokens):
    config = StreamConfig(preambles="drop")
    events = run("ours", split(tokens(PREAMBLE_ANSWER)[:-1], 7), encoding=encoding, config=config)
    output = events[-1]["response"]["output"]
    assert [i["type"] for i in output] == ["reasoning", "message"]
    assert [e["output_index"] for e in of_type(events, "output_item.added")] == [0, 1]
    assert check_responses_events(events).ok


def test_length_cut_upstream_parity_sends_completed_with_incomplete_status(encoding, tokens):
    token_ids = tokens("<|channel|>final<|message|>The answer is")
    config = StreamConfig(length_terminal="completed")
    events = run("ours", [token_ids], "length", encoding=encoding, config=config)
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["status"] == "incomplete"


def test_cut_inside_header_is_incomplete_not_failed(encoding):
    output = named_output("header_cut")
    events = run("ours", [output.delivered], output.finish_reason, encoding=encoding)
    assert events[-1]["type"] == "response.incomplete"
    assert all(i["status"] == "completed" for i in events[-1]["response"]["output"])
    assert check_responses_events(events).ok


def test_other_finish_reasons_fail_cleanly(encoding, tokens):
    events = run("ours", [tokens("<|channel|>final<|message|>Hi")], "timeout", encoding=encoding)
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert of_type(events, "output_item.done")[0]["item"]["status"] == "incomplete"
    assert check_responses_events(events).ok


@pytest.mark.parametrize("batch", [[13], [13, 14]])  # the one-token path and feed
def test_internal_error_never_escapes_and_nothing_follows_terminal(
    encoding, tokens, monkeypatch, batch
):
    machine = ResponsesEventMachine(new_context(), encoding=encoding)
    machine.start()
    machine.feed(tokens("<|channel|>final<|message|>Hello"))

    def boom(*args, **kwargs):
        raise ValueError("driver exploded")

    monkeypatch.setattr(machine._driver, "feed", boom)
    monkeypatch.setattr(machine._driver, "content_delta", boom)
    monkeypatch.setattr(machine._driver, "take_content", boom)
    events = [event_to_dict(e) for e in machine.feed(batch)]
    assert [e["type"] for e in events] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "error",
        "response.failed",
    ]
    assert events[2]["item"]["status"] == "incomplete"
    assert events[2]["item"]["content"][0]["text"] == "Hello"
    assert "driver exploded" in events[-2]["message"]
    assert machine.finished and machine._driver is None  # per-request state released
    assert machine.feed([13], finished=True, finish_reason="stop") == []
    assert machine.fail("late") == []


def test_usage_counts_reasoning_tokens(encoding, tokens):
    token_ids = tokens(PREAMBLE_ANSWER)[:-1]
    events = run("ours", [token_ids], encoding=encoding)
    usage = events[-1]["response"]["usage"]
    assert usage["output_tokens"] == len(token_ids)
    # "Think." plus <|end|>: content tokens of the analysis message.
    assert usage["output_tokens_details"]["reasoning_tokens"] == len(tokens("Think.<|end|>"))
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


@pytest.mark.parametrize("size", [1, 20])
def test_non_streaming_matches_stream_final_response(encoding, size):
    def shape(output_items):
        keep = ("type", "status", "content", "arguments", "name", "phase", "action")
        return [{k: v for k, v in item.items() if k in keep} for item in output_items]

    for output in generate_outputs(150, seed=9):
        events = run("ours", split(output.delivered, size), output.finish_reason, encoding=encoding)
        context = new_context(response_id="resp_test", created_at=0.0)
        response = build_response(
            context, output.delivered, output.finish_reason, encoding=encoding
        )
        streamed = events[-1]["response"]
        built = event_to_dict(response)
        assert built["status"] == streamed["status"], output.name
        assert shape(built["output"]) == shape(streamed["output"]), output.name
        assert built["usage"] == streamed["usage"], output.name


def test_sse_framing_and_sequence_numbers(encoding, tokens):
    machine = ResponsesEventMachine(new_context(), encoding=encoding)
    events = machine.start() + machine.feed(
        tokens("<|channel|>final<|message|>Hi"), finished=True, finish_reason="stop"
    )
    assert [e.sequence_number for e in events] == list(range(len(events)))
    frame = format_sse(events[2])
    assert frame.startswith("event: response.output_item.added\ndata: {")
    assert frame.endswith("}\n\n") and frame.count("\n") == 3
    encoder = SSEEncoder(start=7)
    frames = encoder.encode_all(events)
    assert '"sequence_number":7' in frames[0] and encoder.sequence_number == 7 + len(events)


def test_first_sequence_number_continues_a_counter(encoding):
    machine = ResponsesEventMachine(new_context(), encoding=encoding, first_sequence_number=2)
    assert [e.sequence_number for e in machine.start()] == [2, 3]


def test_fast_delta_json_equals_pydantic_json(encoding, tokens):
    import json

    from trtllm_stream_fix.core.sse import event_to_json

    machine = ResponsesEventMachine(new_context(), encoding=encoding)
    events = machine.start() + machine.feed(
        tokens(
            "<|channel|>analysis<|message|>日本 🤖<|end|><|start|>assistant<|channel|>final"
            '<|message|>Hi "there"\\n\u00e9'
        ),
        finished=True,
        finish_reason="stop",
    )
    deltas = [e for e in events if e.type.endswith(".delta")]
    assert len(deltas) == 2
    for event in deltas:
        fast = event_to_json(event)
        assert json.loads(fast) == json.loads(event.model_dump_json())


def test_delta_events_name_every_field_of_their_model(encoding, tokens):
    from trtllm_stream_fix.core import events as ev
    from trtllm_stream_fix.core.items import ItemKind, ItemRecord, derived_ids

    for kind in (ItemKind.MESSAGE, ItemKind.REASONING, ItemKind.FUNCTION_CALL):
        event = ev.delta(ItemRecord.open(kind, 0, None, "functions.f", derived_ids("r")), "x", 0)
        assert set(event.__dict__) == set(type(event).model_fields)
        type(event).model_validate(event.model_dump())  # and the values validate


def test_wire_json_names_every_field_like_pydantic(encoding):
    import json

    from trtllm_stream_fix.core.sse import event_to_json

    tools = [{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": None}]
    for output in generate_outputs(40, seed=21):
        context = new_context(tools=tools)
        machine = ResponsesEventMachine(context, encoding=encoding)
        events = machine.start() + machine.feed(
            list(output.delivered), finished=True, finish_reason=output.finish_reason
        )
        for event in events:
            expected = json.loads(event.model_dump_json(by_alias=True, warnings=False))
            wire = json.loads(event_to_json(event))
            if "response" in wire:  # OpenAI sends ``store``; the SDK's Response has no field
                expected["response"]["store"] = wire["response"].pop("store")
                expected["response"].pop("store")
            # OpenAI leaves a reasoning item's encrypted_content out unless asked for it.
            items = [expected.get("item")] + (expected.get("response") or {}).get("output", [])
            for item in items:
                if item and item["type"] == "reasoning" and item["encrypted_content"] is None:
                    del item["encrypted_content"]
            assert wire == expected, event.type


TOOL_AUTHOR = (
    "<|channel|>commentary to=functions.f<|message|>{}<|end|>"
    '<|start|>functions.f to=assistant<|channel|>commentary<|message|>{"x": 1}<|end|>'
    "<|start|>assistant<|channel|>final<|message|>ok<|return|>"
)


@pytest.mark.parametrize("size", [1, 4, 50])
def test_tool_authored_message_in_a_completion_is_not_an_item(encoding, tokens, size):
    token_ids = tokens(TOOL_AUTHOR)[:-1]
    events = run("ours", split(token_ids, size), encoding=encoding)
    output = events[-1]["response"]["output"]
    assert [i["type"] for i in output] == ["function_call", "message"]
    assert check_responses_events(events).ok
    context = new_context(response_id="resp_test", created_at=0.0)
    built = event_to_dict(build_response(context, token_ids, "stop", encoding=encoding))
    assert [i["type"] for i in built["output"]] == ["function_call", "message"]


def test_stream_config_from_env():
    from trtllm_stream_fix.core.config import StreamConfig

    assert StreamConfig.from_env({}) == StreamConfig()
    parity = StreamConfig.from_env(
        {"TRTLLM_STREAM_FIX_PREAMBLES": "Drop", "TRTLLM_STREAM_FIX_LENGTH_TERMINAL": "completed"}
    )
    assert parity == StreamConfig(preambles="drop", length_terminal="completed")
    with pytest.raises(ValueError, match="TRTLLM_STREAM_FIX_PREAMBLES='skip' is not one of"):
        StreamConfig.from_env({"TRTLLM_STREAM_FIX_PREAMBLES": "skip"})


def test_wire_json_uses_field_aliases():
    import json

    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputItemDoneEvent

    from trtllm_stream_fix.core.fastmodel import construct
    from trtllm_stream_fix.core.sse import event_to_json

    if "async_" not in ResponseFunctionToolCall.model_fields:
        pytest.skip("this openai version has no aliased field (async_) on function calls")
    item = construct(
        ResponseFunctionToolCall,
        type="function_call",
        id="fc_1",
        call_id="call_1",
        name="f",
        arguments="{}",
        async_=True,
    )
    event = construct(
        ResponseOutputItemDoneEvent,
        type="response.output_item.done",
        item=item,
        output_index=0,
        sequence_number=3,
    )
    wire = json.loads(event_to_json(event))
    assert wire["item"]["async"] is True and "async_" not in wire["item"]


@pytest.mark.validating
def test_validating_mode_is_on_and_rejects_a_part_of_the_wrong_class():
    from openai.types.responses import ResponseContentPartDoneEvent
    from openai.types.responses.response_content_part_added_event import PartReasoningText

    from trtllm_stream_fix.core import fastmodel

    assert fastmodel.is_validating()  # turned on by the marker (conftest)
    part = fastmodel.construct(PartReasoningText, type="reasoning_text", text="x")
    with pytest.raises(TypeError, match="ResponseContentPartDoneEvent"):
        fastmodel.construct(
            ResponseContentPartDoneEvent,
            type="response.content_part.done",
            item_id="rs_1",
            output_index=0,
            content_index=0,
            part=part,
            sequence_number=0,
        )


def test_reasoning_part_done_is_built_from_the_done_event_part_class(encoding, tokens):
    from openai.types.responses.response_content_part_done_event import PartReasoningText

    machine = ResponsesEventMachine(new_context(), encoding=encoding)
    events = machine.start() + machine.feed(
        tokens("<|channel|>analysis<|message|>Think.<|end|>"), finished=True, finish_reason="stop"
    )
    done = [e for e in events if e.type == "response.content_part.done"]
    assert len(done) == 1 and type(done[0].part) is PartReasoningText
    type(done[0]).model_validate(done[0].__dict__)


def test_pydantic_dumps_per_stream_do_not_grow_with_its_tokens(encoding, tokens, monkeypatch):
    """A prepared envelope and orjson framing: no pydantic dump per token or delta event."""
    from pydantic import BaseModel

    from trtllm_stream_fix.defaults import edge_defaults

    calls: list[str] = []
    for name in ("model_dump", "model_dump_json"):
        real = getattr(BaseModel, name)

        def counted(self, *args, _real=real, **kwargs):
            calls.append(type(self).__name__)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(BaseModel, name, counted)
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}

    def dumps(words: int) -> tuple[int, int]:
        calls.clear()
        text = " ".join(["word"] * words)
        ids = tokens(
            f"<|channel|>analysis<|message|>{text}<|end|><|start|>assistant<|channel|>final"
            f"<|message|>{text}<|return|>"
        )[:-1]
        context = new_context(tools=[tool], instructions="Be brief.")
        machine = ResponsesEventMachine(context, **edge_defaults())
        frames = [format_sse(e) for e in machine.start()]
        for token in ids:
            frames += [format_sse(e) for e in machine.feed([token])]
        frames += [format_sse(e) for e in machine.feed([], finished=True, finish_reason="stop")]
        assert frames[-1].startswith("event: response.completed")
        return len(calls), len(frames)

    dumps(5)  # first use in the process fills per-class caches
    short, long = dumps(20), dumps(400)
    assert long[1] > short[1] + 700  # many more delta events ...
    assert long[0] == short[0]  # ... and not one more pydantic dump


NOT_TOKEN_IDS = [5.0, np.float64(5.0), "5", None]


@pytest.mark.parametrize("odd", NOT_TOKEN_IDS, ids=repr)
@pytest.mark.parametrize("parser", ["fast", "reference"])
def test_a_value_that_is_no_token_id_fails_the_same_at_every_split(encoding, tokens, odd, parser):
    """One token per response takes the per-token path; its error is the batch path's."""
    token_ids = tokens("<|channel|>final<|message|>Hello") + [odd, 13, 14]
    endings = set()
    for size in (1, 2, 3, len(token_ids)):
        machine = ResponsesEventMachine(
            new_context(), config=StreamConfig(parser=parser), encoding=encoding
        )
        events = machine.start()
        batches = [token_ids[i : i + size] for i in range(0, len(token_ids), size)]
        for n, batch in enumerate(batches):
            last = n == len(batches) - 1
            events += machine.feed(batch, finished=last, finish_reason="stop" if last else None)
        dicts = [event_to_dict(e) for e in events]
        assert check_responses_events(dicts).ok
        error = of_type(dicts, "error")[0]
        endings.add((dicts[-1]["type"], error["code"], error["message"]))
    assert len(endings) == 1, endings
    kind, _, message = endings.pop()
    assert kind == "response.failed" and message.startswith("invalid Harmony token sequence")
    assert message.endswith("at position 4 is not a token id")
