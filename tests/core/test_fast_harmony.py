# SPDX-License-Identifier: Apache-2.0
"""The fast Harmony driver against the reference driver (facts, errors, messages, events)."""

from __future__ import annotations

import json
import random

import numpy as np
import openai_harmony
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_harmony import Role, StreamableParser

from trtllm_stream_fix.core import fast_harmony
from trtllm_stream_fix.core.config import StreamConfig
from trtllm_stream_fix.core.drivers import new_driver
from trtllm_stream_fix.core.fast_harmony import FastHarmonyDriver, parse_header
from trtllm_stream_fix.core.harmony_driver import (
    NOT_CONTENT,
    HarmonyStreamError,
    ReferenceHarmonyDriver,
    TruncatedHeaderError,
)
from trtllm_stream_fix.core.harmony_tokens import CALL, END, MESSAGE
from trtllm_stream_fix.core.machine import ResponsesEventMachine
from trtllm_stream_fix.differential.hostile import hostile_output
from trtllm_stream_fix.differential.parser import (
    driver_difference,
    output_difference,
    splits_for,
)
from trtllm_stream_fix.sim.model import SyntheticOutput, generate_outputs
from trtllm_stream_fix.testing.driver_messages import RecordingDriver
from trtllm_stream_fix.testing.fuzz import SPECIALS, fuzz_output

pytestmark = pytest.mark.cpu_only

HEADERS = [
    "<|channel|>analysis",
    "<|channel|>final",
    "<|channel|>commentary to=functions.get_weather <|constrain|>json",
    "<|channel|>commentary to=functions.get_weather<|constrain|>json",
    " to=functions.get_weather<|channel|>commentary <|constrain|>json",
    "<|channel|>commentary to=browser.search",
    "<|channel|>commentary json",
    "<|channel|>final <|constrain|>json",
    "<|channel|>final to=x json",
    "<|channel|>final extra junk",
    "<|channel|>final<|channel|>analysis",
    "<|channel|>final<|end|>",
    "<|channel|>",
    "",
    "assistant<|channel|>final",
    "<|channel|>final\n",
    "<|channel|>final\t to=x",
    "<|channel|>caf\u00e9",
]
START_HEADERS = [
    "assistant<|channel|>final",
    "assistant to=functions.x<|channel|>commentary json",
    "functions.x to=assistant<|channel|>commentary",
    "user",
    "to=foo",
    "foo",
    "Assistant<|channel|>final",
    "",
    "system  <|channel|>final  ",
]


def _open(driver, tokens):
    try:
        return driver.feed(tokens)
    except HarmonyStreamError as exc:
        return (type(exc).__name__, str(exc), exc.token_index)


@pytest.mark.parametrize("header", HEADERS)
def test_first_message_headers_as_the_reference(encoding, tokens, header):
    batch = tokens(header + "<|message|>Hi")
    assert _open(FastHarmonyDriver(encoding), batch) == _open(
        ReferenceHarmonyDriver(encoding), batch
    )


@pytest.mark.parametrize("header", START_HEADERS)
def test_later_message_headers_as_the_reference(encoding, tokens, header):
    batch = tokens("<|channel|>analysis<|message|>x<|end|><|start|>" + header + "<|message|>y")
    assert _open(FastHarmonyDriver(encoding), batch) == _open(
        ReferenceHarmonyDriver(encoding), batch
    )


def test_own_header_parser_forms():
    assert parse_header("<|channel|>analysis", Role.ASSISTANT) == (
        Role.ASSISTANT,
        None,
        "analysis",
        None,
        None,
    )
    assert parse_header(" to=functions.f<|channel|>commentary <|constrain|>json", Role.ASSISTANT)[
        2:
    ] == ("commentary", "functions.f", "<|constrain|>json")
    assert parse_header("functions.f to=assistant<|channel|>commentary", None) == (
        Role.TOOL,
        "functions.f",
        "commentary",
        "assistant",
        None,
    )
    # Errors and rare forms are the reference's to decide.
    assert parse_header("<|channel|>", Role.ASSISTANT) is None
    assert parse_header("foo", None) is None
    assert parse_header("<|channel|>final\n", Role.ASSISTANT) is None


def test_synthetic_outputs_match_the_reference(encoding):
    for output in generate_outputs(40, seed=11):
        assert output_difference(output, splits_for(output), encoding) is None


def test_fuzz_outputs_match_the_reference(encoding):
    for seed in range(90):
        output = fuzz_output(seed)
        assert output_difference(output, splits_for(output), encoding) is None


def test_hostile_outputs_match_the_reference(encoding):
    for seed in range(40):
        output = hostile_output(seed)
        assert output_difference(output, splits_for(output), encoding) is None


