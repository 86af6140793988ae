# SPDX-License-Identifier: Apache-2.0
"""The upstream-only modules of the change set: ``HarmonyResponsesStream`` and the guard edit.

``HarmonyResponsesStream`` is what upstream's ``ResponsesStreamingProcessor`` delegates to
after the change; here it is driven with a stand-in processor (the attributes it reads).
Contract, as the plugin keeps it: one event per frame, one event per final-response call,
numbering 0, 1, 2, ...; a stream that fails early sends ``error`` at once and holds
``response.failed`` for the final call; a streamed response is stored as a non-streaming one.
"""

from __future__ import annotations

import asyncio
import json
import pickle
from types import SimpleNamespace

import pytest

from trtllm_stream_fix.serving.processor import HarmonyResponsesStream
from trtllm_stream_fix.upstream_pr import edits

pytestmark = pytest.mark.cpu_only

ANSWER = "<|channel|>final<|message|>Paris is the capital of France.<|return|>"


class _Store:
    def __init__(self) -> None:
        self.calls: list[dict] = []

    async def store_response(self, **kwargs) -> None:
        self.calls.append(kwargs)


class _Model:
    @classmethod
    def from_request(cls, **kwargs):
        return ("server response", kwargs["status"], len(kwargs["output"]))


def _processor(store: _Store | None = None) -> SimpleNamespace:
    request = SimpleNamespace(
        request_id="resp_test",
        tools=[],
        tool_choice="auto",
        parallel_tool_calls=True,
        instructions=None,
        max_output_tokens=None,
        store=True,
        previous_response_id=None,
    )
    return SimpleNamespace(
        request=request,
        sampling_params=SimpleNamespace(temperature=None, top_p=None),
        model_name="gpt-oss-20b",
        response_creation_time=1_700_000_000,
        sequence_number=2,  # one upstream line starts here
        enable_store=store is not None,
        conversation_store=store,
    )


def _result(diff: list[int], done: bool, finish_reason: str | None = None) -> SimpleNamespace:
    output = SimpleNamespace(token_ids=diff, token_ids_diff=diff, finish_reason=finish_reason)
    return SimpleNamespace(outputs=[output], _done=done, prompt_token_ids=[1, 2, 3])


def _events(frames: list[str]) -> list[dict]:
    out = []
    for frame in frames:
        data = [line for line in frame.splitlines() if line.startswith("data: ")]
        assert len(data) == 1, f"one event per frame: {frame!r}"
        out.append(json.loads(data[0][len("data: ") :]))
    return out


def _no_messages(token_ids: list[int]) -> list:
    return []


def _stream() -> HarmonyResponsesStream:
    return HarmonyResponsesStream(_no_messages, _Model)


def test_numbering_is_contiguous_and_the_final_call_sends_one_terminal_event(tokens):
    processor, stream = _processor(), _stream()
    token_ids = tokens(ANSWER)[:-1]  # <|return|> trimmed, as the engine does
    frames = stream.initial_responses(processor)
    frames += stream.process_output(processor, _result(token_ids[:5], False))
    frames += stream.process_output(processor, _result(token_ids[5:], True, "stop"))
    final, response = stream.final_response(processor, _result([], True, "stop"), 3)
    events = _events([*frames, final])
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in _events([final])] == ["response.completed"]
    assert response.usage.input_tokens == 3
    assert stream.final_response(processor, _result([], True, "stop")) == ("", None)


def test_an_early_failure_sends_error_at_once_and_holds_response_failed(tokens):
    processor, stream = _processor(), _stream()
    stream.initial_responses(processor)
    bad = tokens("<|channel|>final<|message|>Hi<|return|>junk")
    sent = _events(stream.process_output(processor, _result(bad, False)))
    assert sent[-1]["type"] == "error"
    assert stream.process_output(processor, _result(tokens(" more"), False)) == []
    final, response = stream.final_response(processor, _result([], True, "stop"))
    assert [e["type"] for e in _events([final])] == ["response.failed"]
    assert response.status == "failed"  # stored as a non-streaming response is


def test_a_streamed_response_is_stored_like_a_non_streaming_one(tokens):
    store = _Store()
    processor, stream = _processor(store), _stream()
    stream.initial_responses(processor)
    stream.process_output(processor, _result(tokens(ANSWER)[:-1], True, "stop"))
    _, response = stream.final_response(processor, _result([], True, "stop"))
    asyncio.run(stream.store(processor, response, _result([], True, "stop")))
    assert [c["resp"] for c in store.calls] == [("server response", "completed", 1)]
    assert store.calls[0]["resp_msgs"] == []


def test_store_soon_without_an_event_loop_only_warns(tokens, caplog):
    store = _Store()
    processor, stream = _processor(store), _stream()
    stream.initial_responses(processor)
    stream.process_output(processor, _result(tokens(ANSWER)[:-1], True, "stop"))
    _, response = stream.final_response(processor, _result([], True, "stop"))
    stream.store_soon(processor, response, _result([], True, "stop"))
    assert store.calls == [] and "not stored" in caplog.text


def test_a_pickled_copy_builds_its_own_machine_and_continues_the_numbering(tokens):
    processor, stream = _processor(), _stream()
    stream.initial_responses(processor)  # the server's copy: 0, 1
    worker, worker_processor = pickle.loads(pickle.dumps(stream)), _processor()
    worker_processor.sequence_number = 0  # a fresh copy of the processor
    frames = worker.process_output(worker_processor, _result(tokens(ANSWER)[:-1], True, "stop"))
    assert _events(frames)[0]["sequence_number"] == 2


# -- guard edit ---------------------------------------------------------------------------------

GUARD_LINE = """\
_COMPLETED_EVENT_MARKER = "event: response.completed"
_COMPLETED_EVENT_MARKER_BYTES = _COMPLETED_EVENT_MARKER.encode("utf-8")


async def guard_responses_stream(stream, terminal_events):
    completed = False
    try:
        async for chunk in stream:
            if not completed:
                completed = (_COMPLETED_EVENT_MARKER_BYTES in chunk
                             if isinstance(chunk, bytes) else
                             _COMPLETED_EVENT_MARKER in chunk)
            yield chunk
    except Exception:
        if not completed:
            for frame in terminal_events():
                yield frame
        raise
"""


def _guard(text: str):
    namespace: dict = {}
    exec(compile(text, "guard", "exec"), namespace)
    return namespace["guard_responses_stream"]


@pytest.mark.parametrize("terminal", ["response.incomplete", "response.failed"])
def test_the_guard_edit_sends_nothing_after_any_terminal_event(terminal):
    tree = edits.ast.parse(GUARD_LINE)
    lines = GUARD_LINE.splitlines(keepends=True)
    for insert in sorted(edits._guard_inserts(tree), key=lambda i: i.line, reverse=True):
        stop = insert.line if insert.replace_to is None else insert.replace_to
        lines[insert.line : stop] = [insert.text]
    edited = "".join(lines)

    async def frames():
        yield f"event: {terminal}\ndata: {{}}\n\n"
        raise RuntimeError("server fault after the terminal event")

    async def run(guard) -> list[str]:
        out = []
        with pytest.raises(RuntimeError):
            async for frame in guard(frames(), lambda: ["event: error\n\n"]):
                out.append(frame)
        return out

    assert asyncio.run(run(_guard(GUARD_LINE)))[-1] == "event: error\n\n"  # the defect
    assert asyncio.run(run(_guard(edited))) == [f"event: {terminal}\ndata: {{}}\n\n"]
    assert edits._guard_inserts(edits.ast.parse(edited)) == []  # the fixed form: no edit
