# SPDX-License-Identifier: Apache-2.0
"""Hostile token sequences: one regression test per defect of the core found by attack.

Each test failed on the core before one item path and the explicit lifecycle (f2ba54d).
"""

from __future__ import annotations

import pytest
from _streams import of_type, run, split

from trtllm_stream_fix.checker import check_responses_events
from trtllm_stream_fix.core.machine import ResponsesEventMachine
from trtllm_stream_fix.core.nonstreaming import build_response
from trtllm_stream_fix.core.sse import event_to_dict
from trtllm_stream_fix.defaults import new_context
from trtllm_stream_fix.differential.sdk_oracle import sdk_accumulate
from trtllm_stream_fix.differential.visible import client_visible, comparable_response

pytestmark = pytest.mark.cpu_only

FINAL = "<|channel|>final<|message|>"
SPLITS = (1, 2, 3, 7, 1000)


def _byte_token(encoding, byte: int) -> int:
    """The token whose bytes are exactly ``bytes([byte])`` (o200k has one per byte)."""
    for token in range(1000):
        if bytes(encoding._inner.decode_bytes([token])) == bytes([byte]):
            return token
    raise LookupError(byte)


def _texts(events) -> list[str]:
    """Item texts (or arguments) of the terminal response, in order."""
    texts = []
    for item in events[-1]["response"]["output"]:
        if "arguments" in item:
            texts.append(item["arguments"])
        else:
            texts.append("".join(part["text"] for part in item.get("content") or []))
    return texts


def _non_streaming(encoding, token_ids, finish_reason):
    context = new_context(response_id="resp_test", created_at=0.0)
    return event_to_dict(build_response(context, token_ids, finish_reason, encoding=encoding))


def _assert_stream_equals_non_streaming(encoding, token_ids, finish_reason):
    expected = comparable_response(_non_streaming(encoding, token_ids, finish_reason))
    for size in SPLITS:
        events = run("ours", split(token_ids, size), finish_reason, encoding=encoding)
        assert comparable_response(events[-1]["response"]) == expected, size
        check = check_responses_events(events)
        assert check.ok, (size, check.violations)
        sdk_accumulate(events)
    return expected


# 1. Batch-size dependence: a message ending on an incomplete UTF-8 sequence, then another.


def test_1_partial_utf8_message_followed_by_another_in_the_same_response(encoding, tokens):
    first_emoji_token = tokens("🎉")[0]
    token_ids = (
        tokens(FINAL + "Hi")
        + [first_emoji_token]
        + tokens("<|end|><|start|>assistant" + FINAL + "Hi there, I am the SECOND message")
        + tokens("<|return|>")
    )
    for size in SPLITS:
        events = run("ours", split(token_ids, size), encoding=encoding)
        assert _texts(events) == ["Hi\ufffd", "Hi there, I am the SECOND message"], size
    _assert_stream_equals_non_streaming(encoding, token_ids, "stop")


# 2. Text lost around incomplete or invalid UTF-8.


def test_2_incomplete_sequence_after_text_in_one_token_is_kept_at_a_length_cut(encoding, tokens):
    flag_first = tokens(" 🇫🇷")[0]  # b' \xf0\x9f\x87': a space, then an incomplete sequence
    token_ids = tokens(FINAL + "Hello") + [flag_first]
    for size in SPLITS:
        events = run("ours", split(token_ids, size), "length", encoding=encoding)
        assert _texts(events) == ["Hello \ufffd"], size
    _assert_stream_equals_non_streaming(encoding, token_ids, "length")


@pytest.mark.parametrize("finish_reason", ["stop", "length"])
@pytest.mark.parametrize("closed", [True, False])
def test_2_character_held_after_an_invalid_sequence_is_sent(
    encoding, tokens, finish_reason, closed
):
    # The parser holds " word" back after the broken sequence until the message ends.
    token_ids = tokens(FINAL + "ab") + [_byte_token(encoding, 0xF0)] + tokens(" word")
    if closed:
        token_ids += tokens("<|end|>")
    for size in SPLITS:
        events = run("ours", split(token_ids, size), finish_reason, encoding=encoding)
        assert _texts(events) == ["ab\ufffd word"], size
        deltas = of_type(events, "output_text.delta")
        assert "".join(d["delta"] for d in deltas) == "ab\ufffd word"
    _assert_stream_equals_non_streaming(encoding, token_ids, finish_reason)


def test_2_settled_remainder_is_coalesced_with_the_last_response(encoding, tokens):
    token_ids = tokens(FINAL + "ab") + [_byte_token(encoding, 0xF0)]
    events = run("ours", [token_ids], "length", encoding=encoding)
    deltas = of_type(events, "output_text.delta")
    assert [d["delta"] for d in deltas] == ["ab\ufffd"]


# 3. Out-of-vocabulary ids end the stream as a parse error, naming the id and its position.


