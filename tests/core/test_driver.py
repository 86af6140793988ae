# SPDX-License-Identifier: Apache-2.0
"""The per-token Harmony driver."""

from __future__ import annotations

import openai_harmony
import pytest
from openai_harmony import Role, StreamableParser

from trtllm_stream_fix.core.harmony_driver import (
    ContentDelta,
    HarmonyStreamError,
    MessageClosed,
    MessageOpened,
    ReferenceHarmonyDriver,
    TruncatedHeaderError,
    message_text,
)
from trtllm_stream_fix.core.harmony_tokens import STOP_TOKENS
from trtllm_stream_fix.sim.model import generate_outputs
from trtllm_stream_fix.testing.driver_messages import RecordingDriver

pytestmark = pytest.mark.cpu_only

TEXT = (
    "<|channel|>analysis<|message|>Think 🤖.<|end|><|start|>assistant<|channel|>commentary"
    ' to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>'
)


def batches(tokens, size):
    return [tokens[i : i + size] for i in range(0, len(tokens), size)]


@pytest.mark.parametrize("size", [1, 2, 5])
def test_facts_describe_the_parser_messages_after_every_batch(encoding, size):
    for output in generate_outputs(60, seed=3):
        if output.malformed:
            continue
        driver = RecordingDriver(ReferenceHarmonyDriver(encoding))
        reference = StreamableParser(encoding, Role.ASSISTANT)
        for batch in batches(list(output.delivered), size):
            driver.feed(batch)
            for token in batch:
                reference.process(token)
            assert driver.messages == reference.messages


def test_facts_describe_messages(encoding, tokens):
    facts = ReferenceHarmonyDriver(encoding).feed(tokens(TEXT))
    kinds = [type(f) for f in facts]
    assert kinds == [
        MessageOpened,
        ContentDelta,
        MessageClosed,
        MessageOpened,
        ContentDelta,
        MessageClosed,
    ]
    assert facts[0].channel == "analysis" and facts[0].recipient is None
    assert facts[1].text == "Think 🤖."
    assert facts[3].recipient == "functions.get_weather"
    assert facts[3].content_type == "<|constrain|>json"
    assert facts[5].stop_token == 200012
    assert facts[4].text == '{"city":"Paris"}'


def test_hot_path_never_reads_state_or_messages_per_token(encoding, tokens, monkeypatch):
    reads = {"state": 0, "messages": 0}
    for name in reads:
        original = getattr(StreamableParser, name)

        def spy(self, _name=name, _original=original):
            reads[_name] += 1
            return _original.fget(self)

        monkeypatch.setattr(StreamableParser, name, property(spy))
    token_ids = tokens(TEXT)
    driver = ReferenceHarmonyDriver(encoding)
    for token in token_ids:
        driver.feed([token])
    assert reads["state"] == 0
    # Read once per stop token (to settle the message's text), never per content token; never
    # where the driver decodes content text itself (openai-harmony 0.0.4).
    stops = sum(token in STOP_TOKENS for token in token_ids)
    assert stops == 2 and reads["messages"] == (stops if driver._decoder is None else 0)


def test_finish_closes_message_without_stop_token(encoding, tokens):
    driver = RecordingDriver(ReferenceHarmonyDriver(encoding))
    driver.feed(tokens("<|channel|>final<|message|>Partial answ"))
    facts = driver.finish()
    assert isinstance(facts[-1], MessageClosed)
    assert facts[-1].stop_token is None
    assert driver.messages[-1].content[0].text == "Partial answ"


def test_finish_inside_header_raises_truncated_header(encoding, tokens):
    driver = RecordingDriver(ReferenceHarmonyDriver(encoding))
    driver.feed(tokens("<|channel|>final<|message|>Hi<|end|><|start|>assistant<|channel|>fin"))
    with pytest.raises(TruncatedHeaderError):
        driver.finish()
    assert len(driver.messages) == 1


def test_parse_error_reports_position_and_keeps_earlier_facts(encoding, tokens):
    token_ids = tokens("<|channel|>final<|message|>Hi<|return|>junk")
    driver = ReferenceHarmonyDriver(encoding)
    facts: list = []
    with pytest.raises(HarmonyStreamError) as info:
        driver.feed(token_ids, facts)
    assert info.value.token_index == len(token_ids) - 1
    assert isinstance(info.value.__cause__, openai_harmony.HarmonyError)
    assert isinstance(facts[-1], MessageClosed)


