# SPDX-License-Identifier: Apache-2.0
"""Hostile synthetic generations: what an attacker (or a broken engine) can hand the core.

Each kind targets one way a token sequence can hurt a Harmony-to-Responses converter:

- ``byte_split``: multi-byte text delivered one byte per token (split at every byte
  position), sometimes cut by the token limit inside a character;
- ``invalid_utf8``: lone continuation bytes, lone lead bytes, bytes that never occur in UTF-8,
  also right before a stop token or at the end of the stream;
- ``bad_id``: an id the encoding cannot decode (negative, or outside the vocabulary);
- ``reserved_id``: reserved and unused special ids, in content and in headers;
- ``finish_reason``: every engine finish reason (``stop``, ``length``, ``abort``,
  ``cancelled``, None, ``tool_calls``, unknown);
- ``odd_recipient``: empty and odd recipients (``functions.`` without a name, ``functions``,
  ``functions.a.b``, non-ASCII, unknown tools);
- ``bad_json_args``: function calls whose arguments are not valid JSON;
- ``prefix_cut``: a rich completion cut after a random number of its tokens.

``mixed_outputs`` interleaves them with the ordinary outputs of ``synthetic``.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator

from ..core.harmony_tokens import CALL, END, RETURN
from ..sim.model import (
    _MULTIBYTE,
    SyntheticOutput,
    _compose,
    _corpus,
    _flatten,
    _Message,
    _plain,
    _text,
    generate_output,
    named_output,
)

HOSTILE_KINDS: tuple[str, ...] = (
    "byte_split",
    "invalid_utf8",
    "bad_id",
    "reserved_id",
    "finish_reason",
    "odd_recipient",
    "bad_json_args",
    "prefix_cut",
)
FINISH_REASONS: tuple[str | None, ...] = (
    "stop",
    "length",
    "abort",
    "cancelled",
    None,
    "tool_calls",
    "timeout",
    "no_such_reason",
)
UNDECODABLE_IDS = (201089, 201090, 250000, 2**31 - 1, 2**40, -1, -200006)
RESERVED_IDS = (199998, 200000, 200001, 200004, 200009, 200010, 200011, 200013, 200500, 201088)
INVALID_BYTES = (0x80, 0x9F, 0xBF, 0xC0, 0xC1, 0xC3, 0xE2, 0xF0, 0xF4, 0xF5, 0xFE, 0xFF)
ODD_RECIPIENTS = (
    "functions.",
    "functions",
    "functions.a.b",
    "functions.get_weather",
    "functions.天気",
    "browser.open",
    "browser.find",
    "browser.search",
    "browser",
    "python",
    "container.exec",
    "assistant",
    "日本",
)
BAD_ARGUMENTS = (
    '{"location": "Paris"',
    '{"location": }',
    "{'location': 'Paris'}",
    "not json at all",
    "[1, 2",
    '{"a": 1}}',
    '"unterminated',
    "{\n",
    "NaN",
)
RICH = ("preamble_tool_call", "reasoning_answer", "multibyte_emoji", "browser_search")


def _byte_tokens(text: str) -> list[int]:
    table = _byte_table()
    return [table[b] for b in text.encode("utf-8")]


@functools.cache
def _byte_table() -> dict[int, int]:
    """Byte -> the token that is exactly that byte (o200k has one per byte)."""
    inner = _corpus()._enc._inner
    found: dict[int, int] = {}
    for token in range(1024):
        data = bytes(inner.decode_bytes([token]))
        if len(data) == 1 and data[0] not in found:
            found[data[0]] = token
    return found


def _message(header: str, content: list[int], stop: int, first: bool) -> _Message:
    role = "" if first else "<|start|>assistant"
    return _Message(_corpus().header(role + header), tuple(content), stop)


def _insert(rng: random.Random, tokens: list[int], extra: list[int], at_end: float) -> list[int]:
    at = len(tokens) if rng.random() < at_end else rng.randint(0, len(tokens))
    return tokens[:at] + extra + tokens[at:]


def _byte_split(rng: random.Random) -> tuple[list[int], str | None]:
    c = _corpus()
    text = "".join(rng.sample(_MULTIBYTE, rng.randint(1, 3)))
    content = _text(rng, c, "prose", 1, 8) + _byte_tokens(text) + _text(rng, c, "prose", 0, 4)
    channel = rng.choice(("final", "analysis"))
    if rng.random() < 0.4:  # cut by the token limit inside the byte run
        head = _message(f"<|channel|>{channel}<|message|>", [], END, True).header
        return list(head) + content[: rng.randint(1, len(content))], "length"
    msgs = [_message(f"<|channel|>{channel}<|message|>", content, END, True)]
    msgs.append(_plain(rng, c, "final", False))
    return _flatten(msgs), "stop"


def _invalid_utf8(rng: random.Random) -> tuple[list[int], str | None]:
    c = _corpus()
    table = _byte_table()
    content = _text(rng, c, "prose", 2, 30)
    for _ in range(rng.randint(1, 3)):
        content = _insert(rng, content, [table[rng.choice(INVALID_BYTES)]], at_end=0.3)
    msgs = [_message("<|channel|>analysis<|message|>", content, END, True)]
    final = _text(rng, c, "prose", 1, 10) + [table[rng.choice(INVALID_BYTES)]]
    final += _text(rng, c, "prose", 0, 2)
    msgs.append(_message("<|channel|>final<|message|>", final, RETURN, False))
    tokens = _flatten(msgs)
    if rng.random() < 0.3:
        return tokens[:-1], "length"  # ends on the broken bytes, no stop token
    return tokens, "stop"


def _bad_id(rng: random.Random) -> tuple[list[int], str | None]:
    c = _corpus()
    tokens = _flatten(_compose("reasoning_answer", rng, c))
    return _insert(rng, tokens, [rng.choice(UNDECODABLE_IDS)], at_end=0.1), "stop"


def _reserved_id(rng: random.Random) -> tuple[list[int], str | None]:
    c = _corpus()
    tokens = _flatten(_compose(rng.choice(("reasoning_answer", "tool_call")), rng, c))
    for _ in range(rng.randint(1, 3)):
        tokens = _insert(rng, tokens, [rng.choice(RESERVED_IDS)], at_end=0.1)
    return tokens, "stop"


def _finish_reason(rng: random.Random) -> tuple[list[int], str | None]:
    c = _corpus()
    tokens = _flatten(_compose(rng.choice(("answer", "reasoning_answer", "tool_call")), rng, c))
    cut = rng.randint(1, len(tokens))
    return tokens[:cut] if rng.random() < 0.5 else tokens, rng.choice(FINISH_REASONS)


def _call(recipient: str, arguments: str, first: bool, rng: random.Random) -> _Message:
    c = _corpus()
    if rng.random() < 0.5:
        header = f" to={recipient}<|channel|>commentary <|constrain|>json<|message|>"
    else:
        header = (
            f"<|channel|>{rng.choice(('commentary', 'analysis'))} to={recipient} json<|message|>"
        )
    return _message(header, list(c.encode(arguments)), CALL, first)


def _odd_recipient(rng: random.Random) -> tuple[list[int], str | None]:
    c = _corpus()
    msgs = [_plain(rng, c, "analysis", True)] if rng.random() < 0.6 else []
    arguments = rng.choice(('{"q": "x"}', '{"id": 3, "url": "u"}', '{"pattern": "p"}', "1"))
    msgs.append(_call(rng.choice(ODD_RECIPIENTS), arguments, not msgs, rng))
    return _flatten(msgs), "stop"


def _bad_json_args(rng: random.Random) -> tuple[list[int], str | None]:
    c = _corpus()
    msgs = [_plain(rng, c, "analysis", True)] if rng.random() < 0.6 else []
    recipient = rng.choice(("functions.get_weather", "functions.lookup_user", "browser.search"))
    msgs.append(_call(recipient, rng.choice(BAD_ARGUMENTS), not msgs, rng))
    return _flatten(msgs), rng.choice(("stop", "stop", "length", "tool_calls"))


def _prefix_cut(rng: random.Random) -> tuple[list[int], str | None]:
    tokens = list(named_output(rng.choice(RICH), trimmed=False).generated)
    return tokens[: rng.randint(0, len(tokens))], rng.choice(("length", "stop", None, "abort"))


_BUILDERS = {
    "byte_split": _byte_split,
    "invalid_utf8": _invalid_utf8,
    "bad_id": _bad_id,
    "reserved_id": _reserved_id,
    "finish_reason": _finish_reason,
    "odd_recipient": _odd_recipient,
    "bad_json_args": _bad_json_args,
    "prefix_cut": _prefix_cut,
}


def hostile_output(seed: int, kind: str | None = None) -> SyntheticOutput:
    """One hostile generation, fully determined by ``seed`` (and ``kind``, if given)."""
    rng = random.Random(seed ^ 0x5EED)
    kind = kind or rng.choice(HOSTILE_KINDS)
    tokens, finish_reason = _BUILDERS[kind](rng)
    trimmed = (
        finish_reason == "stop"
        and bool(tokens)
        and tokens[-1] in (RETURN, CALL)
        and rng.random() < 0.75
    )
    return SyntheticOutput(
        name=kind,
        seed=seed,
        generated=tuple(tokens),
        finish_reason=finish_reason,
        stop_token_trimmed=trimmed,
        malformed=kind == "bad_id",
    )


def mixed_outputs(count: int, seed: int = 0) -> Iterator[SyntheticOutput]:
    """``count`` outputs with consecutive seeds: every third one hostile, the rest ordinary."""
    for i in range(count):
        yield hostile_output(seed + i) if i % 3 == 2 else generate_output(seed + i)