@pytest.mark.slow
def test_hostile_outputs_match_the_reference_at_scale(encoding):
    for seed in range(1000, 1600):
        output = hostile_output(seed)
        assert output_difference(output, splits_for(output), encoding) is None


@pytest.mark.slow
def test_synthetic_outputs_match_the_reference_at_scale(encoding):
    for output in generate_outputs(300, seed=1000):
        assert output_difference(output, splits_for(output), encoding) is None


@pytest.mark.slow
def test_fuzz_outputs_match_the_reference_at_scale(encoding):
    for seed in range(1000, 2200):
        output = fuzz_output(seed)
        assert output_difference(output, splits_for(output), encoding) is None


_POOL = [*SPECIALS, 201089, 94, 95, 127, 158, 172, 253, 9048, 40909, 13225, 198, 220, 35644]
_POOL += [17196, 12606, 173781, 316, 28, 44580, 5701, 4108, 200003]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(_POOL), max_size=40),
    st.lists(st.integers(0, 12), max_size=8),
    st.sampled_from(["stop", "length"]),
)
def test_token_soups_match_the_reference(encoding, soup, sizes, finish):
    output = SyntheticOutput("soup", 0, tuple(soup), finish, False, False)
    assert driver_difference(output, sizes, encoding) is None


def _one_token_at_a_time(driver, soup, take):
    """What ``driver`` reports for each token fed alone: the per-token path, else ``feed``."""
    seen = []
    for token in soup:
        if take:
            delta = driver.take_content(token)
        else:
            delta = driver.content_delta(token) if driver.is_content_token(token) else NOT_CONTENT
        if delta is NOT_CONTENT:
            try:
                delta = ("facts", driver.feed([token]))
            except HarmonyStreamError as exc:
                seen.append(("error", str(exc)))
                break
        seen.append((delta, driver.state, driver.tokens_fed))
    return seen


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([*_POOL, *map(np.int64, _POOL[:6])]), max_size=40))
def test_take_content_is_the_two_call_path(encoding, soup):
    """``take_content`` = ``content_delta`` where ``is_content_token``, on both drivers."""
    for driver in (FastHarmonyDriver, ReferenceHarmonyDriver):
        one = _one_token_at_a_time(driver(encoding), soup, take=True)
        assert one == _one_token_at_a_time(driver(encoding), soup, take=False)


def test_invalid_utf8_left_pending_by_an_error_is_sent_with_the_next_token(encoding):
    # '\xe2' then '\n' is one invalid sequence: U+FFFD, and '\n' waits for the next token.
    output = SyntheticOutput("utf8", 0, (200005, 17196, MESSAGE, 158, 198, 127, CALL), "stop", 0, 0)
    for split in ([5], [6], [4, 2], [5, 1, 1]):
        assert driver_difference(output, split, encoding) is None


def test_numpy_token_arrays(encoding, tokens):
    text = "<|channel|>analysis<|message|>Think 🤖.<|end|><|start|>assistant<|channel|>final"
    batch = tokens(text + "<|message|>Paris.")
    expected = ReferenceHarmonyDriver(encoding).feed(batch)
    for dtype in (np.int32, np.int64, np.uint32):
        assert FastHarmonyDriver(encoding).feed(np.array(batch, dtype=dtype)) == expected
        assert FastHarmonyDriver(encoding).feed([np.int64(t) for t in batch]) == expected
    driver, reference = FastHarmonyDriver(encoding), ReferenceHarmonyDriver(encoding)
    driver.feed(np.array(batch[:-1]))
    reference.feed(batch[:-1])
    assert driver.is_content_token(np.int64(batch[-1]))
    assert driver.content_delta(np.int64(batch[-1])) == reference.content_delta(batch[-1])
    assert not driver.handed_over


def test_fast_path_never_touches_the_reference_parser(encoding, tokens, monkeypatch):
    calls = []

    class Spy(StreamableParser):
        def __init__(self, *args, **kwargs):
            calls.append(args)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr("trtllm_stream_fix.core.harmony_driver.StreamableParser", Spy)
    monkeypatch.setattr(openai_harmony, "StreamableParser", Spy)
    driver = FastHarmonyDriver(encoding)
    recorded = RecordingDriver(driver)
    batch = tokens(
        "<|channel|>analysis<|message|>Think é.<|end|><|start|>assistant<|channel|>commentary"
        ' to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}'
    )
    for i in range(0, len(batch) - 1, 3):
        recorded.feed(batch[i : min(i + 3, len(batch) - 1)])
    recorded.feed(batch[-1:] + [CALL])
    recorded.finish()
    assert calls == [] and not driver.handed_over
    reference = RecordingDriver(ReferenceHarmonyDriver(encoding))
    reference.feed(batch + [CALL])
    assert recorded.messages == reference.messages != []


