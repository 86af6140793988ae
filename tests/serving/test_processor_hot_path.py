# SPDX-License-Identifier: Apache-2.0
"""``HarmonyResponsesStream``'s per-response path (every engine response but the first and
the last): frames numbered on from the processor's count, a mid-stream failure held back
as at the end, a pickled copy that picks up where the processor's count is."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

import pytest

from trtllm_stream_fix.core.config import StreamConfig
from trtllm_stream_fix.differential.engine_results import Result, events_of
from trtllm_stream_fix.serving.processor import HarmonyResponsesStream

pytestmark = pytest.mark.cpu_only


def _processor() -> SimpleNamespace:
    request = SimpleNamespace(request_id="resp_hot", tools=[], tool_choice="auto")
    return SimpleNamespace(
        request=request,
        sampling_params=SimpleNamespace(temperature=None, top_p=None),
        model_name="gpt-oss-20b",
        response_creation_time=0,
        sequence_number=0,
        enable_store=False,
        conversation_store=None,
    )


def _no_messages(tokens: list[int]) -> list[object]:
    return []


def _stream() -> HarmonyResponsesStream:
    return HarmonyResponsesStream(_no_messages, None, StreamConfig())


def _tokens(encoding, text: str) -> list[int]:
    return encoding.encode(text, allowed_special="all")


def _run(stream, processor, tokens, split=1, finish_reason="stop"):
    frames = stream.initial_responses(processor)
    res = Result(prompt_token_ids=[1, 2, 3])
    for i in range(0, len(tokens), split):
        last = i + split >= len(tokens)
        res.apply(tokens[i : i + split], last, finish_reason if last else None)
        frames += stream.process_output(processor, res)
    frame, _ = stream.final_response(processor, res)
    return events_of([*frames, frame])


def test_frames_are_numbered_from_the_processor_count(encoding):
    tokens = _tokens(encoding, "<|channel|>final<|message|>The river bends north.")
    reference = _run(_stream(), _processor(), tokens)
    assert [e["sequence_number"] for e in reference] == list(range(len(reference)))
    stream, processor = _stream(), _processor()
    frames = stream.initial_responses(processor)
    processor.sequence_number = 40  # e.g. restamped elsewhere: the processor's count wins
    res = Result(prompt_token_ids=[1])
    for i, token in enumerate(tokens):
        res.apply([token], i == len(tokens) - 1, "stop" if i == len(tokens) - 1 else None)
        frames += stream.process_output(processor, res)
    frames.append(stream.final_response(processor, res)[0])
    events = events_of(frames)
    assert [e["sequence_number"] for e in events] == [0, 1, *range(40, 40 + len(events) - 2)]
    assert [e["type"] for e in events] == [e["type"] for e in reference]


def test_a_mid_stream_failure_holds_the_terminal_event(encoding):
    tokens = _tokens(encoding, "<|channel|>final<|message|>Hi there<|end|>")
    tokens += _tokens(encoding, " more text")  # text where a message must start
    stream, processor = _stream(), _processor()
    frames = stream.initial_responses(processor)
    res = Result(prompt_token_ids=[1])
    sent = []
    for token in tokens:
        res.apply([token], False, None)
        sent += stream.process_output(processor, res)
    types = [e["type"] for e in events_of(frames + sent)]
    assert types[-1] == "error" and "response.failed" not in types
    res.apply([], True, "stop")
    assert stream.process_output(processor, res) == []
    final = events_of([stream.final_response(processor, res)[0]])
    assert [e["type"] for e in final] == ["response.failed"]
    assert final[0]["sequence_number"] == len(types)


def test_a_pickled_copy_continues_the_numbering(encoding):
    tokens = _tokens(encoding, "<|channel|>analysis<|message|>Think.<|end|>")
    tokens += _tokens(encoding, "<|start|>assistant<|channel|>final<|message|>Done.")
    reference = _run(_stream(), _processor(), tokens)
    stream, processor = _stream(), _processor()
    frames = stream.initial_responses(processor)
    # A post-processing worker gets a copy before the first engine response.
    copy, worker = pickle.loads(pickle.dumps((stream, processor)))
    res = Result(prompt_token_ids=[1])
    for i, token in enumerate(tokens):
        last = i == len(tokens) - 1
        res.apply([token], last, "stop" if last else None)
        frames += copy.process_output(worker, res)
    frames.append(copy.final_response(worker, res)[0])
    events = events_of(frames)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events] == [e["type"] for e in reference]
    # Mid-stream the machine and its bound feed stay behind.
    assert pickle.loads(pickle.dumps(stream))._feed is None
    res.apply([], False, None)
    half = _stream()
    half.initial_responses(_processor())
    half.process_output(_processor(), res)
    assert half._feed is not None
    assert pickle.loads(pickle.dumps(half))._feed is None
