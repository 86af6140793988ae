# SPDX-License-Identifier: Apache-2.0
"""Seeded synthetic gpt-oss generations, tokenized with the real Harmony encoding.

A generation is what the model produces after a prompt that ends with ``<|start|>assistant``:
the first message has no ``<|start|>assistant`` of its own, later ones do. Every random
output is a composition of Harmony messages (reasoning, preambles, final answers, function
and built-in tool calls) whose text comes from a small corpus of prose, code, JSON, CJK,
accented text and emoji, pre-encoded once so that thousands of outputs are cheap.

``engine_responses`` replays an output the way TensorRT-LLM streams it: token batches of a
given size, with the trimmed stop token missing from the last batch.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from ..core.harmony_tokens import CALL, CHANNEL, CONSTRAIN, END, ENDOFTEXT, MESSAGE, RETURN, START
from ..encoding import load_gpt_oss_encoding

# Specials that are plain text inside content (not stop tokens).
STRAY_SPECIALS = (START, CHANNEL, MESSAGE, CONSTRAIN, ENDOFTEXT)

SCENARIO_KINDS: tuple[str, ...] = (
    "answer",
    "reasoning_answer",
    "multi_round",
    "preamble_answer",
    "tool_call",
    "analysis_tool_call",
    "builtin_tool",
    "multibyte",
    "stray_special",
    "empty_message",
    "length_cut",
    "header_cut",
    "malformed",
)

_PROSE = (
    "the",
    "user",
    "wants",
    "a",
    "short",
    "answer",
    "about",
    "rivers",
    "and",
    "mountains",
    "so",
    "I",
    "should",
    "keep",
    "it",
    "brief",
    "check",
    "the",
    "weather",
    "in",
    "Paris",
    "then",
    "reply",
    "with",
    "the",
    "forecast",
    "for",
    "tomorrow",
    "it",
    "is",
    "likely",
    "that",
    "we",
    "need",
    "one",
    "more",
    "lookup",
    "before",
    "answering",
    "because",
    "the",
    "data",
    "may",
    "be",
    "stale",
    "however",
    "the",
    "capital",
    "of",
    "France",
    "is",
    "Paris",
    "and",
    "the",
    "largest",
    "city",
    "too",
)
_PUNCT = (".", ",", ";", ":", "!", "?", " -", "\n\n", "\n- ", " (", ")")
_MULTIBYTE = (
    " 日本語のテキスト",
    " こんにちは世界",
    " 中文测试",
    " 龘",
    " Voilà",
    " Ça marche",
    " über",
    " naïve café",
    " 👨\u200d👩\u200d👧\u200d👦",
    " 🇫🇷",
    " 👍🏽",
    " 🎉",
    " 🤔",
    " —",
    " 𝔘nicode",
    " Ελληνικά",
    " Привет",
    " مرحبا",
    " 🧑\u200d💻",
)
_CODE = (
    "\n```python\n",
    "def f(x):\n",
    "    return x * 2\n",
    "print(f(21))\n",
    "```\n",
    "for i in range(3):\n",
    "    total += i\n",
    "import json\n",
    '{"key": [1, 2, 3]}',
    "x = {'a': None}\n",
)
_FUNCTIONS = ("get_weather", "search_docs", "lookup_user", "send_email", "convert_units")
_ARG_KEYS = ("location", "query", "user_id", "unit", "limit", "to", "text")
_ARG_VALUES = (
    "Paris, France",
    "Tokyo",
    "東京",
    "celsius",
    3,
    True,
    None,
    'a"quoted" value',
    "emoji 🎉",
    42.5,
    ["x", "y"],
)


@dataclass(frozen=True)
class SyntheticOutput:
    """One model generation and how the engine ended it."""

    name: str  # scenario kind (random outputs) or fixture name (named outputs)
    seed: int
    generated: tuple[int, ...]  # every generated token, stop token included when there is one
    finish_reason: str | None  # "stop" or "length"; hostile outputs use any engine reason
    stop_token_trimmed: bool  # the trailing <|return|>/<|call|> is not delivered
    malformed: bool  # the Harmony parser rejects a token of ``generated``

    @property
    def delivered(self) -> tuple[int, ...]:
        """The tokens TensorRT-LLM delivers (without the trimmed stop token)."""
        return self.generated[:-1] if self.stop_token_trimmed else self.generated


@dataclass(frozen=True)
class EngineResponse:
    """One streamed engine response: the new tokens and whether generation ended."""

    token_ids_diff: tuple[int, ...]
    finished: bool
    finish_reason: str | None  # set on the finished response only


@dataclass(frozen=True)
class _Message:
    header: tuple[int, ...]
    content: tuple[int, ...]
    stop: int


class _Corpus:
    """Pre-encoded snippets and headers."""

    def __init__(self) -> None:
        self._enc = load_gpt_oss_encoding()
        self.prose = [self.encode(" " + w) for w in _PROSE] + [self.encode(p) for p in _PUNCT]
        self.multibyte = [self.encode(s) for s in _MULTIBYTE]
        self.code = [self.encode(s) for s in _CODE]
        self.args = [self.encode(self._arguments(random.Random(i))) for i in range(24)]
        self._headers: dict[str, tuple[int, ...]] = {}

    def encode(self, text: str) -> tuple[int, ...]:
        return tuple(self._enc.encode(text, allowed_special="all"))

    def header(self, text: str) -> tuple[int, ...]:
        tokens = self._headers.get(text)
        if tokens is None:
            tokens = self._headers[text] = self.encode(text)
        return tokens

    @staticmethod
    def _arguments(rng: random.Random) -> str:
        keys = rng.sample(_ARG_KEYS, rng.randint(1, 3))
        return json.dumps(
            {k: rng.choice(_ARG_VALUES) for k in keys}, ensure_ascii=rng.random() < 0.5
        )


@functools.lru_cache(maxsize=1)
def _corpus() -> _Corpus:
    return _Corpus()


def _text(
    rng: random.Random, corpus: _Corpus, style: str, low: int = 5, high: int = 200
) -> list[int]:
    """Roughly ``randint(low, high)`` tokens of prose, multi-byte or code text."""
    target = rng.randint(low, high)
    out: list[int] = []
    choice = rng.choice
    while len(out) < target:
        r = rng.random()
        if style == "multibyte" and r < 0.45:
            out.extend(choice(corpus.multibyte))
        elif style == "code" and r < 0.5:
            out.extend(choice(corpus.code))
        elif r < 0.06:
            out.extend(choice(corpus.multibyte))
        else:
            out.extend(choice(corpus.prose))
    return out


def _style(rng: random.Random) -> str:
    return rng.choices(("prose", "multibyte", "code"), (6, 2, 1))[0]


def _prefix(first: bool, recipient_in_role: str = "") -> str:
    role = "" if first else "<|start|>assistant"
    return f"{role} to={recipient_in_role}" if recipient_in_role else role


def _plain(
    rng: random.Random,
    c: _Corpus,
    channel: str,
    first: bool,
    *,
    empty: bool = False,
    style: str | None = None,
) -> _Message:
    header = c.header(f"{_prefix(first)}<|channel|>{channel}<|message|>")
    content = () if empty else tuple(_text(rng, c, style or _style(rng)))
    return _Message(header, content, RETURN if channel == "final" else END)


def _function_call(rng: random.Random, c: _Corpus, first: bool, channel: str) -> _Message:
    recipient = f"functions.{rng.choice(_FUNCTIONS)}"
    ctype = rng.choice(("<|constrain|>json", " <|constrain|>json", " json", ""))
    if ctype.startswith("<"):
        ctype = (
            " " + ctype if rng.random() < 0.8 else ctype
        )  # ``to=f<|constrain|>json`` also parses
    if rng.random() < 0.5:
        text = f"{_prefix(first, recipient)}<|channel|>{channel}{ctype}<|message|>"
    else:
        text = f"{_prefix(first)}<|channel|>{channel} to={recipient}{ctype}<|message|>"
    return _Message(c.header(text), rng.choice(c.args), CALL)


def _builtin_call(rng: random.Random, c: _Corpus, first: bool) -> _Message:
    if rng.random() < 0.5:
        query = " ".join(rng.sample(_PROSE, rng.randint(1, 5)))
        args = c.encode(json.dumps({"query": query, "topn": rng.randint(1, 10)}))
        recipient = "browser.search"
    else:
        args = tuple(_text(rng, c, "code", 5, 60))
        recipient = "python"
    if rng.random() < 0.5:
        text = f"{_prefix(first)}<|channel|>analysis to={recipient} code<|message|>"
    else:
        text = f"{_prefix(first, recipient)}<|channel|>analysis code<|message|>"
    return _Message(c.header(text), args, CALL)


def _ending(rng: random.Random, c: _Corpus, first: bool) -> _Message:
    """The last message: a final answer, a function call or a built-in tool call."""
    r = rng.random()
    if r < 0.6:
        return _plain(rng, c, "final", first)
    if r < 0.9:
        return _function_call(rng, c, first, "commentary")
    return _builtin_call(rng, c, first)


def _compose(kind: str, rng: random.Random, c: _Corpus) -> list[_Message]:
    """The messages of one generation of ``kind`` (one of the non-cut kinds)."""
    msgs: list[_Message] = []

    def first() -> bool:
        return not msgs

    def reasoning(p: float = 1.0) -> None:
        if rng.random() < p:
            msgs.append(_plain(rng, c, "analysis", first()))

    if kind == "answer":
        msgs.append(_plain(rng, c, "final", True))
    elif kind == "reasoning_answer":
        reasoning()
        msgs.append(_plain(rng, c, "final", False))
    elif kind == "multi_round":
        for _ in range(rng.randint(2, 5)):
            msgs.append(_plain(rng, c, rng.choice(("analysis", "analysis", "commentary")), first()))
        msgs.append(_ending(rng, c, False))
    elif kind == "preamble_answer":
        reasoning(0.7)
        msgs.append(_plain(rng, c, "commentary", first()))
        msgs.append(_plain(rng, c, "final", False))
    elif kind == "tool_call":
        reasoning(0.7)
        if rng.random() < 0.5:
            msgs.append(_plain(rng, c, "commentary", first()))
        msgs.append(_function_call(rng, c, first(), "commentary"))
    elif kind == "analysis_tool_call":
        reasoning(0.8)
        msgs.append(_function_call(rng, c, first(), "analysis"))
    elif kind == "builtin_tool":
        reasoning(0.7)
        msgs.append(_builtin_call(rng, c, first()))
    elif kind == "multibyte":
        reasoning(0.7)
        msgs.append(_plain(rng, c, "final", first(), style="multibyte"))
        if len(msgs) == 2:
            msgs[0] = _plain(rng, c, "analysis", True, style="multibyte")
    elif kind == "stray_special":
        reasoning(0.5)
        final = _plain(rng, c, "final", first())
        content = list(final.content)
        for _ in range(rng.randint(1, 3)):
            content.insert(rng.randint(0, len(content)), rng.choice(STRAY_SPECIALS))
        msgs.append(_Message(final.header, tuple(content), RETURN))
    elif kind == "empty_message":
        if rng.random() < 0.5:
            msgs.append(_plain(rng, c, "analysis", True, empty=True))
        msgs.append(_plain(rng, c, "final", first(), empty=rng.random() < 0.7))
    else:
        raise ValueError(f"unknown scenario kind {kind!r}")
    return msgs


def _flatten(msgs: Sequence[_Message]) -> list[int]:
    out: list[int] = []
    for m in msgs:
        out += m.header
        out += m.content
        out.append(m.stop)
    return out


_COMPOSED = SCENARIO_KINDS[:10]


def _length_cut(rng: random.Random, c: _Corpus) -> list[int]:
    """A generation cut by the token limit inside the content of one of its messages."""
    msgs = _compose(rng.choice(_COMPOSED), rng, c)
    i = rng.randrange(len(msgs))
    m = msgs[i]
    if m.stop == END and rng.random() < 0.1:
        return _flatten(msgs[: i + 1])  # cut right after a message boundary
    keep = rng.randint(0, len(m.content))
    return _flatten(msgs[:i]) + list(m.header) + list(m.content[:keep])


def _header_cut(rng: random.Random, c: _Corpus) -> list[int]:
    """A generation cut by the token limit inside a message header."""
    msgs = _compose(rng.choice(_COMPOSED), rng, c)
    i = rng.randrange(len(msgs))
    header = msgs[i].header
    return _flatten(msgs[:i]) + list(header[: rng.randint(1, len(header) - 1)])


def _malformed(rng: random.Random, c: _Corpus) -> list[int]:
    """A generation the Harmony parser rejects (a token after a message end is not <|start|>)."""
    msgs = _compose(rng.choice(("reasoning_answer", "preamble_answer", "multi_round")), rng, c)
    i = rng.randrange(1, len(msgs))
    m = msgs[i]
    variant = rng.randrange(5)
    if variant == 1 and m.stop == CALL:
        variant = 0  # an unknown role followed by a recipient parses as a tool author
    if variant == 0:  # next message lacks <|start|>assistant
        broken = _Message(m.header[2:], m.content, m.stop)
    elif variant == 1:  # unknown role
        broken = _Message((START, *c.encode("assistnt")) + m.header[2:], m.content, m.stop)
    elif variant == 2:  # channel marker without a value
        broken = _Message(c.header("<|start|>assistant<|channel|><|message|>"), m.content, m.stop)
    elif variant == 3:  # text after <|end|>
        broken = _Message(tuple(_text(rng, c, "prose", 1, 5)) + m.header, m.content, m.stop)
    else:  # a second <|end|>
        broken = _Message((END,) + m.header, m.content, m.stop)
    return _flatten([*msgs[:i], broken, *msgs[i + 1 :]])


def generate_output(seed: int) -> SyntheticOutput:
    """One random generation, fully determined by ``seed``."""
    rng = random.Random(seed)
    c = _corpus()
    kind = rng.choice(SCENARIO_KINDS)
    if kind == "length_cut":
        tokens = _length_cut(rng, c)
    elif kind == "header_cut":
        tokens = _header_cut(rng, c)
    elif kind == "malformed":
        tokens = _malformed(rng, c)
    else:
        tokens = _flatten(_compose(kind, rng, c))
    cut = kind in ("length_cut", "header_cut")
    trimmed = not cut and tokens[-1] in (RETURN, CALL) and rng.random() < 0.75
    return SyntheticOutput(
        name=kind,
        seed=seed,
        generated=tuple(tokens),
        finish_reason="length" if cut else "stop",
        stop_token_trimmed=trimmed,
        malformed=kind == "malformed",
    )


def generate_outputs(count: int, seed: int = 0) -> Iterator[SyntheticOutput]:
    """``count`` generations with consecutive seeds from ``seed``."""
    for i in range(count):
        yield generate_output(seed + i)


# Fixed regression fixtures: (finish_reason, malformed, pieces joined into the completion).
# The first eight are the upstream harness cases, verbatim.
_A = "<|start|>assistant"
_NAMED: dict[str, tuple[Literal["stop", "length"], bool, tuple[str, ...]]] = {
    "short_answer": (
        "stop",
        False,
        ("<|channel|>final<|message|>Hi there, how can I help?<|return|>",),
    ),
    "reasoning_answer": (
        "stop",
        False,
        (
            "<|channel|>analysis<|message|>The user asks for the capital of France. ",
            "That is Paris, a well known fact; answer briefly.<|end|>",
            f"{_A}<|channel|>final<|message|>The capital of France is Paris. ",
            "It is also its largest city.<|return|>",
        ),
    ),
    "preamble_tool_call": (
        "stop",
        False,
        (
            "<|channel|>analysis<|message|>Need the weather in Paris, so call get_weather.<|end|>",
            f"{_A}<|channel|>commentary<|message|>Let me check the current weather in Paris ",
            "for you.<|end|>",
            f"{_A} to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>",
            '{"location": "Paris, France"}<|call|>',
        ),
    ),
    "preamble_answer": (
        "stop",
        False,
        (
            "<|channel|>analysis<|message|>Simple arithmetic, answer directly.<|end|>",
            f"{_A}<|channel|>commentary<|message|>Quick calculation, no tools needed.<|end|>",
            f"{_A}<|channel|>final<|message|>Six times seven is 42.<|return|>",
        ),
    ),
    "length_cut": (
        "length",
        False,
        (
            "<|channel|>analysis<|message|>Write a long answer about rivers.<|end|>",
            f"{_A}<|channel|>final<|message|>Rivers shape valleys, carry sediment and feed ",
            "deltas; the longest of them",
        ),
    ),
    "analysis_tool_call": (
        "stop",
        False,
        (
            "<|channel|>analysis<|message|>I should look up Tokyo's weather.<|end|>",
            f"{_A} to=functions.get_weather<|channel|>analysis <|constrain|>json<|message|>",
            '{"location": "Tokyo"}<|call|>',
        ),
    ),
    "multibyte_emoji": (
        "stop",
        False,
        (
            "<|channel|>analysis<|message|>User wants emoji 🤔 and some 日本語.<|end|>",
            f"{_A}<|channel|>final<|message|>Voilà 🎉🇫🇷 — こんにちは世界! Ça marche 👍🏽."
            "<|return|>",
        ),
    ),
    "malformed_missing_start": (
        "stop",
        True,
        (
            "<|channel|>analysis<|message|>Think briefly.<|end|>",
            "<|channel|>final<|message|>Answer.<|return|>",
        ),
    ),
    "header_cut": (
        "length",
        False,
        ("<|channel|>analysis<|message|>Plan the reply.<|end|>", f"{_A}<|channel|>fin"),
    ),
    "channel_recipient_tool_call": (
        "stop",
        False,
        (
            "<|channel|>commentary to=functions.lookup_user <|constrain|>json<|message|>",
            '{"user_id": 7}<|call|>',
        ),
    ),
    "browser_search": (
        "stop",
        False,
        (
            "<|channel|>analysis<|message|>Search first.<|end|>",
            f"{_A}<|channel|>analysis to=browser.search code<|message|>",
            '{"query": "Paris weather", "topn": 3}<|call|>',
        ),
    ),
    "python_call": (
        "stop",
        False,
        ("<|channel|>analysis to=python code<|message|>print(6 * 7)<|call|>",),
    ),
    "stray_special": (
        "stop",
        False,
        ("<|channel|>final<|message|>Use <|start|> and <|channel|> literally.<|return|>",),
    ),
    "empty_final": ("stop", False, ("<|channel|>final<|message|><|return|>",)),
}
NAMED_SCENARIOS: tuple[str, ...] = tuple(_NAMED)


def named_output(name: str, *, trimmed: bool = True) -> SyntheticOutput:
    """A fixed fixture; ``trimmed`` applies only when it ends with <|return|>/<|call|>."""
    try:
        finish_reason, malformed, pieces = _NAMED[name]
    except KeyError:
        raise ValueError(
            f"unknown scenario {name!r}; known: {', '.join(NAMED_SCENARIOS)}"
        ) from None
    tokens = _corpus().encode("".join(pieces))
    return SyntheticOutput(
        name=name,
        seed=0,
        generated=tokens,
        finish_reason=finish_reason,
        stop_token_trimmed=trimmed and tokens[-1] in (RETURN, CALL),
        malformed=malformed,
    )


def _batch_sizes(total: int, split: int | Sequence[int] | random.Random) -> Iterator[int]:
    if isinstance(split, random.Random):
        while True:
            yield split.randint(1, 25)
    if isinstance(split, int):
        if split < 1:
            raise ValueError("split must be >= 1")
        while True:
            yield split
    for size in split:
        if size < 0:
            raise ValueError("batch sizes must be >= 0")
        yield size
    yield total  # what the sizes did not cover goes in one last batch


def engine_responses(
    output: SyntheticOutput, split: int | Sequence[int] | random.Random
) -> list[EngineResponse]:
    """The engine responses TensorRT-LLM would stream for ``output``.

    ``split``: an int is a fixed ``stream_interval``; a sequence gives explicit batch sizes
    (0 = a response with no new token; tokens left over form one last batch); a
    ``random.Random`` draws sizes from 1 to 25. Batches cover ``generated``; then the trimmed
    stop token is removed from the last batch, which may leave it empty.
    """
    tokens = output.generated
    batches: list[tuple[int, ...]] = []
    pos = 0
    sizes = _batch_sizes(len(tokens), split)
    while pos < len(tokens):
        size = next(sizes)
        batches.append(tokens[pos : pos + size])
        pos += size
    if not batches:
        batches.append(())
    if output.stop_token_trimmed:
        batches[-1] = batches[-1][:-1]
    last = len(batches) - 1
    return [
        EngineResponse(b, i == last, output.finish_reason if i == last else None)
        for i, b in enumerate(batches)
    ]