@pytest.mark.parametrize("bad", [201089, 2**31, -1])
def test_3_undecodable_token_id_fails_the_stream_naming_it(encoding, tokens, bad):
    prefix = tokens(FINAL + "Hello")
    token_ids = prefix + [bad] + tokens(" world<|return|>")
    for size in SPLITS:
        events = run("ours", split(token_ids, size), encoding=encoding)
        assert [e["type"] for e in events[-2:]] == ["error", "response.failed"], size
        message = events[-2]["message"]
        assert str(bad) in message and f"position {len(prefix)}" in message, message
        assert _texts(events) == ["Hello"]
        assert events[-1]["response"]["output"][0]["status"] == "incomplete"
    built = _non_streaming(encoding, token_ids, "stop")
    assert built["status"] == "failed" and str(bad) in built["error"]["message"]


# 4. numpy token arrays and numpy scalars give the same results as lists.


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
def test_4_numpy_token_arrays(encoding, tokens, dtype):
    np = pytest.importorskip("numpy")
    token_ids = tokens(
        "<|channel|>analysis<|message|>Think 🤔.<|end|><|start|>assistant" + FINAL + "Hi there."
    )

    def events_for(batches):
        context = new_context(response_id="resp_test", created_at=0.0)
        machine = ResponsesEventMachine(context, encoding=encoding)
        events = machine.start()
        for i, batch in enumerate(batches):
            last = i == len(batches) - 1
            events += machine.feed(batch, finished=last, finish_reason="stop" if last else None)
        return client_visible([event_to_dict(e) for e in events])

    for size in (1, 2, 5, 1000):
        reference = events_for(split(token_ids, size))
        assert reference[-1]["type"] == "response.completed"
        arrays = [np.array(b, dtype=dtype) for b in split(token_ids, size)]
        assert events_for(arrays) == reference, size
        scalars = [[getattr(np, dtype)(t) for t in b] for b in split(token_ids, size)]
        assert events_for(scalars) == reference, size
    context = new_context(response_id="resp_test", created_at=0.0)
    array = np.array(token_ids, dtype=dtype)
    built = event_to_dict(build_response(context, array, "stop", encoding=encoding))
    assert comparable_response(built) == comparable_response(
        _non_streaming(encoding, token_ids, "stop")
    )


# 5. usage.output_tokens after an error counts only the tokens that were parsed.


@pytest.mark.parametrize("bad", [-1, 201089])
def test_5_output_tokens_after_an_error_do_not_depend_on_the_batch_size(encoding, tokens, bad):
    prefix = tokens(FINAL + "Hi")
    token_ids = prefix + [bad] + tokens(" and many more tokens after the bad one")
    counts = set()
    for size in SPLITS:
        events = run("ours", split(token_ids, size), encoding=encoding)
        counts.add(events[-1]["response"]["usage"]["output_tokens"])
    assert counts == {len(prefix) + 1}  # the offending token counts; what follows does not


# 6. Stream and non-streaming agree.


@pytest.mark.parametrize("finish_reason", ["abort", "cancelled", "timeout", None, "tool_calls"])
def test_6_every_finish_reason_gives_the_non_streaming_response(encoding, tokens, finish_reason):
    token_ids = tokens("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant")
    token_ids += tokens(FINAL + "Hello")
    expected = _assert_stream_equals_non_streaming(encoding, token_ids, finish_reason)
    if finish_reason in (None, "tool_calls"):
        assert expected["status"] == "completed"
    else:
        assert expected["status"] == "failed"
        assert [i["status"] for i in expected["output"]] == ["completed", "incomplete"]


@pytest.mark.parametrize("finish_reason", ["abort", "length", "stop"])
def test_6_open_builtin_tool_call_is_kept_by_both(encoding, tokens, finish_reason):
    token_ids = tokens("<|channel|>analysis to=python code<|message|>print(6 * 7)")
    expected = _assert_stream_equals_non_streaming(encoding, token_ids, finish_reason)
    assert [i["type"] for i in expected["output"]] == ["reasoning"]
    assert expected["output"][0]["content"][0]["text"] == "print(6 * 7)"


def test_6_negative_token_id_fails_both_without_raising(encoding, tokens):
    token_ids = tokens(FINAL + "Hi") + [-1]
    expected = _assert_stream_equals_non_streaming(encoding, token_ids, "stop")
    assert expected["status"] == "failed"


# 7. Machine and checker agree on function calls.


def test_7_function_call_without_a_name_fails_the_stream(encoding, tokens):
    token_ids = tokens("<|channel|>commentary to=functions. <|constrain|>json<|message|>{}<|call|>")
    for size in SPLITS:
        events = run("ours", split(token_ids, size), encoding=encoding)
        assert [e["type"] for e in events[-2:]] == ["error", "response.failed"], size
        assert "function name" in events[-2]["message"]
        assert not of_type(events, "output_item.added")
        assert check_responses_events(events).ok
    _assert_stream_equals_non_streaming(encoding, token_ids, "stop")


