# SPDX-License-Identifier: Apache-2.0
"""The chat machine's fast Harmony parser (the default) against the reference parser.

Same frames and same non-streaming completion at every split, over synthetic, hostile and
fuzz generations and hypothesis token soups (``differential.chat.parser_difference``).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trtllm_stream_fix.core import fast_harmony
from trtllm_stream_fix.core.chat_machine import ChatChunkMachine, ChatContext, ChatOptions
from trtllm_stream_fix.core.fast_harmony import FastHarmonyDriver
from trtllm_stream_fix.core.harmony_driver import ReferenceHarmonyDriver
from trtllm_stream_fix.differential.chat import parser_difference, run_chat_check
from trtllm_stream_fix.differential.hostile import hostile_output
from trtllm_stream_fix.differential.responses import splits_for
from trtllm_stream_fix.plugin.chat import chat_options
from trtllm_stream_fix.sim.model import SyntheticOutput, generate_outputs
from trtllm_stream_fix.testing.fuzz import SPECIALS, fuzz_output

pytestmark = pytest.mark.cpu_only


def _context() -> ChatContext:
    return ChatContext("chatcmpl-x", "gpt-oss-20b", 0)


def assert_same(outputs, encoding) -> None:
    for output in outputs:
        for split in splits_for(output):
            found = parser_difference(output, split, encoding=encoding)
            assert found is None, f"seed {output.seed} ({output.name}) split {split}: {found}"


def test_fast_is_the_default_chat_parser(encoding):
    assert ChatOptions().parser == "fast"
    assert chat_options({}).parser == "fast"
    assert isinstance(ChatChunkMachine(_context(), encoding=encoding)._driver, FastHarmonyDriver)
    machine = ChatChunkMachine(
        _context(), encoding=encoding, options=ChatOptions(parser="reference")
    )
    assert type(machine._driver) is ReferenceHarmonyDriver
    assert chat_options({"TRTLLM_STREAM_FIX_PARSER": "reference"}).parser == "reference"


def test_synthetic_chat_streams_match_the_reference(encoding):
    assert_same(generate_outputs(20, seed=21), encoding)


def test_hostile_chat_streams_match_the_reference(encoding):
    assert_same((hostile_output(seed) for seed in range(30)), encoding)


def test_fuzz_chat_streams_match_the_reference(encoding):
    assert_same((fuzz_output(seed) for seed in range(60)), encoding)


@pytest.mark.slow
def test_chat_streams_match_the_reference_at_scale(encoding):
    assert_same(generate_outputs(200, seed=3000), encoding)
    assert_same((hostile_output(seed) for seed in range(3000, 3400)), encoding)
    assert_same((fuzz_output(seed) for seed in range(3000, 3800)), encoding)


_POOL = [*SPECIALS, 201089, 94, 95, 127, 158, 172, 253, 9048, 40909, 13225, 198, 220, 35644]
_POOL += [17196, 12606, 173781, 316, 28, 44580, 5701, 4108, 200003]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(_POOL), max_size=40),
    st.lists(st.integers(1, 12), min_size=1, max_size=8),
    st.sampled_from(["stop", "length", "tool_calls", None]),
)
def test_chat_token_soups_match_the_reference(encoding, soup, sizes, finish):
    output = SyntheticOutput("soup", 0, tuple(soup), finish, False, False)
    for split in (1, sizes, 10**6):
        assert parser_difference(output, split, encoding=encoding) is None


def test_the_differential_sees_a_fast_parser_that_differs(encoding, monkeypatch):
    real = fast_harmony.FastHarmonyDriver.take_content

    def shouting(self, token):
        delta = real(self, token)
        return delta.upper() if isinstance(delta, str) else delta

    monkeypatch.setattr(fast_harmony.FastHarmonyDriver, "take_content", shouting)
    text = "<|channel|>final<|message|>The river bends north past the old mill."
    tokens = tuple(encoding.encode(text, allowed_special="all"))
    output = SyntheticOutput("final", 0, tokens, "stop", False, False)
    assert parser_difference(output, 1, encoding=encoding) is not None
    _, streams, tallies = run_chat_check([output], impls=("ours",), encoding=encoding)
    assert tallies["ours"].fast_matches_reference < streams
