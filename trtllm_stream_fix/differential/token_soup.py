# SPDX-License-Identifier: Apache-2.0
"""Fuzz outputs: hostile token sequences from outside the synthetic generator's grammar.

Each seed gives one ``SyntheticOutput`` (name ``fuzz:<strategy>``) built by one of:

- ``mutate``: a synthetic output with tokens inserted, deleted or replaced (special tokens,
  ordinary tokens, the bytes of a multi-byte character split apart);
- ``headers``: messages with odd headers: recipient in role or channel position, empty
  function names, ``<|constrain|>json`` or not, unknown channels, missing channels;
- ``soup``: special and ordinary tokens in random order, usually behind a valid header;
- ``cut``: a synthetic output cut at a random prefix.

Finish reasons are drawn from ``stop`` and ``length`` (and, rarely, ``abort``); a trailing
``<|return|>``/``<|call|>`` is trimmed at random, as TensorRT-LLM does.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from ..core.harmony_tokens import CALL, CHANNEL, CONSTRAIN, END, ENDOFTEXT, MESSAGE, RETURN, START
from ..sim.model import SyntheticOutput, _corpus, generate_output

SPECIALS = (START, CHANNEL, MESSAGE, CONSTRAIN, END, RETURN, CALL, ENDOFTEXT)
STRATEGIES = ("mutate", "headers", "soup", "cut")
_HEADERS = (
    "<|channel|>final<|message|>",
    "<|channel|>analysis<|message|>",
    "<|channel|>commentary<|message|>",
    "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
    "<|channel|>analysis to=functions.lookup_user<|message|>",
    " to=functions.search_docs<|channel|>commentary json<|message|>",
    " to=functions.<|channel|>commentary<|message|>",
    "<|channel|>commentary to=functions. <|constrain|>json<|message|>",
    " to=python<|channel|>analysis code<|message|>",
    "<|channel|>analysis to=browser.open code<|message|>",
    "<|channel|>weird<|message|>",
    "<|message|>",
    " to=assistant<|channel|>commentary<|message|>",
)
_TEXT = (
    "Hello",
    " world",
    ' {"city": "Paris"}',
    " 🇫🇷",
    " 日本語",
    " naïve",
    "\n\n",
    " <tag>",
    " |",
)


def _ordinary(rng: random.Random) -> list[int]:
    tokens = list(_corpus().encode(rng.choice(_TEXT)))
    if len(tokens) > 1 and rng.random() < 0.3:
        tokens = tokens[: rng.randrange(1, len(tokens))]  # leave a UTF-8 sequence unfinished
    return tokens


def _message(rng: random.Random, first: bool) -> list[int]:
    head = ("" if first else "<|start|>assistant") + rng.choice(_HEADERS)
    body: list[int] = []
    for _ in range(rng.randint(0, 6)):
        body += _ordinary(rng)
    return [*_corpus().encode(head), *body, rng.choice((END, END, RETURN, CALL))]


def _mutate(rng: random.Random, tokens: list[int]) -> list[int]:
    tokens = list(tokens)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randint(0, len(tokens))
        op = rng.random()
        if op < 0.4:
            tokens.insert(pos, rng.choice(SPECIALS))
        elif op < 0.6:
            tokens[pos:pos] = _ordinary(rng)
        elif tokens and op < 0.8:
            del tokens[min(pos, len(tokens) - 1)]
        elif tokens:
            tokens[min(pos, len(tokens) - 1)] = rng.choice(SPECIALS)
    return tokens


def fuzz_output(seed: int) -> SyntheticOutput:
    """One fuzz output, fully determined by ``seed``."""
    rng = random.Random(f"fuzz-{seed}")
    strategy = rng.choice(STRATEGIES)
    base = list(generate_output(rng.randrange(1 << 30)).generated)
    if strategy == "mutate":
        tokens = _mutate(rng, base)
    elif strategy == "headers":
        tokens = []
        for i in range(rng.randint(1, 4)):
            tokens += _message(rng, i == 0)
    elif strategy == "soup":
        tokens = list(_corpus().encode(rng.choice(_HEADERS))) if rng.random() < 0.8 else []
        for _ in range(rng.randint(1, 30)):
            tokens += [rng.choice(SPECIALS)] if rng.random() < 0.3 else _ordinary(rng)
    else:
        tokens = base[: rng.randint(0, len(base))]
    finish = rng.choices(("stop", "length", "abort"), (70, 27, 3))[0]
    trimmed = bool(tokens) and tokens[-1] in (RETURN, CALL) and rng.random() < 0.75
    return SyntheticOutput(
        name=f"fuzz:{strategy}",
        seed=seed,
        generated=tuple(tokens),
        finish_reason=finish,
        stop_token_trimmed=trimmed,
        malformed=False,  # unknown: the parser decides
    )


def fuzz_outputs(count: int, seed: int = 0) -> Iterator[SyntheticOutput]:
    """``count`` fuzz outputs with consecutive seeds from ``seed``."""
    for i in range(count):
        yield fuzz_output(seed + i)


__all__ = ["STRATEGIES", "fuzz_output", "fuzz_outputs"]
