# SPDX-License-Identifier: Apache-2.0
"""Synthetic gpt-oss generations: determinism, Harmony validity, coverage, engine replay."""

from __future__ import annotations

import random
import time

import pytest
from openai_harmony import HarmonyError, Role, StreamableParser

from trtllm_stream_fix.encoding import load_gpt_oss_encoding
from trtllm_stream_fix.sim.model import (
    CALL,
    END,
    NAMED_SCENARIOS,
    RETURN,
    SCENARIO_KINDS,
    STRAY_SPECIALS,
    engine_responses,
    generate_output,
    generate_outputs,
    named_output,
)

COUNT = 1000


@pytest.fixture(scope="module")
def enc():
    return load_gpt_oss_encoding()


@pytest.fixture(scope="module")
def outputs():
    generate_output(0)  # warm the corpus cache outside the measurement
    start = time.perf_counter()
    outs = list(generate_outputs(COUNT))
    elapsed = time.perf_counter() - start
    print(f"\n{COUNT} synthetic outputs generated in {elapsed:.2f} s")
    assert elapsed < 20, f"generating {COUNT} outputs took {elapsed:.1f} s"
    return outs


@pytest.fixture(scope="module")
def parsed(outputs, enc):
    """Parsed messages of every output that parses (malformed and header cuts excluded)."""
    result = {}
    for out in outputs:
        if not out.malformed and out.name != "header_cut":
            result[out.seed] = enc.parse_messages_from_completion_tokens(
                list(out.generated), role=Role.ASSISTANT
            )
    return result


def test_same_seed_same_output():
    for seed in (0, 1, 17, 123456):
        assert generate_output(seed) == generate_output(seed)
    assert list(generate_outputs(5, seed=40)) == [generate_output(40 + i) for i in range(5)]
    distinct = {generate_output(seed).generated for seed in range(50)}
    assert len(distinct) >= 45


def test_every_kind_appears(outputs):
    assert {out.name for out in outputs} == set(SCENARIO_KINDS)


def test_valid_outputs_parse(outputs, parsed):
    for out in outputs:
        if out.malformed or out.name == "header_cut":
            continue
        assert parsed[out.seed], out
        for message in parsed[out.seed]:
            assert message.author.role == Role.ASSISTANT


def test_malformed_outputs_are_rejected(outputs, enc):
    malformed = [out for out in outputs if out.malformed]
    assert malformed
    for out in malformed:
        assert out.finish_reason == "stop"
        with pytest.raises(HarmonyError):
            enc.parse_messages_from_completion_tokens(list(out.generated), role=Role.ASSISTANT)


def test_header_cut_fails_only_at_end_of_stream(outputs, enc):
    cuts = [out for out in outputs if out.name == "header_cut"]
    assert cuts
    for out in cuts:
        assert out.finish_reason == "length" and not out.stop_token_trimmed
        parser = StreamableParser(enc, Role.ASSISTANT)
        for token in out.generated:
            parser.process(token)  # every token is accepted ...
        with pytest.raises(HarmonyError, match="EOS"):
            parser.process_eos()  # ... but the header never completes


def test_message_endings(outputs, parsed):
    """Intermediate messages end with <|end|>; the last with <|return|> (final) or <|call|>."""
    for out in outputs:
        if out.seed not in parsed or out.finish_reason != "stop":
            continue
        tokens = out.generated
        last = parsed[out.seed][-1]
        assert tokens[-1] == (CALL if last.recipient else RETURN), out
        assert sum(t in (RETURN, CALL) for t in tokens) == 1
        assert tokens.count(END) == len(parsed[out.seed]) - 1


