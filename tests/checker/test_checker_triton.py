# SPDX-License-Identifier: Apache-2.0
"""Triton decoupled-streaming checker: completion only by the final flag, per-request state."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trtllm_stream_fix.checker import (
    InvalidTransition,
    RequestInput,
    RequestState,
    TritonRequest,
    TritonStreamChecker,
    parse_triton_response,
)
from trtllm_stream_fix.checker.triton import _TRANSITIONS, TritonResponse

pytestmark = pytest.mark.cpu_only


def http(
    text: str | None, *, final: bool = False, rid: str | None = "r1", error: str | None = None
) -> dict:
    d: dict = {"model_name": "tensorrt_llm_bls", "model_version": "1"}
    if rid is not None:
        d["id"] = rid
    if text is not None:
        d["text_output"] = text
    if final:
        d["triton_final_response"] = True
    if error is not None:
        d["error"] = error
    return d


def grpc(text: str | None, *, final: bool, rid: str, error: str = "") -> dict:
    outputs = (
        [
            {
                "name": "text_output",
                "datatype": "BYTES",
                "shape": [1],
                "contents": {"bytes_contents": [text]},
            }
        ]
        if text is not None
        else []
    )
    return {
        "error_message": error,
        "infer_response": {
            "model_name": "m",
            "id": rid,
            "outputs": outputs,
            "parameters": {"triton_final_response": {"bool_param": final}},
        },
    }


def test_parse_shapes() -> None:
    assert parse_triton_response(http("hi", final=True)) == TritonResponse(
        "r1", True, None, ("text_output",), "hi"
    )
    g = parse_triton_response(grpc(None, final=True, rid="7"))
    assert (g.request_id, g.final, g.empty, g.input) == ("7", True, True, RequestInput.EMPTY_FINAL)
    e = parse_triton_response(grpc(None, final=True, rid="7", error="boom"))
    assert (e.error, e.input) == ("boom", RequestInput.ERROR)
    p = parse_triton_response(
        {"id": "x", "parameters": {"triton_final_response": True}, "text_output": ["a", "b"]}
    )
    assert (p.final, p.text, p.input) == (True, "ab", RequestInput.FINAL)


def test_single_request_completes_on_final_flag() -> None:
    checker = TritonStreamChecker(["r1"])
    for r in (http("Hel"), http("lo"), http("!", final=True)):
        checker.feed(r)
    result = checker.finish()
    assert result.ok, result.violations
    (req,) = result.requests
    assert (req.text, req.state, req.final_flag, req.responses) == (
        "Hello!",
        "final_received",
        True,
        3,
    )


def test_silence_is_not_completion() -> None:
    checker = TritonStreamChecker(["r1"])
    checker.feed(http("Hel"))
    result = checker.finish()
    assert not result.ok
    assert result.has("not-final")
    assert result.terminal is None


def test_clean_end_of_http_body_completes_single_request_with_warning() -> None:
    checker = TritonStreamChecker(["r1"])
    checker.feed(http("Hel"))
    result = checker.finish(end_of_body=True)
    assert result.ok
    assert result.requests[0].completed_by_end_of_body
    assert result.warnings


def test_empty_final_response() -> None:
    checker = TritonStreamChecker(["a"])
    checker.feed(grpc("x", final=False, rid="a"))
    checker.feed(grpc(None, final=True, rid="a"))
    result = checker.finish()
    assert result.ok
    assert result.requests[0].text == "x"


def test_error_under_http_200_fails_request() -> None:
    checker = TritonStreamChecker(["r1"])
    checker.feed(http("par"))
    checker.feed(http(None, error="CUDA out of memory"))
    result = checker.finish()
    assert result.terminal == "failed"
    assert not result.ok
    assert result.requests[0].error == "CUDA out of memory"
    assert result.violations == []


def test_response_after_final_is_a_violation() -> None:
    checker = TritonStreamChecker(["r1"])
    checker.feed(http("a", final=True))
    checker.feed(http("b"))
    result = checker.finish()
    assert result.has("after-final")
    assert "Invalid input RESPONSE in state FINAL_RECEIVED" in result.violations[0]


def test_interleaved_requests_kept_apart() -> None:
    checker = TritonStreamChecker(["a", "b"])
    for r in (
        grpc("1", final=False, rid="a"),
        grpc("x", final=False, rid="b"),
        grpc("2", final=True, rid="a"),
        grpc("y", final=False, rid="b"),
    ):
        checker.feed(r)
    assert checker.pending == ["b"]
    assert not checker.result().ok
    checker.feed(grpc(None, final=True, rid="b"))
    result = checker.finish()
    assert result.ok
    assert {r.request_id: r.text for r in result.requests} == {"a": "12", "b": "xy"}


def test_unknown_and_ambiguous_requests() -> None:
    checker = TritonStreamChecker(["a", "b"])
    checker.feed(http("?", rid="zzz"))
    checker.feed(http("?", rid=None))
    result = checker.finish()
    assert result.has("unknown-request")
    assert result.has("request-id")
    auto = TritonStreamChecker(accept_unknown=True)
    auto.feed(http("ok", final=True, rid="new"))
    assert auto.finish().ok


def test_request_state_machine_rejects_invalid_transitions() -> None:
    req = TritonRequest("r")
    req.process(TritonResponse("r", True, None, ("text_output",), "x"))
    assert req.state is RequestState.FINAL_RECEIVED
    with pytest.raises(InvalidTransition, match="Invalid input FINAL in state FINAL_RECEIVED"):
        req.process(TritonResponse("r", True, None, ("text_output",), "y"))
    assert req.state is RequestState.FINAL_RECEIVED  # unchanged
    with pytest.raises(InvalidTransition):
        req.end_of_body()


_SAMPLES = {
    RequestInput.RESPONSE: TritonResponse("r", False, None, ("o",), "t"),
    RequestInput.FINAL: TritonResponse("r", True, None, ("o",), "t"),
    RequestInput.EMPTY_FINAL: TritonResponse("r", True, None, (), None),
    RequestInput.ERROR: TritonResponse("r", True, "e", (), None),
}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list(RequestInput)), max_size=8))
def test_state_machine_closure(inputs: list[RequestInput]) -> None:
    """Any input sequence either follows the table or raises and leaves the state alone."""
    req = TritonRequest("r")
    for inp in inputs:
        before = req.state
        expected = _TRANSITIONS.get((before, inp))
        if expected is None:
            with pytest.raises(InvalidTransition):
                req.process(_SAMPLES[inp])
            assert req.state is before
        else:
            assert req.process(_SAMPLES[inp]) is expected


def test_final_states_accept_only_tolerated_inputs() -> None:
    for state, inp in itertools.product(RequestState, RequestInput):
        allowed = (state, inp) in _TRANSITIONS
        if state is RequestState.FINAL_RECEIVED:
            assert not allowed
        if state is RequestState.FAILED:
            assert allowed == (inp is RequestInput.EMPTY_FINAL)
