# SPDX-License-Identifier: Apache-2.0
"""The upstream-equivalent baseline reproduces upstream's recorded defects (and its one
correct case)."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from openai_harmony import HarmonyError, Role

from trtllm_stream_fix.baseline.responses import UpstreamBaselineStream
from trtllm_stream_fix.core.sse import event_to_dict
from trtllm_stream_fix.defaults import new_context
from trtllm_stream_fix.differential.sdk_oracle import REJECTS_UNFINISHED_ITEMS, sdk_accumulate
from trtllm_stream_fix.encoding import load_gpt_oss_encoding
from trtllm_stream_fix.sim.model import engine_responses, generate_outputs, named_output


def run(output, split) -> tuple[list, UpstreamBaselineStream]:
    stream = UpstreamBaselineStream(new_context(num_prompt_tokens=10))
    events = stream.start()
    for r in engine_responses(output, split):
        events += stream.feed(r.token_ids_diff, finished=r.finished, finish_reason=r.finish_reason)
    return events, stream


def deltas(events) -> dict[tuple[str, int], str]:
    joined: dict[tuple[str, int], str] = defaultdict(str)
    for e in events:
        if e.type.endswith(".delta"):
            joined[(e.type, e.output_index)] += e.delta
    return dict(joined)


def intended(output) -> list[str]:
    enc = load_gpt_oss_encoding()
    messages = enc.parse_messages_from_completion_tokens(
        list(output.delivered), role=Role.ASSISTANT
    )
    return [m.content[0].text for m in messages]


def test_one_token_per_response_simple_answer_is_correct():
    out = named_output("short_answer", trimmed=False)
    events, _ = run(out, 1)
    assert deltas(events) == {("response.output_text.delta", 0): intended(out)[0]}


def test_twenty_tokens_per_response_loses_deltas():
    out = named_output("reasoning_answer")
    events, stream = run(out, 20)
    reasoning, answer = intended(out)
    # Only the last token of each engine response reaches the stream, and the answer's
    # deltas go out on the reasoning item's index with no output_item.added of its own.
    assert deltas(events) == {
        ("response.reasoning_text.delta", 0): " fact",
        ("response.output_text.delta", 0): " also.",
    }
    assert len(" fact" + " also.") < len(reasoning + answer) / 10
    added = [e for e in events if e.type == "response.output_item.added"]
    assert [e.item.type for e in added] == ["reasoning"]
    # The final response still has both items, with the full text.
    final = stream.final_response
    assert [item.type for item in final.output] == ["reasoning", "message"]
    assert final.output[1].content[0].text == answer
    with pytest.raises(AssertionError):
        sdk_accumulate([event_to_dict(e) for e in events])


def test_item_ids_are_empty_and_final_ids_fresh():
    events, stream = run(named_output("reasoning_answer"), 1)
    stream_ids = {e.item_id for e in events if hasattr(e, "item_id")}
    stream_ids |= {e.item.id for e in events if e.type.startswith("response.output_item.")}
    assert stream_ids == {""}
    final_ids = {item.id for item in stream.final_response.output}
    assert all(i.startswith(("rs_", "msg_")) for i in final_ids) and len(final_ids) == 2


def test_done_events_carry_next_index_and_trimmed_stop_duplicates_last_delta():
    events, _ = run(named_output("reasoning_answer"), 1)
    done = [(e.type, e.output_index) for e in events if e.type.endswith(".done")]
    assert done == [("response.reasoning_text.done", 1), ("response.output_item.done", 1)]
    # The empty last response re-sends the previous delta ("city.." instead of "city.").
    assert deltas(events)[("response.output_text.delta", 1)].endswith("city..")
    assert [e.type for e in events[-2:]] == ["response.output_text.delta", "response.completed"]


def test_preamble_shifts_the_answer_index():
    events, stream = run(named_output("preamble_answer"), 1)
    added = [(e.item.type, e.output_index) for e in events if e.type.endswith("item.added")]
    assert added == [("reasoning", 0), ("message", 2)]
    assert [item.type for item in stream.final_response.output] == ["reasoning", "message"]


def test_tool_calls_are_not_streamed_and_analysis_call_becomes_reasoning():
    events, stream = run(named_output("preamble_tool_call"), 20)
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "response.completed",
    ]
    assert [i.type for i in stream.final_response.output] == ["reasoning", "function_call"]
    assert stream.final_response.output[1].name == "get_weather"
    _, stream = run(named_output("analysis_tool_call"), 1)
    assert [i.type for i in stream.final_response.output] == ["reasoning", "reasoning"]


@pytest.mark.skipif(
    not REJECTS_UNFINISHED_ITEMS, reason="this openai's accumulator accepts unfinished items"
)
@pytest.mark.parametrize("split", [1, 20])
def test_sdk_rejects_length_cut_stream(split):
    events, stream = run(named_output("length_cut"), split)
    assert events[-1].type == "response.completed"
    assert stream.final_response.status == "incomplete"
    with pytest.raises(RuntimeError, match="unfinished output items"):
        sdk_accumulate([event_to_dict(e) for e in events])


def test_reasoning_item_gets_no_content_part_done():
    events, _ = run(named_output("reasoning_answer", trimmed=False), 1)
    part_done = [e.output_index for e in events if e.type == "response.content_part.done"]
    assert part_done == [2]  # only the message's, at the shifted index


def test_harmony_error_raises_from_final_parse():
    out = named_output("malformed_missing_start")
    with pytest.raises(HarmonyError):
        run(out, 1)
    with pytest.raises(HarmonyError, match="EOS"):
        run(named_output("header_cut"), 5)


def test_sequence_numbers_and_usage():
    out = named_output("multibyte_emoji")
    events, stream = run(out, 3)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    u = stream.final_response.usage
    assert (u.input_tokens, u.output_tokens) == (10, len(out.delivered))
    assert u.output_tokens_details.reasoning_tokens == 0


def test_empty_response_repeats_stale_parser_facts():
    stream = UpstreamBaselineStream(new_context())
    stream.start()
    assert stream.feed([]) == []  # nothing parsed yet: nothing to repeat
    tokens = named_output("short_answer", trimmed=False).generated
    for token in tokens:
        stream.feed([token])
    # After <|return|> the parser waits for <|start|>: an empty response re-sends the done
    # events of the last message, one index further on.
    again = [(e.type, e.output_index) for e in stream.feed([])]
    assert again == [
        ("response.output_text.done", 2),
        ("response.content_part.done", 2),
        ("response.output_item.done", 2),
    ]


def test_random_outputs_run_or_fail_like_upstream():
    """Valid, uncut outputs always reach response.completed; the final item count follows
    upstream's mapping (preambles dropped)."""
    rng = random.Random(5)
    completed = 0
    for out in generate_outputs(150, seed=1000):
        if out.malformed or out.name in ("header_cut", "length_cut"):
            continue
        events, stream = run(out, rng)
        assert events[-1].type == "response.completed"
        enc = load_gpt_oss_encoding()
        messages = enc.parse_messages_from_completion_tokens(
            list(out.delivered), role=Role.ASSISTANT
        )
        kept = [m for m in messages if not (m.channel == "commentary" and m.recipient is None)]
        assert len(stream.final_response.output) == len(kept)
        completed += 1
    assert completed > 80