def test_7_invalid_json_arguments_reach_the_client_verbatim(encoding, tokens):
    arguments = '{"city": "Paris", oops'
    token_ids = tokens(
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        + arguments
        + "<|call|>"
    )
    for size in SPLITS:
        events = run("ours", split(token_ids, size), encoding=encoding)
        assert events[-1]["type"] == "response.completed"
        assert _texts(events) == [arguments]
        check = check_responses_events(events)
        assert check.ok, check.violations
        assert any("arguments-json" in w for w in check.warnings)
    _assert_stream_equals_non_streaming(encoding, token_ids, "stop")


# 8. A stop is never reported as a token limit.


def test_8_stop_with_no_tokens_is_completed(encoding):
    events = run("ours", [[]], "stop", encoding=encoding)
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["output"] == []
    assert events[-1]["response"].get("incomplete_details") is None
    _assert_stream_equals_non_streaming(encoding, [], "stop")


def test_8_stop_inside_a_header_is_completed_with_the_items_so_far(encoding, tokens):
    token_ids = tokens(FINAL + "Hi<|end|><|start|>assistant<|channel|>fin")
    events = run("ours", [token_ids], "stop", encoding=encoding)
    assert events[-1]["type"] == "response.completed"
    assert [i["status"] for i in events[-1]["response"]["output"]] == ["completed"]
    _assert_stream_equals_non_streaming(encoding, token_ids, "stop")
    cut = run("ours", [token_ids], "length", encoding=encoding)
    assert cut[-1]["type"] == "response.incomplete"


# 9. Lifecycle misuse raises; nothing after done.


def test_9_lifecycle_misuse_raises_and_nothing_follows_done(encoding, tokens):
    from trtllm_stream_fix.core.machine import LifecycleError, Stage

    machine = ResponsesEventMachine(new_context(), encoding=encoding)
    assert machine.stage is Stage.NEW
    with pytest.raises(LifecycleError, match="before start"):
        machine.feed(tokens(FINAL + "Hi"))
    with pytest.raises(LifecycleError, match="before start"):
        machine.fail("early")
    assert [e.type for e in machine.start()] == ["response.created", "response.in_progress"]
    assert machine.stage is Stage.STREAMING
    with pytest.raises(LifecycleError, match="starts once"):
        machine.start()
    events = machine.feed(tokens(FINAL + "Hi"), finished=True, finish_reason="stop")
    assert events[-1].type == "response.completed"
    assert machine.stage is Stage.DONE and machine.finished
    assert machine.feed(tokens("more"), finished=True, finish_reason="stop") == []
    assert machine.fail("late") == []
    with pytest.raises(LifecycleError):
        machine.start()


# The core is sans-IO: no file system, environment, clock or random source of its own.

IMPURE = frozenset(
    (
        "os",
        "sys",
        "io",
        "time",
        "datetime",
        "uuid",
        "random",
        "secrets",
        "pathlib",
        "tempfile",
        "shutil",
        "glob",
        "socket",
        "subprocess",
    )
)


def _impure_imports(source: str) -> set[str]:
    """The impure modules ``source`` imports (``<outside core>``: an edge module)."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level > 1:
            names.add("<outside core>")  # ``from ..x import``: an edge module
    return names & (IMPURE | {"<outside core>"})


@pytest.mark.parametrize(
    "line",
    [
        "import time",
        "import uuid",
        "import os.path",
        "from random import randrange",
        "from datetime import datetime",
        "def f():\n    import secrets",
        "from ..defaults import random_id",
    ],
)
def test_purity_check_finds_a_clock_random_or_edge_import(line):
    source = f"from __future__ import annotations\nfrom .config import StreamConfig\n{line}\n"
    assert _impure_imports(source)


def test_core_modules_import_no_file_system_env_clock_or_random():
    from pathlib import Path

    import trtllm_stream_fix.core as core

    found = {}
    for path in sorted(Path(core.__file__).parent.glob("*.py")):
        bad = _impure_imports(path.read_text(encoding="utf-8"))
        if bad:
            found[path.name] = sorted(bad)
    assert found == {}


def test_response_context_takes_its_clock_from_the_edge(encoding):
    """The core has no default clock; ``defaults.new_context`` draws id, time and clock."""
    from trtllm_stream_fix.core.context import ResponseContext
    from trtllm_stream_fix.defaults import system_clock

    with pytest.raises(TypeError, match="clock"):
        ResponseContext(response_id="resp_x", model="m", created_at=0)
    assert not hasattr(ResponseContext, "new")
    ticks = iter([5.0, 7.9])
    context = new_context(clock=lambda: next(ticks))
    assert context.response_id.startswith("resp_") and len(context.response_id) == 37
    assert new_context().response_id != context.response_id
    assert new_context().clock is system_clock
    assert isinstance(context.created_at, int)
    response = build_response(context, [], "stop", encoding=encoding)
    assert response.completed_at == 5
