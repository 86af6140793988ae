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

Lifecycle, fast path, facts loop, errors and token accounting: ``turn.Turn`` (``Stage``,
``LifecycleError``: ``feed`` or ``fail`` before ``start`` and a second ``start`` raise, as
on the Responses machine; ``start`` returns the role chunk). A Harmony parse error, a
function call without a name (``functions.`` and blanks), an unknown finish reason or an
internal error ends the stream with the chunks built so far, an error payload and ``DONE``;
nothing escapes ``feed`` and nothing follows ``DONE``. ``completion()`` (``final_response``:
the same, or None) is the non-streaming ``chat.completion``, assembled from exactly what was
streamed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from openai.types.chat import ChatCompletion

from . import chat_chunks as cc
from .chat_chunks import DONE, ChatHeader, ChatStreamError, Frame
from .config import Parser, StreamConfig
from .errors import ChatGenerationError, LifecycleError, TurnError
from .facts import MessageOpened
from .items import IdFactory, ItemKind, PreambleRoute
from .turn import OpenMessage, Stage, Status, Turn

ChatPreambles = Literal["content", "reasoning", "drop"]
ReasoningField = Literal["reasoning", "reasoning_content"]
_PREAMBLE_ROUTES: dict[str, PreambleRoute] = {
    "content": "commentary",
    "reasoning": "reasoning",
    "drop": "drop",
}


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
    ``StreamConfig.parser`` (``differential.chat`` compares them).
    """

    reasoning_field: ReasoningField = "reasoning"
    preambles: ChatPreambles = "content"
    message_separator: str = "\n\n"
    parser: Parser = "fast"

    @classmethod
    def from_config(cls, config: StreamConfig, **choices: Any) -> ChatOptions:
        """The options of ``config`` (preambles, parser) plus the chat rendering ``choices``.

        Preambles the Responses stream drops are dropped; the others go to ``content``.
        """
        preambles: ChatPreambles = "drop" if config.preambles == "drop" else "content"
        return cls(preambles=preambles, parser=config.parser, **choices)


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
        return f"call_{self._id_suffix()}_{index}"

    def id_factory(self) -> IdFactory:
        """Ids derived from the completion id: ``{prefix}_{suffix}_{n}``, n = 0, 1, 2, ...

        The default ``new_id`` of a chat machine: its n-th tool call's id is ``call_id(n)``.
        """
        suffix = self._id_suffix()
        counter = itertools.count()
        return lambda prefix: f"{prefix}_{suffix}_{next(counter)}"

    def _id_suffix(self) -> str:
        return self.completion_id.split("-", 1)[-1]


@dataclass(slots=True)
class _Run:
    """Consecutive text of one field or tool call within one engine response: one chunk.

    ``key`` is the field name or the tool-call index; ``call_id`` and ``name`` are set on
    the run that opens a tool call (its first delta).
    """

    key: str | int
    text: str
    call_id: str | None = None
    name: str | None = None


#: What the chat machine's hooks append: frames, and text runs ``_rendered`` makes chunks of.
ChatPart = Frame | _Run


class ChatChunkMachine(Turn[Frame, ChatPart]):
    """Turns one gpt-oss generation into Chat Completions stream frames."""

    #: An unknown finish reason ends the stream with the text streamed so far (no item to
    #: close: Responses' failed item also gets the text the parser settles at the end).
    _eos_on_failure = False

    def __init__(
        self,
        context: ChatContext,
        *,
        encoding: Any,
        options: ChatOptions = DEFAULT_CHAT_OPTIONS,
        new_id: IdFactory | None = None,
    ) -> None:
        super().__init__(
            encoding=encoding,
            parser=options.parser,
            preambles=_PREAMBLE_ROUTES[options.preambles],
            log_name=f"chat completion {context.completion_id}",
        )
        self.context = context
        self.options = options
        self._new_id = new_id or context.id_factory()
        self._header = ChatHeader(context.completion_id, context.model, context.created)
        reasoning = options.reasoning_field
        self._fields = {
            ItemKind.MESSAGE: "content",
            ItemKind.REASONING: reasoning,
            ItemKind.TOOL_CALL: reasoning,  # a built-in tool call: not the client's
            ItemKind.WEB_SEARCH: reasoning,
        }
        self._last_kind: ItemKind | None = None  # of the last message that ended the turn
        # What the client has received, for the separator and the non-streaming view.
        self._texts: dict[str, list[str]] = {"content": [], reasoning: []}
        self._calls: list[tuple[str, str, list[str]]] = []
        self._needs_separator: set[str] = set()
        self.finish_reason: str | None = None
        self.error: ChatStreamError | None = None

    # -- public API ---------------------------------------------------------------------

    @property
    def final_response(self) -> ChatCompletion | None:
        """The non-streaming ``chat.completion`` once the stream finished without an error."""
        if self.error is not None or self.finish_reason is None:
            return None
        return self.completion()

    def completion(self) -> ChatCompletion:
        """The non-streaming ``chat.completion``: what the stream sent, joined.

        Raises ``ChatGenerationError`` when the stream ended with an error payload, and
        ``LifecycleError`` (a ``RuntimeError``) before the stream finished.
        """
        if self.error is not None:
            raise ChatGenerationError(self.error)
        if not self.finished or self.finish_reason is None:
            raise LifecycleError("completion() before the generation finished")
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

    # -- turn -> runs -> frames -----------------------------------------------------------

    def _started(self) -> list[Frame]:
        """The role chunk."""
        return [cc.role_chunk(self._header)]

    def _opened(self, message: OpenMessage[Frame], out: list[ChatPart]) -> None:
        kind = message.kind
        if kind is ItemKind.FUNCTION_CALL:
            index = len(self._calls)
            call_id = self._new_id("call")
            self._calls.append((call_id, message.name, []))
            message.target = index
            message.render = self._renderer(index)
            out.append(_Run(index, "", call_id, message.name))
        elif kind is not ItemKind.NONE:
            field = self._fields[kind]
            if self._texts[field]:
                self._needs_separator.add(field)
            message.target = field
            message.render = self._renderer(field)

    def _renderer(self, key: str | int) -> Callable[[str], Frame]:
        """The fast path's chunk for one token's text of the message feeding ``key``."""
        header, sent = self._header, self._sent
        if isinstance(key, int):
            index = key
            return lambda text: cc.tool_call_chunk(header, index, sent(index, text), None, None)
        field = key
        return lambda text: cc.text_chunk(header, field, sent(field, text))

    def _text(self, message: OpenMessage[Frame], text: str, out: list[ChatPart]) -> None:
        key = message.target
        if key is None:
            return
        text = self._sent(key, text)
        last = out[-1] if out else None
        if type(last) is _Run and last.key == key:
            last.text += text
        else:
            out.append(_Run(key, text))

    def _sent(self, key: str | int, text: str) -> str:
        """Record ``text`` as sent to ``key``; returns it with the separator it needs."""
        if isinstance(key, int):
            self._calls[key][2].append(text)
            return text
        if key in self._needs_separator:
            self._needs_separator.discard(key)
            text = self.options.message_separator + text
        self._texts[key].append(text)
        return text

    def _closed(self, message: OpenMessage[Frame], status: Status, out: list[ChatPart]) -> None:
        self._last_kind = message.kind
        self._needs_separator.clear()

    def _nameless_call(self, fact: MessageOpened) -> Exception:
        """Chat's wording: no position (Responses reports an invalid Harmony sequence)."""
        return TurnError(f"function call without a name (recipient {fact.recipient!r})")

    def _completed(self, status: Status, finish_reason: str | None, out: list[ChatPart]) -> None:
        if finish_reason == "length":
            self.finish_reason = "length"
        elif self._last_kind is ItemKind.FUNCTION_CALL:
            self.finish_reason = "tool_calls"
        else:
            self.finish_reason = "stop"

    def _failed(self, message: str, code: str, out: list[ChatPart]) -> None:
        self.error = cc.stream_error(message, code)

    def _usage(self) -> Any:
        return cc.completion_usage(
            self.context.num_prompt_tokens, self._output_tokens, self._reasoning_tokens
        )

    def _rendered(self, out: list[ChatPart]) -> list[Frame]:
        """Runs become chunks; at the end, the finish (and usage) chunk or the error, DONE."""
        header = self._header
        frames: list[Frame] = []
        for part in out:
            if not isinstance(part, _Run):
                frames.append(part)
            elif isinstance(part.key, int):
                frames.append(
                    cc.tool_call_chunk(header, part.key, part.text, part.call_id, part.name)
                )
            else:
                frames.append(cc.text_chunk(header, part.key, part.text))
        if self._stage is Stage.DONE:
            if self.error is not None:
                frames.append(self.error)
            else:
                frames.append(cc.finish_chunk(header, self.finish_reason))
                if self.context.include_usage:
                    frames.append(cc.usage_chunk(header, self._usage()))
            frames.append(DONE)
        return frames


def build_chat_completion(
    context: ChatContext,
    token_ids: Sequence[int],
    finish_reason: str | None,
    *,
    encoding: Any,
    options: ChatOptions = DEFAULT_CHAT_OPTIONS,
    new_id: IdFactory | None = None,
) -> ChatCompletion:
    """The non-streaming ``chat.completion`` for a whole generation: the same machine, one feed.

    Raises ``ChatGenerationError`` (its ``error`` is the payload to send) when the stream
    would have ended with an error.
    """
    machine = ChatChunkMachine(context, options=options, encoding=encoding, new_id=new_id)
    machine.start()
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
