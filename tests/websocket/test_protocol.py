# SPDX-License-Identifier: Apache-2.0
"""The sans-IO core of WebSocket mode: client frames, lanes, the per-lane cache, errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trtllm_stream_fix.websocket import (
    ClientEventError,
    ConnectionState,
    TurnRejected,
    WebSocketSettings,
    error_event,
    parse_frame,
)
from trtllm_stream_fix.websocket.protocol import STREAM_ID, rejected_event, tag_event

LANE_CHARS = "abcXYZ019_.-"


def frame(**fields) -> str:
    return json.dumps({"type": "response.create", "model": "m", "input": "hi", **fields})


def refused(text: str) -> ClientEventError:
    with pytest.raises(ClientEventError) as caught:
        parse_frame(text)
    return caught.value


def test_create_body_loses_the_envelope_fields():
    create = parse_frame(frame(stream_id="lane-1", generate=False, store=False, stream=True))
    assert create.body == {"model": "m", "input": "hi", "store": False}
    assert (create.stream_id, create.generate) == ("lane-1", False)
    assert parse_frame(frame()).generate is True


@pytest.mark.parametrize(
    "text, code, param",
    [
        ("{not json", "invalid_json", None),
        ("[1, 2]", "invalid_json", None),
        (json.dumps({"model": "m"}), "missing_required_parameter", "type"),
        (json.dumps({"type": "response.cancel"}), "invalid_value", "type"),
        (json.dumps({"type": "session.update"}), "invalid_value", "type"),
        (frame(stream=False), "invalid_value", "stream"),
        (frame(stream="yes"), "invalid_value", "stream"),
        (frame(background=True), "unsupported_parameter", "background"),
        (
            frame(stream_options={"include_obfuscation": False}),
            "unsupported_parameter",
            "stream_options",
        ),
        (frame(generate="no"), "invalid_type", "generate"),
        (frame(stream_id=""), "invalid_stream_id", "stream_id"),
        (frame(stream_id="a b"), "invalid_stream_id", "stream_id"),
        (frame(stream_id="x" * 257), "invalid_stream_id", "stream_id"),
        (frame(stream_id=7), "invalid_stream_id", "stream_id"),
        ("[" * 200 + "]" * 200, "invalid_json", None),
    ],
)
def test_bad_frames_are_400_error_events(text, code, param):
    exc = refused(text)
    assert (exc.status, exc.code, exc.param) == (400, code, param)


def test_refusal_names_the_lane_when_it_is_valid():
    assert refused(frame(stream_id="a", background=True)).stream_id == "a"


@given(st.text(alphabet=LANE_CHARS, min_size=1, max_size=256))
def test_every_valid_stream_id_is_accepted(lane):
    assert parse_frame(frame(stream_id=lane)).stream_id == lane


@given(st.text(min_size=1, max_size=300))
def test_stream_id_accepted_exactly_when_it_matches(lane):
    valid = STREAM_ID.fullmatch(lane) is not None
    try:
        assert parse_frame(frame(stream_id=lane)).stream_id == lane and valid
    except ClientEventError as exc:
        assert not valid and exc.code == "invalid_stream_id"


def test_error_event_shape():
    event = error_event(400, "nope", code="c", param="p", stream_id="s", sequence_number=3)
    assert event == {
        "type": "error",
        "status": 400,
        "error": {"type": "invalid_request_error", "code": "c", "message": "nope", "param": "p"},
        "stream_id": "s",
        "sequence_number": 3,
    }
    assert "stream_id" not in error_event(500, "x") and "sequence_number" not in error_event(
        500, "x"
    )
    body = {"error": {"message": "m", "type": "server_error", "param": None, "code": "overloaded"}}
    rejected = rejected_event(TurnRejected(503, body), None)
    assert rejected["status"] == 503 and rejected["error"]["code"] == "overloaded"


def state(**settings) -> ConnectionState:
    return ConnectionState(WebSocketSettings(**settings), opened_at=0.0)


def completed(response_id: str, output: list) -> dict:
    return {"type": "response.completed", "response": {"id": response_id, "output": output}}


def run(s: ConnectionState, text: str, terminal: dict | None):
    create = parse_frame(text)
    s.admit(create)
    turn = s.begin(create)
    s.end(turn, terminal)
    s.finish(create)
    return turn


def test_cached_continuation_expands_into_the_full_input():
    s = state()
    out1 = [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]
    run(s, frame(store=False, input="first"), completed("resp_1", out1))
    create = parse_frame(
        frame(
            store=False,
            previous_response_id="resp_1",
            input=[{"type": "function_call_output", "call_id": "c1", "output": "ok"}],
        )
    )
    s.admit(create)
    turn = s.begin(create)
    assert "previous_response_id" not in turn.body
    assert turn.body["input"] == [
        {"type": "message", "role": "user", "content": "first"},
        *out1,
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    ]
    event = tag_event(
        {"type": "response.created", "response": {"previous_response_id": None}}, turn
    )
    assert event["response"]["previous_response_id"] == "resp_1"
    s.end(turn, completed("resp_2", []))
    s.finish(create)
    assert s.cache[None].id == "resp_2" and s.find("resp_1") is None  # the lane's latest only
    assert s.pending == s.pending_bytes == 0


def test_uncached_id_falls_back_to_the_store_only_when_storing():
    s = state()
    kept = s.begin(parse_frame(frame(previous_response_id="resp_x")))
    assert kept.body["previous_response_id"] == "resp_x" and not kept.from_cache
    with pytest.raises(ClientEventError) as caught:
        s.begin(parse_frame(frame(store=False, previous_response_id="resp_x")))
    assert (caught.value.code, caught.value.param) == (
        "previous_response_not_found",
        "previous_response_id",
    )


def test_failed_same_lane_continuation_evicts_its_parent_but_a_failed_fork_does_not():
    s = state()
    run(s, frame(store=False), completed("resp_a", []))
    run(s, frame(store=False, stream_id="b"), completed("resp_b", []))
    run(s, frame(store=False, stream_id="c", previous_response_id="resp_a"), None)  # fork fails
    assert s.find("resp_a") is not None
    run(s, frame(store=False, previous_response_id="resp_a"), {"type": "response.failed"})
    assert s.find("resp_a") is None and s.find("resp_b") is not None


def test_lane_and_queue_limits():
    s = state(max_lanes=2, max_in_flight=1, max_queued=3)
    for lane in ("a", "b", "a"):
        s.admit(parse_frame(frame(stream_id=lane)))
    with pytest.raises(ClientEventError) as caught:
        s.admit(parse_frame(frame(stream_id="c")))
    assert caught.value.code == "websocket_stream_limit_reached" and caught.value.stream_id == "c"
    with pytest.raises(ClientEventError) as caught:
        s.admit(parse_frame(frame()))  # the default lane is not counted, the queue is
    assert caught.value.code == "websocket_stream_limit_reached"


def test_queued_frames_are_bounded_in_bytes():
    s = state(max_queued_bytes=1000)
    big = parse_frame(frame(input="x" * 900))
    s.admit(big)
    with pytest.raises(ClientEventError) as caught:
        s.admit(parse_frame(frame(input="y" * 200)))
    assert caught.value.code == "websocket_stream_limit_reached"
    s.finish(big)
    s.admit(parse_frame(frame(input="z" * 2000)))  # alone, any frame the size limit allows


def test_lifetime():
    s = state(lifetime_seconds=60)
    assert not s.expired(59.9) and s.expired(60)
    exc = s.lifetime_error()
    assert exc.code == "websocket_connection_limit_reached" and "(1 minutes)" in exc.message
    assert "(60 minutes)" in state().lifetime_error().message


@pytest.mark.parametrize(
    "bad", [{"max_in_flight": 0}, {"lifetime_seconds": 0}, {"max_queued": 1, "max_in_flight": 2}]
)
def test_settings_are_checked(bad):
    with pytest.raises(ValueError):
        WebSocketSettings(**bad)


def test_a_conversation_continuing_a_stored_response_keeps_its_id_for_the_store():
    s = state()
    run(s, frame(input="second", previous_response_id="resp_stored"), completed("resp_2", []))
    create = parse_frame(frame(input="third", previous_response_id="resp_2"))
    s.admit(create)
    turn = s.begin(create)
    assert turn.from_cache and turn.body["previous_response_id"] == "resp_stored"
    assert [i["content"] for i in turn.body["input"]] == ["second", "third"]
    event = tag_event({"response": {"previous_response_id": "resp_stored"}}, turn)
    assert event["response"]["previous_response_id"] == "resp_2"  # as the client sent it


def test_the_cache_is_bounded_per_connection():
    s = state(max_cache_bytes=1000)
    run(s, frame(store=False, input="a" * 400), completed("resp_1", []))
    assert s.find("resp_1") is not None and s.cached_bytes() > 400
    run(s, frame(store=False, stream_id="b", input="b" * 700), completed("resp_2", []))
    assert s.find("resp_2") is None  # would pass the bound: not cached
    run(s, frame(store=False, previous_response_id="resp_1", input="c" * 700), completed("r", []))
    assert s.find("resp_1") is None and s.find("r") is None and s.cached_bytes() == 0


@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, "a", "b", "c"]),  # lane
            st.sampled_from([None, 0, 1, 2, "resp_missing"]),  # parent: an earlier turn's id
            st.booleans(),  # store
            st.sampled_from(["response.completed", "response.failed", None]),  # how it ends
            st.integers(0, 300),  # input size
        ),
        max_size=40,
    )
)
def test_connection_state_invariants(turns):
    """Whatever the turns, pending turns balance, the lanes and the cache stay bounded, a
    store: false continuation never keeps an id the connection does not hold, and the
    expanded input holds the parent's conversation in order."""
    s = state(max_lanes=2, max_cache_bytes=2000)
    ids: list[str] = []
    for n, (lane, parent, store, end, size) in enumerate(turns):
        fields = {"input": "x" * size, "store": store}
        if lane is not None:
            fields["stream_id"] = lane
        if isinstance(parent, int) and parent < len(ids):
            fields["previous_response_id"] = ids[parent]
        elif parent == "resp_missing":
            fields["previous_response_id"] = parent
        create = parse_frame(frame(**fields))
        try:
            s.admit(create)
        except ClientEventError as exc:
            assert exc.code == "websocket_stream_limit_reached" and lane not in s.named
            continue
        cached = s.find(fields.get("previous_response_id", ""))
        try:
            turn = s.begin(create)
        except ClientEventError as exc:
            assert exc.code == "previous_response_not_found" and not store and cached is None
            s.finish(create)
            continue
        if cached is not None:
            parent_entry = cached[1]
            assert turn.input[: len(parent_entry.input)] == parent_entry.input
            assert "previous_response_id" not in turn.body or parent_entry.base_id
        rid = f"resp_{n}"
        ids.append(rid)
        terminal = {"type": end, "response": {"id": rid, "output": []}} if end else None
        s.end(turn, terminal, 10)
        s.finish(create)
        assert s.pending == s.pending_bytes == 0
        assert len(s.named) <= 2 and s.cached_bytes() <= 2000
        assert set(s.cache) <= {None, *s.named}
