# SPDX-License-Identifier: Apache-2.0
"""Seeded token sequences that stress a Harmony parser where the synthetic generator does not.

``fuzz_output(seed)`` is a ``SyntheticOutput`` (so it streams like any other) of one of:

- ``soup``: random tokens drawn from Harmony specials (every one, reserved ones included),
  header words, whitespace, single bytes, split multi-byte characters and ids outside the
  vocabulary;
- ``headers``: well-formed messages whose headers take every form the grammar allows (role,
  recipient before or after the channel, recipient in role position, content types with and
  without ``<|constrain|>``, tool authors, odd spacing and case) with content holding
  invalid and split UTF-8 and stray specials;
- ``mutated``: such a generation with tokens deleted, duplicated, swapped or replaced, which
  the parser often rejects.
"""

from __future__ import annotations

import functools
import random

from ..core.harmony_tokens import CALL, CHANNEL, CONSTRAIN, END, ENDOFTEXT, MESSAGE, RETURN, START
from ..encoding import load_gpt_oss_encoding
from ..sim.model import SyntheticOutput

KINDS = ("soup", "headers", "mutated")
SPECIALS = (
    START,
    CHANNEL,
    MESSAGE,
    END,
    RETURN,
    CALL,
    CONSTRAIN,
    ENDOFTEXT,
    199998,
    200000,
    200001,
)
OUT_OF_VOCABULARY = (201089, 201100, 250000, 2**31 - 1)
_ROLE_WORDS = ("assistant", "user", "system", "developer", "tool", "Assistant", "functions.f")
_HEADER_WORDS = (
    "to=functions.get_weather",
    "to=browser.search",
    "to=",
    "functions.lookup",
    "json",
    "<|constrain|>json",
    "<|constrain|>",
    "code",
    "analysis",
    "final",
    "commentary",
    "extra",
)
_CHANNELS = ("analysis", "final", "commentary", "commentary.x", "", "final<x")
_SPACES = (" ", "  ", "\t", "\n", "\u00a0", "\x0b", "\x1c")
_TEXTS = (
    "Hello",
    " world",
    "café",
    " naïve",
    "日本語",
    "🤖",
    "👩‍👩‍👧",
    '{"city": "Paris"}',
    " <|end|>",
    "\n\n",
    "ok.",
)


class _Pieces:
    """Pre-encoded pieces (one encoding per process)."""

    def __init__(self) -> None:
        enc = load_gpt_oss_encoding()
        self.encode = lambda text: enc.encode(text, allowed_special="all")
        self.texts = [self.encode(t) for t in _TEXTS]
        self.words = [self.encode(w) for w in (*_ROLE_WORDS, *_HEADER_WORDS, *_CHANNELS)]
        self.spaces = [self.encode(s) for s in _SPACES]
        # Single bytes, incl. the lone continuation and lead bytes of multi-byte characters.
        self.bytes = [t for t in range(256)]
        self.split_chars = [self._bytewise(c) for c in ("é", "日", "🤖", "€")]
        self.vocab = 201089

    def _bytewise(self, char: str) -> list[int]:
        # The token of each single byte is the byte's own token in o200k (ids 0-255 hold the
        # 256 bytes, permuted): find them by their bytes.
        return [self.byte_token(b) for b in char.encode()]

    @functools.cached_property
    def _byte_ids(self) -> dict[int, int]:
        from ..core.harmony_utf8 import token_bytes

        table = token_bytes(load_gpt_oss_encoding())
        return {table[i][0]: i for i in range(len(table)) if len(table[i]) == 1}

    def byte_token(self, value: int) -> int:
        return self._byte_ids[value]


@functools.lru_cache(maxsize=1)
def _pieces() -> _Pieces:
    return _Pieces()


def _content(rng: random.Random, p: _Pieces) -> list[int]:
    out: list[int] = []
    for _ in range(rng.randint(0, 12)):
        r = rng.random()
        if r < 0.5:
            out += rng.choice(p.texts)
        elif r < 0.65:
            out += rng.choice(p.split_chars)[: rng.randint(1, 4)]  # maybe cut short
        elif r < 0.8:
            out.append(p.byte_token(rng.randrange(128, 256)))
        elif r < 0.9:
            out.append(rng.choice((START, CHANNEL, MESSAGE, CONSTRAIN, ENDOFTEXT, 200000)))
        elif r < 0.995:
            out += rng.choice(p.spaces)
        else:
            out.append(rng.choice(OUT_OF_VOCABULARY))
    return out


