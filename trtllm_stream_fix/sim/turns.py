# SPDX-License-Identifier: Apache-2.0
"""The simulated model's turn for a request: what gpt-oss would plausibly generate.

The turn follows the request, deterministically for a seed:

- ``function_call_output`` items after the last user message → an answer that quotes them
  (with ``parallel_tool_calls: false``, first a call of the next tool the input names that
  has no output yet: one call per turn);
- otherwise function tools given and ``tool_choice`` not ``"none"`` → calls of those tools
  only, with arguments valid against each tool's ``parameters`` (``schema_args``): a named
  ``tool_choice`` calls that tool; ``"auto"``/``"required"`` call the tools the input names
  (by name or by a word of the name), else one picked by the seed; with
  ``parallel_tool_calls: false`` at most one call;
- no function tools (or ``tool_choice: "none"``) → an answer, never a call;
- ``reasoning.effort`` sets the length of the analysis message (``none``: no reasoning).

``tool_choice: "required"`` or a named function call a tool on every turn, tool outputs or
not (that is what they ask for). The turn ends with ``<|return|>`` or ``<|call|>``, trimmed
from what the engine delivers as TensorRT-LLM trims it.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.harmony_tokens import CALL, END, RETURN
from ..encoding import PlainTextEncoder, encode_with_specials, load_gpt_oss_encoding
from .errors import TurnRequestError
from .model import SyntheticOutput
from .schema_args import sample

#: Words in the analysis message per ``reasoning.effort`` (``None``: medium).
REASONING_WORDS: dict[str | None, tuple[int, int]] = {
    "none": (0, 0),
    "minimal": (4, 8),
    "low": (8, 16),
    None: (30, 60),
    "medium": (30, 60),
    "high": (100, 160),
    "xhigh": (160, 240),
}
_THOUGHTS = (
    "the", "user", "asks", "about", "this", "so", "I", "should", "check", "what", "tools",
    "can", "tell", "then", "answer", "briefly", "and", "clearly", "with", "the", "facts",
)  # fmt: skip
_PROSE = (
    "rivers", "shape", "the", "valleys", "and", "carry", "sediment", "to", "the", "sea",
    "while", "mountains", "rise", "slowly", "over", "many", "years", "so", "that", "each",
    "region", "has", "its", "own", "climate", "and", "history",
)  # fmt: skip
_ANSWER = "Here is what I found."
#: Words of prose in an answer (after the opening sentence).
ANSWER_WORDS = (10, 120)
MAX_OUTPUT_QUOTE = 200


@dataclass(frozen=True)
class TurnRequest:
    """What the simulated model reads of a Responses request."""

    input: str | Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]] = ()
    tool_choice: str | Mapping[str, Any] = "auto"
    parallel_tool_calls: bool = True
    reasoning_effort: str | None = None


def plan_turn(request: TurnRequest, seed: int) -> SyntheticOutput:
    """The generation for ``request`` (deterministic for ``seed``)."""
    rng = random.Random(seed)
    pieces: list[tuple[str, bool]] = []  # (text, is Harmony markup)
    thought = _reasoning(rng, request.reasoning_effort)
    if thought:
        _message(pieces, "analysis", thought, END)
    outputs = _tool_outputs(request.input)
    calls = _calls(request, rng, answering=bool(outputs))
    if calls:
        if rng.random() < 0.3:
            _message(pieces, "commentary", f"Let me check {calls[0]['name']}.", END)
        for tool in calls:
            arguments = sample(tool.get("parameters") or {"type": "object"}, rng)
            header = f"commentary to=functions.{tool['name']} <|constrain|>json"
            _message(pieces, header, json.dumps(arguments, ensure_ascii=False), CALL)
        name = "turn_call"
    else:
        _message(pieces, "final", _answer(outputs, rng), RETURN)
        name = "turn_answer"
    tokens = _encode(pieces)
    return SyntheticOutput(
        name=name,
        seed=seed,
        generated=tuple(tokens),
        finish_reason="stop",
        stop_token_trimmed=True,
        malformed=False,
    )


def function_tools(request: TurnRequest) -> list[Mapping[str, Any]]:
    """The function tools the model may call under ``request.tool_choice``."""
    tools = [t for t in request.tools if t.get("type") == "function" and t.get("name")]
    choice = request.tool_choice
    if choice == "none":
        return []
    if isinstance(choice, Mapping):
        if choice.get("type") == "function":
            named = [t for t in tools if t["name"] == choice.get("name")]
            if not named:
                raise TurnRequestError(
                    f"tool_choice names function {choice.get('name')!r}, which is not in tools",
                    "tool_choice",
                )
            return named
        if choice.get("type") == "allowed_tools":
            listed = choice.get("tools")
            if not isinstance(listed, list):
                raise TurnRequestError(
                    "tool_choice.tools must be a list of tools", "tool_choice.tools"
                )
            allowed = {t.get("name") for t in listed if isinstance(t, Mapping)}
            return [t for t in tools if t["name"] in allowed]
    return tools


def _forced(request: TurnRequest) -> bool:
    choice = request.tool_choice
    if choice == "required":
        return True
    if isinstance(choice, Mapping):
        return choice.get("type") == "function" or choice.get("mode") == "required"
    return False


def _calls(request: TurnRequest, rng: random.Random, *, answering: bool) -> list[Mapping]:
    tools = function_tools(request)
    forced = _forced(request)
    if not tools:
        if forced:
            raise TurnRequestError("tool_choice requires a call but no function tool fits", "tools")
        return []
    words = set(re.findall(r"[a-z0-9]+", _input_text(request.input).lower()))
    named = [t for t in tools if _mentioned(t["name"], words)]
    if answering and not forced:
        if request.parallel_tool_calls:
            return []
        # One call per turn: the next tool the input names that has no output yet.
        done = _called(request.input)
        return [t for t in named if t["name"] not in done][:1]
    chosen = named or [rng.choice(tools)]
    return chosen if request.parallel_tool_calls else chosen[:1]


def _mentioned(name: str, words: set[str]) -> bool:
    parts = [p for p in re.split(r"[^a-z0-9]+", name.lower()) if len(p) > 3]
    return name.lower() in words or any(p in words for p in parts)


def _reasoning(rng: random.Random, effort: str | None) -> str:
    low, high = REASONING_WORDS.get(effort, REASONING_WORDS[None])
    text = " ".join(rng.choices(_THOUGHTS, k=rng.randint(low, high)))
    return f"{text[0].upper()}{text[1:]}." if text else ""


def _answer(outputs: list[tuple[str, str]], rng: random.Random) -> str:
    prose = " ".join(rng.choices(_PROSE, k=rng.randint(*ANSWER_WORDS)))
    if not outputs:
        return f"{rng.choice(('Sure, happy to help.', 'Here is a short answer.'))} {prose}."
    quoted = "; ".join(
        f"{name or 'the tool'} returned {text[:MAX_OUTPUT_QUOTE]}" for name, text in outputs
    )
    return f"{_ANSWER} {quoted}. {prose.capitalize()}."


def _tool_outputs(request_input: Any) -> list[tuple[str, str]]:
    """``(tool name, output text)`` for each ``function_call_output`` after the last user turn."""
    if not isinstance(request_input, Sequence) or isinstance(request_input, str):
        return []
    items = [i for i in request_input if isinstance(i, Mapping)]
    last_user = max((n for n, i in enumerate(items) if i.get("role") == "user"), default=-1)
    names = {
        i.get("call_id"): name
        for i in items
        if i.get("type") == "function_call" and isinstance(name := i.get("name"), str)
    }
    out = []
    for item in items[last_user + 1 :]:
        if item.get("type") == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            out.append((names.get(item.get("call_id"), ""), text))
    return out


def _called(request_input: Any) -> set[str]:
    """Names of the function calls since the last user message."""
    items = [i for i in request_input if isinstance(i, Mapping)]
    last_user = max((n for n, i in enumerate(items) if i.get("role") == "user"), default=-1)
    return {
        name
        for i in items[last_user + 1 :]
        if i.get("type") == "function_call" and isinstance(name := i.get("name"), str)
    }


def _input_text(request_input: Any) -> str:
    if isinstance(request_input, str):
        return request_input
    texts: list[str] = []
    for item in request_input if isinstance(request_input, Sequence) else ():
        content = item.get("content") if isinstance(item, Mapping) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, Sequence):
            texts.extend(p.get("text", "") for p in content if isinstance(p, Mapping))
    return " ".join(t for t in texts if isinstance(t, str))


def _message(pieces: list[tuple[str, bool]], header: str, content: str, stop: int) -> None:
    start = "" if not pieces else "<|start|>assistant"
    channel, _, rest = header.partition(" ")
    pieces.append((f"{start}<|channel|>{channel}{' ' + rest if rest else ''}<|message|>", True))
    pieces.append((content, False))
    pieces.append(({END: "<|end|>", CALL: "<|call|>", RETURN: "<|return|>"}[stop], True))


@functools.lru_cache(maxsize=256)
def _markup_tokens(text: str) -> tuple[int, ...]:
    """The tokens of Harmony markup (headers, stop tokens): few distinct strings."""
    return tuple(encode_with_specials(load_gpt_oss_encoding(), text))


@functools.lru_cache(maxsize=1)
def _plain_text() -> PlainTextEncoder:
    """The model text's encoder: turns are drawn from few words, each encoded once."""
    return PlainTextEncoder(load_gpt_oss_encoding())