def test_multibyte_character_split_across_batches(encoding, tokens):
    token_ids = tokens("<|channel|>final<|message|>👨‍👩‍👧‍👦 ok<|return|>")
    for size in (1, 2, 3):
        driver = ReferenceHarmonyDriver(encoding)
        text = ""
        for batch in batches(token_ids, size):
            text += "".join(f.text for f in driver.feed(batch) if isinstance(f, ContentDelta))
        assert text == "👨‍👩‍👧‍👦 ok"


def test_public_parser_api_fallback_gives_the_same_facts(encoding, tokens):
    token_ids = tokens(TEXT)
    direct = ReferenceHarmonyDriver(encoding)
    assert direct._inner is not direct._parser  # the Rust parser is reachable here
    fallback = ReferenceHarmonyDriver(encoding)
    fallback._inner = fallback._parser  # what an openai-harmony without ``_inner`` gets
    for size in (1, 3, 20):
        a = [f for batch in batches(token_ids, size) for f in direct.feed(batch)]
        b = [f for batch in batches(token_ids, size) for f in fallback.feed(batch)]
        assert a == b
        direct, fallback = ReferenceHarmonyDriver(encoding), ReferenceHarmonyDriver(encoding)
        fallback._inner = fallback._parser


class _WrongEncoding:
    """An encoding whose <|message|> id is something else (not o200k_harmony)."""

    name = "not-harmony"

    def __init__(self, real):
        self._real = real

    def decode_utf8(self, tokens):
        return "<|oops|>" if tokens == [200008] else self._real.decode_utf8(tokens)

    def stop_tokens(self):
        return self._real.stop_tokens()


def test_hard_coded_token_ids_are_checked_against_the_encoding(encoding):
    from trtllm_stream_fix.core.harmony_tokens import EncodingMismatchError, vocab_size

    assert vocab_size(encoding) == 201089  # o200k_harmony decodes ids 0..201088
    with pytest.raises(EncodingMismatchError, match="200008"):
        vocab_size(_WrongEncoding(encoding))


def test_strict_is_passed_explicitly_where_the_parser_takes_it(encoding, monkeypatch):
    from trtllm_stream_fix.core import harmony_driver

    calls = []

    class Recorder:
        def __init__(self, *args, **kwargs):
            calls.append(kwargs)

    monkeypatch.setattr(harmony_driver, "StreamableParser", Recorder)
    monkeypatch.setattr(harmony_driver, "PARSER_ACCEPTS_STRICT", True)
    harmony_driver.new_parser(encoding, Role.ASSISTANT, True)
    assert calls == [{"strict": True}]
    monkeypatch.setattr(harmony_driver, "PARSER_ACCEPTS_STRICT", False)  # openai-harmony 0.0.4
    harmony_driver.new_parser(encoding, Role.ASSISTANT, True)
    assert calls[-1] == {}
    with pytest.raises(ValueError, match="non-strict"):
        harmony_driver.new_parser(encoding, Role.ASSISTANT, False)


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_deltas_of_each_message_join_to_the_parser_text(encoding, size):
    """The fact contract: a message's ContentDelta facts join to exactly its parsed text."""
    from trtllm_stream_fix.core.compat import harmony_keeps_text_after_invalid_utf8

    if not harmony_keeps_text_after_invalid_utf8(encoding):
        pytest.skip("this openai-harmony's parser drops text after invalid UTF-8")
    byte = {bytes(encoding._inner.decode_bytes([t])): t for t in range(256)}
    head = encoding.encode("<|channel|>final<|message|>ab", allowed_special="all")
    word = encoding.encode(" word", allowed_special="all")
    broken = [
        head + [byte[bytes([b])]] + word + end
        for b in (0x80, 0xC3, 0xE2, 0xF0, 0xFF)
        for end in ([], [200007])
    ]
    cases = [list(o.delivered) for o in generate_outputs(60, seed=5)] + broken
    for token_ids in cases:
        driver = ReferenceHarmonyDriver(encoding)
        facts: list = []
        try:
            for batch in batches(token_ids, size):
                driver.feed(batch, facts)
            driver.finish(facts)
        except HarmonyStreamError:
            continue
        texts, current = [], None
        for fact in facts:
            if isinstance(fact, MessageOpened):
                current = ""
            elif isinstance(fact, ContentDelta):
                current += fact.text
            else:
                texts.append(current)
        parser = StreamableParser(encoding, Role.ASSISTANT)
        for token in token_ids:
            parser.process(token)
        parser.process_eos()
        assert texts == [message_text(m) for m in parser.messages], token_ids