def _header(rng: random.Random, p: _Pieces, first: bool) -> list[int]:
    """A header in one of the grammar's forms (sometimes an odd one)."""
    enc = p.encode
    sp = (lambda: " ") if rng.random() < 0.9 else (lambda: rng.choice(_SPACES))
    role = "" if first and rng.random() < 0.8 else rng.choice(_ROLE_WORDS)
    if role and rng.random() < 0.6:
        role = "assistant"
    recipient = rng.choice(("", "", "to=functions.get_weather", "to=browser.search", "to=x"))
    channel = rng.choice(_CHANNELS[:4]) if rng.random() < 0.9 else rng.choice(_CHANNELS)
    ctype = rng.choice(("", "", "json", "<|constrain|>json", "<|constrain|>", "code"))
    glue = rng.choice(("", " ")) if ctype.startswith("<|constrain|>") else sp()
    before = rng.random() < 0.3
    text = role
    if recipient and (before or not channel):
        text += sp() + recipient if text else recipient
    if channel or rng.random() < 0.1:
        text += f"<|channel|>{channel}"
    if recipient and not before and channel:
        text += sp() + recipient
    if ctype:
        text += glue + ctype
    if rng.random() < 0.05:
        text += sp() + rng.choice(_HEADER_WORDS)
    tokens = enc(text)
    if not first or role:
        tokens = [START, *tokens] if not first else tokens
    return [*tokens, MESSAGE]


def _headers(rng: random.Random, p: _Pieces) -> list[int]:
    out: list[int] = []
    for i in range(rng.randint(1, 4)):
        out += _header(rng, p, first=i == 0)
        out += _content(rng, p)
        out.append(rng.choice((END, END, RETURN, CALL)))
    if rng.random() < 0.3:
        out = out[: rng.randint(0, len(out))]  # cut anywhere
    return out


def _soup(rng: random.Random, p: _Pieces) -> list[int]:
    out: list[int] = []
    for _ in range(rng.randint(0, 40)):
        r = rng.random()
        if r < 0.3:
            out.append(rng.choice(SPECIALS))
        elif r < 0.5:
            out += rng.choice(p.words)
        elif r < 0.7:
            out += rng.choice(p.texts)
        elif r < 0.8:
            out += rng.choice(p.spaces)
        elif r < 0.95:
            out.append(p.byte_token(rng.randrange(256)))
        else:
            out.append(rng.choice(OUT_OF_VOCABULARY))
    return out


def _mutated(rng: random.Random, p: _Pieces) -> list[int]:
    out = _headers(rng, p)
    for _ in range(rng.randint(1, 3)):
        if not out:
            break
        i = rng.randrange(len(out))
        op = rng.randrange(4)
        if op == 0:
            del out[i]
        elif op == 1:
            out.insert(i, out[i])
        elif op == 2:
            j = rng.randrange(len(out))
            out[i], out[j] = out[j], out[i]
        else:
            out[i] = rng.choice((*SPECIALS, *p.bytes[:8]))
    return out


def fuzz_output(seed: int) -> SyntheticOutput:
    """One fuzz generation, fully determined by ``seed`` (see the module docstring)."""
    rng = random.Random(seed)
    p = _pieces()
    kind = KINDS[seed % len(KINDS)]
    tokens = {"soup": _soup, "headers": _headers, "mutated": _mutated}[kind](rng, p)
    finish = rng.choice(("stop", "stop", "length"))
    trimmed = finish == "stop" and bool(tokens) and tokens[-1] in (RETURN, CALL)
    return SyntheticOutput(
        name=f"fuzz-{kind}",
        seed=seed,
        generated=tuple(tokens),
        finish_reason=finish,
        stop_token_trimmed=trimmed and rng.random() < 0.75,
        malformed=False,  # unknown: the parser decides
    )
