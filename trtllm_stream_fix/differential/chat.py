# SPDX-License-Identifier: Apache-2.0
"""Batch-size differential for Chat Completions, for ours and registered others.

Each output is streamed with the same splits as the Responses differential (1, 2, 3, 7, 20,
random tokens per response, and numpy batches). Every stream is judged on the same five
counts: what the client sees (deltas of one field joined, ids canonical) equals the 1-token
stream (``identical``); the OpenAI SDK's chat accumulator accepts it (``sdk_accepted``); the
strict chat checker passes it (``strict_passed``); the SDK's accumulated completion equals
the checker's assembly of the stream (``final_matches_stream``); the non-streaming
completion for the same tokens equals the stream joined (``nonstreaming_matches``). For ours,
``fast_matches_reference`` also counts the streams whose frames, and non-streaming completion,
are the same with ``ChatOptions(parser="fast")`` and ``parser="reference"``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..checker.chat import ChatCheck, ChatStreamChecker
from ..core import chat_chunks as cc
from ..core.chat_machine import (
    DEFAULT_CHAT_OPTIONS,
    ChatChunkMachine,
    ChatContext,
    ChatGenerationError,
    ChatOptions,
    build_chat_completion,
)
from ..defaults import default_encoding
from ..sim.model import SyntheticOutput, engine_responses
from .chat_oracle import SDKRejected, SDKResult, sdk_accumulate_chat
from .report import shorten
from .splits import COUNTS, NUMPY_SPLIT, Tally, copy_split, first_difference, splits_for

#: The chat implementations by name: stream factory ``(encoding) -> start/feed`` and the
#: non-streaming body ``(output, encoding) -> dict``. ``"upstream"`` is
#: :func:`.responses.register_upstream_chat`.
CHAT_IMPLS: dict[str, tuple[Callable[[Any], Any], Callable[[Any, Any], dict[str, Any]]]] = {}
CHAT_COUNTS = COUNTS
_MODEL = "gpt-oss-20b"


def _context(num_prompt_tokens: int = 0) -> ChatContext:
    return ChatContext(
        "chatcmpl-differential", _MODEL, 0, num_prompt_tokens=num_prompt_tokens, include_usage=True
    )


def chat_stream(
    output: SyntheticOutput,
    split: int | Sequence[int] | random.Random | str,
    *,
    impl: str = "ours",
    options: ChatOptions = DEFAULT_CHAT_OPTIONS,
    encoding: Any = None,
) -> list[Any]:
    """The JSON payloads of one chat stream of ``output`` (``"[DONE]"`` for the sentinel)."""
    encoding = encoding or default_encoding()
    if impl == "ours":
        stream: Any = ChatChunkMachine(_context(), options=options, encoding=encoding)
    else:
        stream = _registered(impl)[0](encoding)
    frames = list(stream.start())
    as_array = split == NUMPY_SPLIT
    if isinstance(split, str):
        if not as_array:
            raise ValueError(f"unknown split {split!r}")
        import numpy as np

        split = 5
    for response in engine_responses(output, split):
        tokens: Any = response.token_ids_diff
        if as_array:
            tokens = np.asarray(tokens, dtype=np.int64)
        frames.extend(
            stream.feed(
                tokens,
                finished=response.finished,
                finish_reason=response.finish_reason,
            )
        )
    return [frame if isinstance(frame, (dict, str)) else cc.to_dict(frame) for frame in frames]


def chat_nonstreaming(
    output: SyntheticOutput,
    *,
    impl: str = "ours",
    options: ChatOptions = DEFAULT_CHAT_OPTIONS,
    encoding: Any = None,
) -> dict[str, Any]:
    """The non-streaming body for ``output``: a ``chat.completion`` or ``{"error": ...}``."""
    encoding = encoding or default_encoding()
    if impl != "ours":
        return _registered(impl)[1](output, encoding)
    try:
        completion = build_chat_completion(
            _context(), output.delivered, output.finish_reason, options=options, encoding=encoding
        )
    except ChatGenerationError as exc:
        return cc.to_dict(exc.error)
    return cc.to_dict(completion)


def register_chat_impl(
    name: str,
    stream: Callable[[Any], Any],
    body: Callable[[Any, Any], dict[str, Any]],
) -> None:
    """Add a chat implementation to compare with ours (``stream(encoding)``, ``body(output,
    encoding)``)."""
    CHAT_IMPLS[name] = (stream, body)


def _registered(impl: str) -> tuple[Callable[[Any], Any], Callable[[Any, Any], dict[str, Any]]]:
    if impl not in CHAT_IMPLS:
        raise ValueError(f"unknown implementation {impl!r}; choose from ours, {list(CHAT_IMPLS)}")
    return CHAT_IMPLS[impl]


def chat_visible(payloads: Iterable[Any]) -> list[tuple[Any, ...]]:
    """What a client sees: consecutive text of one field (or one call's arguments) joined."""
    ids: dict[str, str] = {}
    out: list[tuple[Any, ...]] = []

    def text(kind: str, key: Any, value: str) -> None:
        if out and out[-1][0] == kind and out[-1][1] == key:
            out[-1] = (kind, key, out[-1][2] + value)
        else:
            out.append((kind, key, value))

    for payload in payloads:
        if payload == "[DONE]":
            out.append(("done",))
            continue
        if not isinstance(payload, dict):
            out.append(("junk", repr(payload)))
            continue
        if payload.get("error"):
            error = payload["error"]
            out.append(("error", error.get("message") if isinstance(error, dict) else error))
            continue
        for choice in payload.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("role"):
                out.append(("role", delta["role"]))
            for key in ("reasoning", "reasoning_content"):
                if delta.get(key):
                    text("text", key, delta[key])
            if delta.get("content"):
                text("text", "content", delta["content"])
            for call in delta.get("tool_calls") or []:
                function = call.get("function") or {}
                index = call.get("index")
                if call.get("id") or function.get("name"):
                    call_id = ids.setdefault(call.get("id") or "", f"<call{len(ids)}>")
                    out.append(("call", index, call_id, function.get("name"), call.get("type")))
                if function.get("arguments"):
                    text("args", index, function["arguments"])
            if choice.get("finish_reason"):
                out.append(("finish", choice["finish_reason"]))
        if payload.get("usage"):
            out.append(("usage", json.dumps(payload["usage"], sort_keys=True)))
    return out


def check_chat_payloads(payloads: Iterable[Any]) -> ChatCheck:
    """Run the strict chat checker over JSON payloads."""
    checker = ChatStreamChecker()
    for payload in payloads:
        if payload == "[DONE]":
            checker.feed_done()
        else:
            checker.feed(payload)
    return checker.finish()


def strict_chat_violations(check: ChatCheck) -> list[str]:
    """Violations; a stream ended by an error payload passes if it is readable and [DONE]-ed."""
    if check.violations:
        return check.violations
    if check.error is not None:
        if not check.error.get("message"):
            return ["error payload without a message"]
        return [] if check.done else ["no [DONE] after the error payload"]
    return [] if check.ok else ["stream not completed"]


def _usage_view(usage: Any) -> tuple[Any, ...] | None:
    if not isinstance(usage, dict):
        return None
    return tuple(usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens"))


def stream_view(check: ChatCheck) -> tuple[Any, ...]:
    """The stream joined (by the checker), in the terms of a non-streaming completion."""
    if check.error is not None:
        return ("error", check.error.get("message"))
    if len(check.choices) != 1:
        return ("choices", len(check.choices))
    choice = check.choices[0]
    return (
        choice.role,
        choice.content,
        choice.reasoning,
        tuple((call.name, call.arguments) for call in choice.tool_calls),
        choice.finish_reason,
        _usage_view(check.usage),
    )


def sdk_view(result: SDKResult) -> tuple[Any, ...]:
    """The SDK's accumulated stream in the same terms as ``stream_view``."""
    if result.error is not None:
        return ("error", result.error)
    return completion_view(result.completion or {"choices": [{"message": {}}]})


def completion_view(body: dict[str, Any]) -> tuple[Any, ...]:
    """A non-streaming body in the same terms as ``stream_view``."""
    if body.get("error"):
        return ("error", body["error"].get("message"))
    (choice,) = body["choices"]
    message = choice["message"]
    return (
        message.get("role"),
        message.get("content") or "",
        message.get("reasoning") or message.get("reasoning_content") or "",
        tuple(
            (call["function"]["name"], call["function"]["arguments"])
            for call in message.get("tool_calls") or []
        ),
        choice.get("finish_reason"),
        _usage_view(body.get("usage")),
    )


class ChatTally(Tally):
    """``Tally``, with whitespace-collapsed examples; ``fast_matches_reference``: the same
    frames and non-streaming completion from both parsers."""

    def note(self, text: str) -> None:
        text = " ".join(text.split())
        if len(self.examples) < 5:
            self.examples.append(shorten(text))


def _outcome(run: Callable[[], Any]) -> Any:
    """``run()``, or what it raised (type and message), so both parsers can be compared."""
    try:
        return run()
    except Exception as exc:
        return ("raised", type(exc).__name__, str(exc))


def parser_difference(
    output: SyntheticOutput,
    split: int | Sequence[int] | random.Random | str,
    *,
    options: ChatOptions = DEFAULT_CHAT_OPTIONS,
    encoding: Any = None,
) -> str | None:
    """First difference between the chat machine's frames of ``output`` with the reference
    and the fast parser (then between their non-streaming completions), or None."""
    encoding = encoding or default_encoding()
    streams, bodies = [], []
    for parser in ("reference", "fast"):
        chosen = dataclasses.replace(options, parser=parser)
        streams.append(
            _outcome(
                functools.partial(
                    chat_stream, output, copy_split(split), options=chosen, encoding=encoding
                )
            )
        )
        bodies.append(
            _outcome(
                functools.partial(chat_nonstreaming, output, options=chosen, encoding=encoding)
            )
        )
    found = first_difference(streams[0], streams[1]) if streams[0] != streams[1] else None
    if found is None and bodies[0] != bodies[1]:
        found = f"non-streaming: reference {bodies[0]!r:.300} / fast {bodies[1]!r:.300}"
    return found


def judge_chat_output(
    output: SyntheticOutput,
    impl: str,
    tally: ChatTally,
    *,
    encoding: Any = None,
    compare_parsers: bool = True,
) -> int:
    """Stream ``output`` with every split and add the verdicts to ``tally``; returns streams.

    ``compare_parsers`` (ours only) also counts ``fast_matches_reference``.
    """
    splits = splits_for(output)
    try:
        expected: tuple[Any, ...] = completion_view(
            chat_nonstreaming(output, impl=impl, encoding=encoding)
        )
    except Exception as exc:  # the baseline's non-streaming path can raise
        expected = ("raised", repr(exc))
    reference: list[tuple[Any, ...]] | None = None
    for split in splits:
        label = split if isinstance(split, (int, str)) else "random"
        where = f"seed {output.seed} ({output.name}) split {label}"
        if compare_parsers and impl == "ours":
            found = parser_difference(output, copy_split(split), encoding=encoding)
            tally.fast_matches_reference = (tally.fast_matches_reference or 0) + (found is None)
            if found:
                tally.note(f"{where}: parsers: {found}")
        try:
            payloads = chat_stream(output, split, impl=impl, encoding=encoding)
        except Exception as exc:
            tally.raised += 1
            tally.note(f"{where}: raised {exc!r}")
            continue
        visible = chat_visible(payloads)
        if reference is None:
            reference = visible
        if visible == reference:
            tally.identical += 1
        else:
            tally.note(f"{where}: differs from 1")
        check = check_chat_payloads(payloads)
        joined = stream_view(check)
        try:
            sdk = sdk_accumulate_chat(payloads)
            tally.sdk_accepted += 1
            if sdk_view(sdk) == joined:
                tally.final_matches_stream += 1
            else:
                tally.note(f"{where}: SDK completion != the stream joined")
        except SDKRejected as exc:
            tally.note(f"{where}: SDK rejects: {exc}")
        violations = strict_chat_violations(check)
        if not violations:
            tally.strict_passed += 1
        else:
            tally.note(f"{where}: {violations[0]}")
        if joined == expected:
            tally.nonstreaming_matches += 1
        else:
            tally.note(f"{where}: stream != non-streaming")
    return len(splits)


def run_chat_check(
    outputs: Iterable[SyntheticOutput],
    impls: Sequence[str] | None = None,
    progress: Callable[[], None] | None = None,
    *,
    encoding: Any = None,
) -> tuple[int, int, dict[str, ChatTally]]:
    """``(outputs, streams, tallies)`` over ``outputs`` for each implementation (default: ours
    and every registered one)."""
    impls = ("ours", *CHAT_IMPLS) if impls is None else impls
    tallies = {impl: ChatTally() for impl in impls}
    count = streams = 0
    for output in outputs:
        count += 1
        n = 0
        for impl in impls:
            n = judge_chat_output(output, impl, tallies[impl], encoding=encoding)
        streams += n
        if progress:
            progress()
    return count, streams, tallies


__all__ = [
    "CHAT_COUNTS",
    "ChatTally",
    "chat_nonstreaming",
    "chat_stream",
    "chat_visible",
    "check_chat_payloads",
    "judge_chat_output",
    "parser_difference",
    "register_chat_impl",
    "run_chat_check",
]