def _encode(pieces: list[tuple[str, bool]]) -> list[int]:
    plain = _plain_text()
    tokens: list[int] = []
    for text, markup in pieces:
        if markup:
            tokens += _markup_tokens(text)
        else:  # model text: special-token look-alikes are plain text
            tokens += plain.encode(text)
    return tokens


def chat_request(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    tool_choice: str | Mapping[str, Any] | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str | Mapping[str, Any]]:
    """A Chat Completions request in Responses terms: ``(input items, tools, tool_choice)``.

    ``{"type": "function", "function": {...}}`` tools become Responses function tools; an
    assistant message's ``tool_calls`` become ``function_call`` items and ``tool`` messages
    ``function_call_output`` items, so the turn answers tool results as it does for Responses.
    """
    items: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id"),
                    "output": message.get("content"),
                }
            )
            continue
        items.append({"role": role, "content": message.get("content")})
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.get("id"),
                        "name": function.get("name"),
                    }
                )
    functions = [
        {"type": "function", **t["function"]}
        for t in tools or ()
        if isinstance(t, Mapping) and isinstance(t.get("function"), Mapping)
    ]
    return items, functions, _responses_tool_choice(tool_choice or "auto")


def _responses_tool_choice(choice: str | Mapping[str, Any]) -> str | Mapping[str, Any]:
    """A Chat Completions ``tool_choice`` in Responses terms (named function, allowed tools)."""
    if not isinstance(choice, Mapping):
        return choice
    if isinstance(choice.get("function"), Mapping):
        return {"type": "function", "name": choice["function"].get("name")}
    allowed = choice.get("allowed_tools")
    if choice.get("type") != "allowed_tools" or not isinstance(allowed, Mapping):
        return choice
    listed = allowed.get("tools")
    if isinstance(listed, list):  # else left for function_tools to refuse
        functions = [t.get("function") for t in listed if isinstance(t, Mapping)]
        listed = [
            {"type": "function", "name": f.get("name")} for f in functions if isinstance(f, Mapping)
        ]
    return {"type": "allowed_tools", "mode": allowed.get("mode"), "tools": listed}