def test_errors_are_the_reference_errors(encoding, tokens):
    cases = [
        tokens("<|channel|>final<|message|>a<|end|>oops"),
        tokens("<|channel|><|message|>a"),
        [*tokens("<|channel|>final<|message|>a<|end|><|start|>foo"), MESSAGE],
        [*tokens("<|channel|>final<|message|>a<|end|>"), END],
    ]
    for batch in cases:
        fast, reference = FastHarmonyDriver(encoding), ReferenceHarmonyDriver(encoding)
        with pytest.raises(HarmonyStreamError) as want:
            reference.feed(batch)
        with pytest.raises(HarmonyStreamError) as got:
            fast.feed(batch)
        assert (str(got.value), got.value.token_index) == (str(want.value), want.value.token_index)
        assert fast.handed_over


def test_end_inside_a_header_is_the_reference_truncated_header(encoding, tokens):
    batch = tokens("<|channel|>final<|message|>a<|end|><|start|>assis")
    fast, reference = FastHarmonyDriver(encoding), ReferenceHarmonyDriver(encoding)
    fast.feed(batch)
    reference.feed(batch)
    with pytest.raises(TruncatedHeaderError) as want:
        reference.finish()
    with pytest.raises(TruncatedHeaderError) as got:
        fast.finish()
    assert (str(got.value), got.value.token_index) == (str(want.value), want.value.token_index)


def test_long_batches_scan_with_numpy(encoding, tokens, monkeypatch):
    seen = []
    original = fast_harmony.np.flatnonzero
    monkeypatch.setattr(fast_harmony.np, "flatnonzero", lambda a: seen.append(1) or original(a))
    text = "<|channel|>analysis<|message|>" + "word " * 80 + "<|end|><|start|>assistant"
    batch = tokens(text + "<|channel|>final<|message|>" + "done " * 40 + "<|return|>")
    assert FastHarmonyDriver(encoding).feed(batch) == ReferenceHarmonyDriver(encoding).feed(batch)
    assert seen


def test_stream_config_selects_the_parser(encoding):
    from trtllm_stream_fix.defaults import new_context

    context = new_context()
    fast = ResponsesEventMachine(context, config=StreamConfig(parser="fast"), encoding=encoding)
    reference = ResponsesEventMachine(
        context, config=StreamConfig(parser="reference"), encoding=encoding
    )
    assert isinstance(fast._driver, FastHarmonyDriver)
    assert type(reference._driver) is ReferenceHarmonyDriver
    assert StreamConfig.from_env({"TRTLLM_STREAM_FIX_PARSER": "fast"}).parser == "fast"
    with pytest.raises(ValueError, match="TRTLLM_STREAM_FIX_PARSER"):
        StreamConfig.from_env({"TRTLLM_STREAM_FIX_PARSER": "quick"})
    with pytest.raises(ValueError, match="unknown parser"):
        new_driver(encoding, "quick")


def test_random_splits_of_stop_and_return(encoding, tokens):
    batch = tokens("<|channel|>final<|message|>Hello wörld 🤖<|return|>")
    output = SyntheticOutput("x", 0, tuple(batch), "stop", True, False)
    rng = random.Random(5)
    for _ in range(20):
        sizes = [rng.randint(0, 4) for _ in range(8)]
        assert driver_difference(output, sizes, encoding) is None


def test_check_json_reports_fast_matches_reference(capsys):
    from trtllm_stream_fix.cli import main

    assert main(["check", "--json", "--outputs", "4"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ours"]["fast_matches_reference"] == summary["streams"]
    assert "fast_matches_reference" not in summary["upstream"]


def test_messages_include_an_empty_message_closed_by_the_end_of_stream(encoding, tokens):
    batch = tokens("<|channel|>final<|message|>")
    parser = StreamableParser(encoding, Role.ASSISTANT)
    for token in batch:
        parser.process(token)
    parser.process_eos()
    for driver in (ReferenceHarmonyDriver(encoding), FastHarmonyDriver(encoding)):
        recorded = RecordingDriver(driver)
        recorded.feed(batch)
        recorded.finish()
        assert recorded.messages == parser.messages != []


def test_fast_is_the_default_parser(encoding):
    from trtllm_stream_fix.defaults import new_context

    assert StreamConfig().parser == "fast"
    machine = ResponsesEventMachine(new_context(), encoding=encoding)
    assert isinstance(machine._driver, FastHarmonyDriver)
