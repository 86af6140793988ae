# SPDX-License-Identifier: Apache-2.0
"""``HarmonyResponsesStream``'s life as named states: each processor call moves it along
``TRANSITIONS``, and a call the table has no entry for sends nothing and leaves the state as
it was (a second ``initial_responses``, engine responses after the terminal event, anything
after the final response)."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

import pytest

from trtllm_stream_fix.core.config import StreamConfig
from trtllm_stream_fix.differential.engine_results import Result
from trtllm_stream_fix.serving.processor import (
    TRANSITIONS,
    HarmonyResponsesStream,
    StreamInput,
    StreamState,
)

pytestmark = pytest.mark.cpu_only


def _processor() -> SimpleNamespace:
    return SimpleNamespace(
        request=SimpleNamespace(request_id="resp_states", tools=[], tool_choice="auto"),
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


def test_a_stream_walks_new_started_streaming_ended_closed(encoding):
    tokens = encoding.encode("<|channel|>final<|message|>Hi there", allowed_special="all")
    stream, processor = _stream(), _processor()
    assert stream.state is StreamState.NEW
    assert len(stream.initial_responses(processor)) == 2
    assert stream.state is StreamState.STARTED
    assert stream.initial_responses(processor) == []  # once
    res = Result(prompt_token_ids=[1])
    for token in tokens[:-1]:
        res.apply([token], False, None)
        stream.process_output(processor, res)
        assert stream.state is StreamState.STREAMING
    res.apply(tokens[-1:], True, "stop")
    stream.process_output(processor, res)
    assert stream.state is StreamState.ENDED
    assert stream.process_output(processor, res) == []  # the terminal event is held
    frame, response = stream.final_response(processor, res)
    assert "response.completed" in frame and response is not None
    assert stream.state is StreamState.CLOSED
    assert stream.final_response(processor, res) == ("", None)
    assert stream.initial_responses(processor) == []


def test_a_pickled_copy_of_a_started_stream_starts_again_in_the_worker():
    stream = _stream()
    stream.initial_responses(_processor())
    copy = pickle.loads(pickle.dumps(stream))
    assert stream.state is StreamState.STARTED
    assert copy.state is StreamState.NEW


def test_every_transition_lands_on_a_state_and_closed_is_final():
    for (state, event), target in TRANSITIONS.items():
        assert isinstance(state, StreamState) and isinstance(event, StreamInput)
        assert isinstance(target, StreamState)
    assert not [key for key in TRANSITIONS if key[0] is StreamState.CLOSED]
    assert {t for (s, e), t in TRANSITIONS.items() if e is StreamInput.FINAL} == {
        StreamState.CLOSED
    }