def _lone_byte_token(encoding, value):
    return next(t for t in range(256) if bytes(encoding._inner.decode_bytes([t])) == value)


@pytest.mark.parametrize("size", [1, 2, 3, 1000])
def test_text_after_invalid_utf8_is_kept_at_every_batch_size(encoding, tokens, size):
    """openai-harmony 0.0.4's parser drops a message's text after invalid UTF-8: not ours."""
    token_ids = [
        *tokens("<|channel|>final<|message|>ab"),
        _lone_byte_token(encoding, b"\x80"),
        *tokens(" word<|end|><|start|>assistant<|channel|>final<|message|>next"),
        _lone_byte_token(encoding, b"\xe2"),
    ]
    driver = RecordingDriver(ReferenceHarmonyDriver(encoding))
    facts: list = []
    for batch in batches(token_ids, size):
        driver.feed(batch, facts)
    driver.finish(facts)
    assert (
        "".join(f.text for f in facts if isinstance(f, ContentDelta)) == "ab\ufffd wordnext\ufffd"
    )
    assert [message_text(m) for m in driver.messages] == ["ab\ufffd word", "next\ufffd"]


def _decoding_driver(encoding):
    """A driver that decodes content text itself, as on openai-harmony 0.0.4."""
    from trtllm_stream_fix.core.harmony_utf8 import ContentDecoder, token_bytes

    driver = ReferenceHarmonyDriver(encoding)
    driver._decoder = ContentDecoder(token_bytes(encoding))
    return driver


def test_without_the_parsers_text_the_driver_decodes_it_alike(encoding, tokens):
    """The decoder used where openai-harmony loses text gives openai-harmony 0.0.8's facts."""
    from trtllm_stream_fix.core.compat import harmony_keeps_text_after_invalid_utf8

    if not harmony_keeps_text_after_invalid_utf8(encoding):
        pytest.skip("this openai-harmony's parser drops text after invalid UTF-8")
    head, word = tokens("<|channel|>final<|message|>ab"), tokens(" word")
    broken = [
        [*head, _lone_byte_token(encoding, bytes([b])), *word, *end]
        for b in (0x80, 0xC3, 0xE2, 0xF0, 0xFF)
        for end in ([], [200007], tokens("<|end|><|start|>assistant<|message|><|end|>"))
    ]
    cases = broken + [list(o.delivered) for o in generate_outputs(80, seed=11) if not o.malformed]
    for token_ids in cases:
        for size in (1, 3):
            expected = _trace(ReferenceHarmonyDriver(encoding), batches(token_ids, size))
            assert _trace(_decoding_driver(encoding), batches(token_ids, size)) == expected


def _trace(driver, responses):
    """Facts after each response, then the end of stream (or the error)."""
    trace = []
    try:
        for batch in responses:
            trace.append(driver.feed(batch))
        trace.append(driver.finish())
    except HarmonyStreamError as exc:
        trace.append((type(exc), str(exc), exc.token_index))
    return trace


@pytest.mark.parametrize("build", [ReferenceHarmonyDriver, _decoding_driver])
def test_per_token_deltas_after_invalid_utf8(encoding, tokens, build):
    """The one-token path: an invalid sequence is U+FFFD, then what follows it waits a token."""
    token_ids = [*tokens("<|channel|>final<|message|>ab"), _lone_byte_token(encoding, b"\xf0")]
    token_ids += tokens(" word more")
    driver = RecordingDriver(build(encoding))
    driver.feed(token_ids[:3])
    assert all(driver.is_content_token(t) for t in token_ids[3:])
    deltas = [driver.content_delta(t) for t in token_ids[3:]]
    assert deltas == ["ab", None, "\ufffd", " word more"]
    assert isinstance(driver.finish()[-1], MessageClosed)
    assert message_text(driver.messages[-1]) == "ab\ufffd word more"
