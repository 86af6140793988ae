# SPDX-License-Identifier: Apache-2.0
"""What the simulated server does to keep its CPU on the streams: same results, less work."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trtllm_stream_fix.encoding import SPECIAL_MARK, PlainTextEncoder, encode_with_specials
from trtllm_stream_fix.sim import engine as engine_module
from trtllm_stream_fix.sim import turns
from trtllm_stream_fix.sim.engine import EngineConfig, SimulatedEngine, turn_key
from trtllm_stream_fix.sim.turns import TurnRequest, plan_turn

pytestmark = pytest.mark.cpu_only

TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}


def test_every_special_token_starts_with_the_mark(encoding):
    assert encoding.special_tokens_set
    assert all(token.startswith(SPECIAL_MARK) for token in encoding.special_tokens_set)


@pytest.mark.parametrize(
    "text",
    [
        "What is the capital of France?",
        "",
        "caf\u00e9 \U0001f600 < | > |> <",
        "<|start|>user<|message|>hi<|end|>",
        "a <|channel|> b <|constrain|>json",
        "<|not a token|> <|",
    ],
)
def test_encode_with_specials_is_encode_with_all_specials(encoding, text):
    assert encode_with_specials(encoding, text) == encoding.encode(text, allowed_special="all")


def test_a_repeated_turn_is_planned_once(monkeypatch):
    calls = []
    real = engine_module.plan_turn

    def counting(request, seed):
        calls.append(seed)
        return real(request, seed)

    monkeypatch.setattr(engine_module, "plan_turn", counting)
    engine = SimulatedEngine(EngineConfig())
    first = engine.select("What is the capital of France? (request 1)", seed=7)
    again = engine.select("Plan a trip (request 2)", seed=7)  # no tools: the text is not read
    assert calls == [7] and again.output is first.output
    engine.select("hi", seed=8)
    engine.select("What is the weather?", seed=7, tools=[TOOL])
    engine.select("Weather in Paris?", seed=7, tools=[TOOL])  # with tools the text matters
    assert calls == [7, 8, 7, 7]


def test_turn_keys_hold_what_the_plan_reads():
    plain = TurnRequest("a")
    assert turn_key(plain, 1) == turn_key(TurnRequest("b"), 1) != turn_key(plain, 2)
    assert turn_key(plain, 1) != turn_key(TurnRequest("a", reasoning_effort="high"), 1)
    assert turn_key(plain, 1) != turn_key(TurnRequest("a", parallel_tool_calls=False), 1)
    items = [{"role": "user", "content": "a"}]
    assert turn_key(TurnRequest(items), 1) != turn_key(TurnRequest([{"role": "user"}]), 1)
    assert turn_key(TurnRequest("a", (TOOL,)), 1) != turn_key(TurnRequest("b", (TOOL,)), 1)


def test_cached_turns_are_bounded(monkeypatch):
    monkeypatch.setattr(engine_module, "TURN_CACHE_SIZE", 3)
    engine = SimulatedEngine(EngineConfig())
    for seed in range(5):
        engine.select("hi", seed=seed)
    assert len(engine._turns) == 3


def _plain(encoding, text):
    return encoding.encode(text, allowed_special=set(), disallowed_special=())


@pytest.mark.parametrize(
    "text",
    [
        "the user asks about this so I should check",
        "Sure, happy to help. rivers shape the valleys.",
        "it 's don't  twice  spaced",
        " leading and trailing ",
        "tab\tinside a\tword and\nnew lines \n here",
        "digits 12345 6789 and 1,000.5 numbers",
        "caf\u00e9 \u00a0nbsp \u3000 ideographic \u2028 separator \U0001f600 emoji",
        '{"city": "Paris", "days": [1, 2, 3]}',
        "<|start|> look-alikes <|end|> stay text",
        "one",
        "",
        "   ",
    ],
)
def test_plain_text_encoder_is_the_encoder(encoding, text):
    plain = PlainTextEncoder(encoding)
    assert plain.encode(text) == _plain(encoding, text)
    assert plain.encode(text) == _plain(encoding, text)  # from the kept words too


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["the", "The", "I'm", "'s", "12", "1234", ".", ",", "é", "日本", "\n"]),
            st.text(max_size=6),
        ),
        max_size=12,
    ),
    st.sampled_from([" ", "  ", "\t", " \n"]),
)
def test_plain_text_encoder_matches_on_any_text(encoding, words, separator):
    plain = PlainTextEncoder(encoding)
    for text in (" ".join(words), separator.join(words)):
        assert plain.encode(text) == _plain(encoding, text)
        assert plain.encode(text) == _plain(encoding, text)


def test_plain_text_encoder_keeps_at_most_max_words(encoding):
    plain = PlainTextEncoder(encoding, max_words=5)
    text = " ".join(f"word{n}" for n in range(20))
    assert plain.encode(text) == _plain(encoding, text)
    assert len(plain._words) == 5


def test_planned_turns_hold_the_encoders_tokens(encoding, monkeypatch):
    """Turns planned with the word cache are the turns planned with the encoder itself."""
    requests = [TurnRequest("hi", reasoning_effort=effort) for effort in (None, "high", "none")]
    requests.append(TurnRequest("weather?", (TOOL,), tool_choice="required"))
    cached = [plan_turn(request, seed) for request in requests for seed in range(40)]

    class WholeText:
        def encode(self, text):
            return _plain(encoding, text)

    monkeypatch.setattr(turns, "_plain_text", WholeText)
    assert [plan_turn(request, seed) for request in requests for seed in range(40)] == cached