def test_feature_coverage(outputs, parsed, enc):
    seen = set()
    for out in outputs:
        seen.add(("trimmed", out.stop_token_trimmed))
        if any(t in STRAY_SPECIALS for t in out.generated) and out.name == "stray_special":
            seen.add("stray special")
        if any(_splits_utf8(enc, t) for t in out.generated):
            seen.add("split utf-8")
        messages = parsed.get(out.seed, [])
        for m in messages:
            text = "".join(part.text for part in m.content)
            if m.recipient and m.recipient.startswith("functions."):
                seen.add(("function call", m.channel, m.content_type))
            elif m.recipient:
                seen.add(("builtin", m.recipient))
            elif m.channel == "commentary":
                seen.add("preamble")
            elif m.channel == "final" and text == "":
                seen.add("empty final")
            elif m.channel == "final" and ("<|start|>" in text or "<|channel|>" in text):
                seen.add("special text in content")
        if out.finish_reason == "length" and out.name == "length_cut" and messages:
            seen.add(("length cut in", messages[-1].channel, bool(messages[-1].recipient)))
        decoded = enc.decode(list(out.generated[:12]))
        if decoded.startswith(" to=functions."):
            seen.add("recipient in role position of the first message")
        if "<|start|>assistant to=functions." in enc.decode(list(out.generated)):
            seen.add("recipient in role position")
        if "<|channel|>commentary to=functions." in enc.decode(list(out.generated)):
            seen.add("recipient in channel header")
    expected = {
        ("trimmed", True),
        ("trimmed", False),
        "stray special",
        "split utf-8",
        "preamble",
        "empty final",
        "special text in content",
        ("builtin", "browser.search"),
        ("builtin", "python"),
        "recipient in role position",
        "recipient in role position of the first message",
        "recipient in channel header",
        ("length cut in", "analysis", False),
        ("length cut in", "final", False),
        ("length cut in", "commentary", False),
        ("length cut in", "commentary", True),
        ("length cut in", "analysis", True),
    }
    for channel in ("analysis", "commentary"):
        for ctype in ("<|constrain|>json", "json", None):
            expected.add(("function call", channel, ctype))
    assert expected - seen == set()


def _splits_utf8(enc, token: int) -> bool:
    if enc.is_special_token(token):
        return False
    try:
        bytes(enc._inner.decode_bytes([token])).decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _splits():
    yield 1
    yield 2
    yield 3
    yield 7
    yield 20
    yield 25
    yield [5, 0, 0, 3, 1]
    yield [0, 40]
    yield random.Random(7)


@pytest.mark.parametrize("seed", range(0, 400, 3))
def test_engine_responses_concatenate_to_delivered(seed):
    out = generate_output(seed)
    for split in _splits():
        responses = engine_responses(out, split)
        joined = tuple(t for r in responses for t in r.token_ids_diff)
        assert joined == out.delivered
        assert [r.finished for r in responses] == [False] * (len(responses) - 1) + [True]
        assert responses[-1].finish_reason == out.finish_reason
        assert all(r.finish_reason is None for r in responses[:-1])
        if isinstance(split, int):
            sizes = [len(r.token_ids_diff) for r in responses]
            untrimmed = sizes[:-1] + [sizes[-1] + out.stop_token_trimmed]
            assert all(s == split for s in untrimmed[:-1]) and 1 <= untrimmed[-1] <= split


def test_trimmed_stop_with_one_token_per_response():
    out = named_output("short_answer")
    assert out.stop_token_trimmed and out.generated[-1] == RETURN
    responses = engine_responses(out, 1)
    assert len(responses) == len(out.generated)
    assert responses[-1].token_ids_diff == () and responses[-1].finished
    assert all(len(r.token_ids_diff) == 1 for r in responses[:-1])
    kept = engine_responses(named_output("short_answer", trimmed=False), 1)
    assert kept[-1].token_ids_diff == (RETURN,)


def test_explicit_sizes_allow_empty_responses_and_leftover():
    out = named_output("reasoning_answer", trimmed=False)
    responses = engine_responses(out, [3, 0, 2])
    assert [len(r.token_ids_diff) for r in responses] == [3, 0, 2, len(out.generated) - 5]


def test_random_split_sizes_are_bounded():
    out = generate_output(3)
    sizes = [len(r.token_ids_diff) for r in engine_responses(out, random.Random(1))]
    assert all(1 <= s <= 25 for s in sizes[:-1])


@pytest.mark.parametrize("name", NAMED_SCENARIOS)
def test_named_outputs(name, enc):
    out = named_output(name)
    assert out.name == name
    if out.malformed:
        with pytest.raises(HarmonyError):
            enc.parse_messages_from_completion_tokens(list(out.generated), role=Role.ASSISTANT)
    elif name != "header_cut":
        assert enc.parse_messages_from_completion_tokens(list(out.generated), role=Role.ASSISTANT)
    if out.finish_reason == "length":
        assert not out.stop_token_trimmed and out.generated[-1] not in (RETURN, CALL, END)
    else:
        assert out.stop_token_trimmed and out.generated[-1] in (RETURN, CALL)
        assert not named_output(name, trimmed=False).stop_token_trimmed


def test_named_output_matches_recorded_upstream_split():
    """The fixture tokenizes like the recorded upstream run: 20-token responses [20, 20, 4]."""
    sizes = [len(r.token_ids_diff) for r in engine_responses(named_output("reasoning_answer"), 20)]
    assert sizes == [20, 20, 4]


def test_unknown_named_output():
    with pytest.raises(ValueError, match="unknown scenario"):
        named_output("nope")
