# SPDX-License-Identifier: Apache-2.0
"""Chat Completions chunk machine: engine token batches in, ``chat.completion.chunk`` frames out.

Sans-IO and pure, fed by the same ``HarmonyDriver`` facts as the Responses machine; one
instance per request, ``feed`` once per engine response. The frames of one stream:

1. ``start``: one chunk with ``delta.role = "assistant"`` (``feed`` sends it if needed);
2. per engine response, its deltas in token order, one chunk per run of one field:
   ``reasoning`` (analysis channel, built-in tool calls; or ``reasoning_content``),
   ``content`` (final answer; preambles too, or as reasoning, or dropped) and
   ``tool_calls`` (a ``functions.NAME`` recipient on any channel: index 0, 1, ... in order,
   the id, ``type`` and name in the call's first delta, sent when its header completes,
   then the arguments). A field continued by a later message is separated by
   ``message_separator``. Nothing is held back for a later response;
3. at the end: exactly one finish chunk (``"length"`` on a token limit, ``"tool_calls"`` when
   the turn ends in a function call, ``"stop"`` otherwise), the usage chunk when asked
   (``include_usage``), then ``DONE``.

A Harmony parse error, a function call without a name, an unknown finish reason or an
internal error ends the stream with the chunks built so far, an error payload and ``DONE``;
nothing escapes ``feed`` and nothing follows ``DONE``. ``completion()`` is the non-streaming
``chat.completion``, assembled from exactly what was streamed.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from openai.types.chat import ChatCompletion
from openai_harmony import Role

from . import chat_chunks as cc
from .chat_chunks import DONE, ChatHeader, ChatStreamError, Frame
from .config import Parser
from .fast_harmony import new_driver
from .harmony_driver import (
    NOT_CONTENT,
    ContentDelta,
    Fact,
    HarmonyDriver,
    HarmonyStreamError,
    MessageClosed,
    MessageOpened,
    TruncatedHeaderError,
)

logger = logging.getLogger(__name__)

FUNCTION_PREFIX = "functions."
ChatPreambles = Literal["content", "reasoning", "drop"]
ReasoningField = Literal["reasoning", "reasoning_content"]
_ENGINE_FINISH = frozenset((None, "stop", "length", "tool_calls"))


@dataclass(frozen=True)
class ChatOptions:
    """Output choices of the chat machine.

    ``reasoning_field``: the delta/message field for reasoning (``reasoning``, as
    TensorRT-LLM's and vLLM's gpt-oss path, or ``reasoning_content``).
    ``preambles``: commentary messages without a recipient go to ``content`` (visible, the
    default), to ``reasoning``, or are dropped.
    ``message_separator``: put between two messages' texts in one field.
    ``parser``: the Harmony driver, ``"fast"`` (``core.fast_harmony``, the default) or
    ``"reference"`` (openai_harmony, one token at a time): the same frames, as
    ``StreamConfig.parser`` (``testing.chat_differential`` compares them).
    """

    reasoning_field: ReasoningField = "reasoning"
    preambles: ChatPreambles = "content"
    message_separator: str = "\n\n"
    parser: Parser = "fast"


DEFAULT_CHAT_OPTIONS = ChatOptions()


@dataclass
class ChatContext:
    """What a chat request fixes for the whole stream. Ids and time come from the caller."""

    completion_id: str
    model: str
    created: int
    num_prompt_tokens: int = 0
    include_usage: bool = False

    def call_id(self, index: int) -> str:
        """The id of tool call ``index``: derived from the completion id, so unique per call."""
        suffix = self.completion_id.split("-", 1)[-1]
        return f"call_{suffix}_{index}"


class _Kind(enum.Enum):
    CONTENT = "content"
    REASONING = "reasoning"
    TOOL = "tool"
    NONE = "none"


class ChatGenerationError(RuntimeError):
    """The generation cannot become a chat completion; ``error`` is the payload a client gets."""

    def __init__(self, error: ChatStreamError) -> None:
        super().__init__(error.error.message)
        self.error = error


class ChatChunkMachine:
    """Turns one gpt-oss generation into Chat Completions stream frames."""

    def __init__(
        self,
        context: ChatContext,
        *,
        encoding: Any,
        options: ChatOptions = DEFAULT_CHAT_OPTIONS,
    ) -> None:
        self.context = context
        self.options = options
        self._header = ChatHeader(context.completion_id, context.model, context.created)
        self._driver: HarmonyDriver | None = new_driver(encoding, options.parser)
        self._fields = {_Kind.CONTENT: "content", _Kind.REASONING: options.reasoning_field}
        # The open message: its kind, the field or tool index it feeds, where it opened.
        self._kind = _Kind.NONE
        self._key: str | int | None = None
        self._opened_at = 0
        self._recipient: str | None = None
        self._last_kind: _Kind | None = None  # of the last message that ended the turn
        # What the client has received, for the separator and the non-streaming view.
        self._texts: dict[str, list[str]] = {"content": [], options.reasoning_field: []}
        self._calls: list[tuple[str, str, list[str]]] = []
        self._needs_separator: set[str] = set()
        self._output_tokens = 0
        self._reasoning_tokens = 0
        self._started = False
        self.finished = False
        self.finish_reason: str | None = None
        self.error: ChatStreamError | None = None

    # -- public API ---------------------------------------------------------------------

    def start(self) -> list[Frame]:
        """The role chunk (once)."""
        if self._started or self.finished:
            return []
        self._started = True
        return [cc.role_chunk(self._header)]

    def feed(
        self,
        token_ids: Sequence[int],
        *,
        finished: bool = False,
        finish_reason: str | None = None,
    ) -> list[Frame]:
        """Frames for one engine response (``token_ids`` = its ``token_ids_diff``)."""
        if self.finished:
            return []
        out: list[Frame] = self.start()
        runs: list[list[Any]] = []
        try:
            driver = self._driver
            text = (
                driver.take_content(token_ids[0])
                if not finished and len(token_ids) == 1
                else NOT_CONTENT
            )
            if text is not NOT_CONTENT:
                # One content token per engine response (stream_interval 1): no facts.
                if text:
                    self._text(text, runs)
            else:
                facts: list[Fact] = []
                try:
                    if len(token_ids):
                        driver.feed(token_ids, facts)
                    if finished and finish_reason in _ENGINE_FINISH:
                        try:
                            driver.finish(facts)  # same facts: settled text joins the last delta
                        except TruncatedHeaderError:
                            pass  # cut inside a header: no message was opened for it
                finally:
                    self._apply(facts, runs)
                if finished:
                    self._finish(finish_reason, runs)
        except HarmonyStreamError as exc:
            self._output_tokens = exc.token_index + 1  # the offending token counts
            self._fail(f"invalid Harmony token sequence: {exc}", runs)
        except _TurnError as exc:
            self._fail(str(exc), runs)
        except Exception as exc:
            logger.exception("chat completion %s: internal error", self.context.completion_id)
            self._fail(f"internal error: {type(exc).__name__}: {exc}", runs)
        self._frames(runs, out)
        return out

    def fail(self, message: str, code: str = "server_error") -> list[Frame]:
        """End the stream now with an error payload and ``DONE``."""
        if self.finished:
            return []
        out = self.start()
        runs: list[list[Any]] = []
        self._fail(message, runs, code)
        self._frames(runs, out)
        return out

    def completion(self) -> ChatCompletion:
        """The non-streaming ``chat.completion``: what the stream sent, joined.

        Raises ``ChatGenerationError`` when the stream ended with an error payload, and
        ``RuntimeError`` before the stream finished.
        """
        if self.error is not None:
            raise ChatGenerationError(self.error)
        if not self.finished or self.finish_reason is None:
            raise RuntimeError("completion() before the generation finished")
        content = self._texts["content"]
        reasoning = self._texts[self.options.reasoning_field]
        return cc.completion(
            self._header,
            content="".join(content) if content else None,
            reasoning="".join(reasoning) if reasoning else None,
            reasoning_field=self.options.reasoning_field,
            tool_calls=[(cid, name, "".join(args)) for cid, name, args in self._calls],
            finish_reason=self.finish_reason,
            usage=self._usage(),
        )

    # -- facts -> runs --------------------------------------------------------------------
    # A run is [key, text, call_id, name]: key is a field name or a tool-call index.

    def _apply(self, facts: list[Fact], runs: list[list[Any]]) -> None:
        for fact in facts:
            if type(fact) is ContentDelta:
                self._text(fact.text, runs)
            elif type(fact) is MessageOpened:
                self._open(fact, runs)
            else:
                self._close(fact, runs)

    def _text(self, text: str, runs: list[list[Any]]) -> None:
        key = self._key
        if key is None:
            return
        if type(key) is int:
            self._calls[key][2].append(text)
        else:
            if key in self._needs_separator:
                self._needs_separator.discard(key)
                text = self.options.message_separator + text
            self._texts[key].append(text)
        if runs and runs[-1][0] == key:
            runs[-1][1] += text
        else:
            runs.append([key, text, None, None])

    def _open(self, fact: MessageOpened, runs: list[list[Any]]) -> None:
        kind = self._classify(fact.channel, fact.recipient, fact.role)
        self._kind, self._recipient, self._opened_at = kind, fact.recipient, fact.at
        if kind is _Kind.TOOL:
            name = fact.recipient[len(FUNCTION_PREFIX) :]
            if not name:
                raise _TurnError(f"function call without a name (recipient {fact.recipient!r})")
            index = len(self._calls)
            call_id = self.context.call_id(index)
            self._calls.append((call_id, name, []))
            self._key = index
            runs.append([index, "", call_id, name])
        elif kind is _Kind.NONE:
            self._key = None
        else:
            self._key = self._fields[kind]
            if self._texts[self._key]:
                self._needs_separator.add(self._key)

    def _close(self, fact: MessageClosed, runs: list[list[Any]]) -> None:
        kind = self._kind
        if kind is _Kind.REASONING and not self._recipient:
            self._reasoning_tokens += fact.at - self._opened_at
        if kind is not _Kind.NONE:
            self._last_kind = kind
        self._key = None
        self._kind = _Kind.NONE
        self._needs_separator.clear()

    def _classify(self, channel: str | None, recipient: str | None, role: Role | None) -> _Kind:
        if role is not Role.ASSISTANT:
            return _Kind.NONE
        if recipient:
            if recipient.startswith(FUNCTION_PREFIX):
                return _Kind.TOOL
            return _Kind.REASONING  # a built-in tool call (python, browser.*): not the client's
        if channel == "commentary":
            preambles = self.options.preambles
            if preambles == "drop":
                return _Kind.NONE
            return _Kind.REASONING if preambles == "reasoning" else _Kind.CONTENT
        if channel == "analysis":
            return _Kind.REASONING
        return _Kind.CONTENT

    # -- terminal -------------------------------------------------------------------------

    def _finish(self, finish_reason: str | None, runs: list[list[Any]]) -> None:
        if finish_reason not in _ENGINE_FINISH:
            raise _TurnError(f"generation ended with finish reason {finish_reason!r}")
        self._output_tokens = self._driver.tokens_fed
        if finish_reason == "length":
            reason = "length"
        elif self._last_kind is _Kind.TOOL:
            reason = "tool_calls"
        else:
            reason = "stop"
        self.finish_reason = reason
        runs.append([_FINISH, reason, None, None])
        if self.context.include_usage:
            runs.append([_USAGE, "", None, None])
        self._end()

    def _fail(self, message: str, runs: list[list[Any]], code: str = "server_error") -> None:
        self.error = cc.stream_error(message, code)
        runs.append([_ERROR, "", None, None])
        self._end()

    def _end(self) -> None:
        self.finished = True
        self._driver = None  # release the parser: per-request state ends here

    def _usage(self) -> Any:
        return cc.completion_usage(
            self.context.num_prompt_tokens, self._output_tokens, self._reasoning_tokens
        )

    def _frames(self, runs: list[list[Any]], out: list[Frame]) -> None:
        header = self._header
        for key, text, call_id, name in runs:
            if type(key) is int:
                out.append(cc.tool_call_chunk(header, key, text, call_id, name))
            elif key is _FINISH:
                out.append(cc.finish_chunk(header, text))
            elif key is _USAGE:
                out.append(cc.usage_chunk(header, self._usage()))
            elif key is _ERROR:
                out.append(self.error)
            else:
                out.append(cc.text_chunk(header, key, text))
        if self.finished:
            out.append(DONE)


class _TurnError(Exception):
    """The turn cannot be completed (no name on a call, unknown finish reason)."""


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


_FINISH, _USAGE, _ERROR = _Marker("finish"), _Marker("usage"), _Marker("error")


def build_chat_completion(
    context: ChatContext,
    token_ids: Sequence[int],
    finish_reason: str | None,
    *,
    encoding: Any,
    options: ChatOptions = DEFAULT_CHAT_OPTIONS,
) -> ChatCompletion:
    """The non-streaming ``chat.completion`` for a whole generation: the same machine, one feed.

    Raises ``ChatGenerationError`` (its ``error`` is the payload to send) when the stream
    would have ended with an error.
    """
    machine = ChatChunkMachine(context, options=options, encoding=encoding)
    machine.feed(token_ids, finished=True, finish_reason=finish_reason)
    return machine.completion()


__all__ = [
    "DEFAULT_CHAT_OPTIONS",
    "DONE",
    "ChatChunkMachine",
    "ChatContext",
    "ChatGenerationError",
    "ChatOptions",
    "build_chat_completion",
]
