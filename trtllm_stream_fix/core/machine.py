# SPDX-License-Identifier: Apache-2.0
"""Responses event machine: engine token batches in, OpenAI Responses events out.

Sans-IO and pure: one instance per request. The encoding and the id factory are handed in
(``new_id=None``: ids derived from the response id), the clock with the context
(``ResponseContext.clock``). The non-streaming response is this
machine fed the whole token list in one call (``nonstreaming.build_response``), so a stream's
final response and the non-streaming response cannot diverge.

Lifecycle (``Stage``)::

    NEW --start()--> STREAMING --feed(..., finished=True) | an error | fail()--> DONE

``feed`` or ``fail`` before ``start`` and a second ``start`` raise ``LifecycleError`` (a
programming error). In DONE, ``feed`` and ``fail`` return ``[]``: nothing follows the
terminal event, and the parser is released.

Grammar of the emitted stream (every event's ``sequence_number`` counts 0, 1, 2, ...)::

    stream   := response.created response.in_progress item* terminal
    item     := output_item.added body output_item.done
    body     := content_part.added <text>.delta* <text>.done content_part.done  (message,
                reasoning, built-in tool call other than the browser)
              | function_call_arguments.delta* function_call_arguments.done   (function call)
              | (nothing)                                                      (web search)
    terminal := response.completed | response.incomplete | error response.failed

When (``items.KINDS`` says what each kind opens and closes):

- ``response.created``, ``response.in_progress``: ``start()``.
- ``output_item.added`` (and ``content_part.added``): when a message header ends, for the
  streamed kinds; when the message ends, for built-in tool calls (their text in one delta).
- ``<text>.delta``: once per engine response and open item, the text its tokens added.
- ``<text>.done``, ``content_part.done``, ``output_item.done``: when the message ends (stop
  token: ``completed``), when the stream ends inside it (``completed`` for a stop,
  ``incomplete`` for a token limit), or when the stream fails (``incomplete``).
- ``response.completed``: finish reason ``stop``, ``tool_calls`` or None, even inside a header.
- ``response.incomplete`` (``max_output_tokens``): finish reason ``length`` (or
  ``response.completed`` with status incomplete in upstream-parity mode).
- ``error`` + ``response.failed``: an invalid or undecodable token (naming it and its
  position), a function call without a name, any other finish reason, ``fail()``, or an
  internal error. Errors never escape ``feed``.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from typing import Any

from openai.types.responses import Response

from . import events as ev
from .config import DEFAULT_CONFIG, StreamConfig
from .context import ResponseContext
from .fast_harmony import new_driver
from .harmony_driver import (
    NOT_CONTENT,
    ContentDelta,
    Fact,
    HarmonyDriver,
    HarmonyStreamError,
    MessageOpened,
    TruncatedHeaderError,
)
from .items import (
    KINDS,
    IdFactory,
    ItemKind,
    ItemRecord,
    KindSpec,
    classify,
    derived_ids,
    function_name,
)
from .response import build_response, typed_tools, usage

logger = logging.getLogger(__name__)

COMPLETED_REASONS = frozenset((None, "stop", "tool_calls"))


def finish_status(finish_reason: str | None) -> str:
    """Response status for an engine finish reason: only ``length`` is a token limit."""
    if finish_reason == "length":
        return "incomplete"
    return "completed" if finish_reason in COMPLETED_REASONS else "failed"


class Stage(enum.Enum):
    """Where a machine is in its lifecycle."""

    NEW = "new"  # built: start() comes next
    STREAMING = "streaming"  # started: feed() once per engine response
    DONE = "done"  # the terminal event was emitted: nothing follows


class LifecycleError(RuntimeError):
    """A machine method was called in a stage that does not allow it (a programming error)."""


class _OpenMessage:
    """The Harmony message being parsed: its deltas and the item it feeds (if announced)."""

    __slots__ = ("chunks", "delta", "kind", "opened_at", "phase", "recipient", "record", "spec")

    def __init__(self, kind: ItemKind, phase: str | None, recipient: str | None, at: int):
        self.kind = kind
        self.spec: KindSpec | None = KINDS.get(kind)
        self.phase = phase
        self.recipient = recipient
        self.opened_at = at
        self.record: ItemRecord | None = None
        self.delta: Callable[[str, int], Any] | None = None  # the record's delta builder
        self.chunks: list[str] = []


class ResponsesEventMachine:
    """Turns one gpt-oss generation into Responses stream events."""

    def __init__(
        self,
        context: ResponseContext,
        *,
        encoding: Any,
        config: StreamConfig = DEFAULT_CONFIG,
        new_id: IdFactory | None = None,
        first_sequence_number: int = 0,
    ) -> None:
        self.context = context
        self.config = config
        self._new_id = new_id or derived_ids(context.response_id)
        self._driver: HarmonyDriver | None = new_driver(encoding, config.parser)
        self._tools = typed_tools(context.tools)
        self._items: list[ItemRecord] = []
        self._message: _OpenMessage | None = None
        self._seq = first_sequence_number
        self._output_tokens = 0
        self._reasoning_tokens = 0
        self._stage = Stage.NEW
        self.final_response: Response | None = None

    # -- public API ---------------------------------------------------------------------

    @property
    def stage(self) -> Stage:
        return self._stage

    @property
    def finished(self) -> bool:
        """Whether the terminal event was emitted."""
        return self._stage is Stage.DONE

    @property
    def items(self) -> list[ItemRecord]:
        return self._items

    def start(self) -> list[Any]:
        """``response.created`` and ``response.in_progress``: NEW -> STREAMING."""
        if self._stage is not Stage.NEW:
            raise LifecycleError(f"start() in stage {self._stage.value!r}: a stream starts once")
        self._stage = Stage.STREAMING
        snapshot = build_response(self.context, self._tools, [], status="in_progress")
        return [
            ev.lifecycle("response.created", snapshot, self._next()),
            ev.lifecycle("response.in_progress", snapshot, self._next()),
        ]

    def feed(
        self,
        token_ids: Sequence[int],
        *,
        finished: bool = False,
        finish_reason: str | None = None,
    ) -> list[Any]:
        """Events for one engine response (``token_ids`` = its ``token_ids_diff``).

        ``token_ids`` is any int sequence (list, tuple, numpy array). ``finished`` marks the
        last engine response; ``finish_reason`` is its reason.
        """
        if self._stage is not Stage.STREAMING:
            return self._refuse("feed")
        out: list[Any] = []
        driver = self._driver
        try:
            if not finished and len(token_ids) == 1:
                delta = driver.take_content(token_ids[0])
                if delta is not NOT_CONTENT:
                    # One content token per engine response (stream_interval 1): no facts,
                    # and ``_on_delta`` inlined.
                    if delta:
                        message = self._message
                        message.chunks.append(delta)
                        build = message.delta
                        if build is not None:
                            seq = self._seq
                            self._seq = seq + 1
                            out.append(build(delta, seq))
                    return out
            status = finish_status(finish_reason)
            facts: list[Fact] = []
            try:
                driver.feed(token_ids, facts)
                if finished:
                    try:
                        driver.finish(facts)
                    except TruncatedHeaderError:
                        pass  # no item was opened for the cut header
            finally:
                self._apply(facts, out, "completed" if status == "completed" else "incomplete")
            if finished:
                self._finish(status, finish_reason, out)
        except HarmonyStreamError as exc:
            # The offending token counts; tokens after it were never parsed.
            message = f"invalid Harmony token sequence: {exc}"
            out.extend(self._fail_events(message, output_tokens=exc.token_index + 1))
        except Exception as exc:
            logger.exception("response %s: internal error", self.context.response_id)
            out.extend(self._fail_events(f"internal error: {type(exc).__name__}: {exc}"))
        return out

    def fail(self, message: str, code: str = "server_error") -> list[Any]:
        """End the stream now with ``error`` + ``response.failed`` (open item incomplete)."""
        if self._stage is not Stage.STREAMING:
            return self._refuse("fail")
        return self._fail_events(message, code)

    # -- facts -> events ----------------------------------------------------------------

    def _refuse(self, method: str) -> list[Any]:
        if self._stage is Stage.NEW:
            raise LifecycleError(f"{method}() before start(): response.created must come first")
        return []  # DONE: nothing follows the terminal event

    def _next(self) -> int:
        seq = self._seq
        self._seq = seq + 1
        return seq

    def _apply(self, facts: list[Fact], out: list[Any], eos_status: str) -> None:
        """Events for ``facts``; ``eos_status`` is the status of a message closed by EOS."""
        for fact in facts:
            if type(fact) is ContentDelta:
                self._on_delta(fact.text, out)
            elif type(fact) is MessageOpened:
                self._open(fact, out)
            else:
                status = "completed" if fact.stop_token is not None else eos_status
                self._close(out, status, fact.at)

    def _on_delta(self, text: str, out: list[Any]) -> None:
        message = self._message
        message.chunks.append(text)
        build = message.delta
        if build is not None:  # the per-token path at stream_interval 1: _next inlined
            seq = self._seq
            self._seq = seq + 1
            out.append(build(text, seq))

    def _open(self, fact: MessageOpened, out: list[Any]) -> None:
        kind, phase = classify(fact.channel, fact.recipient, self.config, fact.role)
        if kind is ItemKind.FUNCTION_CALL and not function_name(fact.recipient):
            raise HarmonyStreamError(
                f"function call without a function name (recipient {fact.recipient!r}, "
                f"header ending at position {fact.at - 1})",
                fact.at - 1,
            )
        message = _OpenMessage(kind, phase, fact.recipient, fact.at)
        if message.spec is not None and message.spec.streamed:
            self._announce(message, out)
        self._message = message

    def _announce(self, message: _OpenMessage, out: list[Any]) -> ItemRecord:
        record = ItemRecord.open(
            message.kind, len(self._items), message.phase, message.recipient, self._new_id
        )
        self._items.append(record)
        message.record = record
        message.delta = ev.delta_builder(record)
        out.append(ev.item_added(record, self._next()))
        if message.spec.content_part:
            out.append(ev.part_added(record, self._next()))
        return record

    def _close(self, out: list[Any], status: str, at: int) -> None:
        """Close the open message's item with ``status``; ``at`` = tokens fed by then."""
        message, self._message = self._message, None
        if message is None or message.spec is None:
            return
        spec = message.spec
        if spec.reasoning_tokens:
            self._reasoning_tokens += at - message.opened_at
        text = "".join(message.chunks)
        record = message.record
        if record is None:  # announced at message end, its text in one delta
            record = self._announce(message, out)
            if spec.text_events and text:
                out.append(ev.delta(record, text, self._next()))
        record.text = text
        record.status = status
        if spec.text_events:
            out.append(ev.text_done(record, self._next()))
        if spec.content_part:
            out.append(ev.part_done(record, self._next()))
        out.append(ev.item_done(record, self._next()))

    # -- terminal -------------------------------------------------------------------------

    def _finish(self, status: str, finish_reason: str | None, out: list[Any]) -> None:
        self._output_tokens = self._driver.tokens_fed
        if status == "failed":
            message = f"generation ended with finish reason {finish_reason!r}"
            out.extend(self._fail_events(message))
        elif status == "completed":
            self._terminate(out, "response.completed", "completed")
        elif self.config.length_terminal == "incomplete":
            self._terminate(
                out, "response.incomplete", "incomplete", incomplete_reason="max_output_tokens"
            )
        else:
            self._terminate(
                out, "response.completed", "incomplete", incomplete_reason="max_output_tokens"
            )

    def _fail_events(
        self, message: str, code: str = "server_error", *, output_tokens: int | None = None
    ) -> list[Any]:
        """Close the open item as incomplete, then ``error`` + ``response.failed``.

        ``output_tokens`` defaults to the tokens the parser accepted.
        """
        out: list[Any] = []
        fed = self._driver.tokens_fed
        self._output_tokens = fed if output_tokens is None else output_tokens
        try:
            self._close(out, "incomplete", fed)
        except Exception:
            logger.exception("response %s: cannot close the open item", self.context.response_id)
        out.append(ev.error(message, code, self._next()))
        self._terminate(out, "response.failed", "failed", error=(code, message))
        return out

    def _terminate(
        self,
        out: list[Any],
        event_type: str,
        status: str,
        *,
        incomplete_reason: str | None = None,
        error: tuple[str, str] | None = None,
    ) -> None:
        self.final_response = build_response(
            self.context,
            self._tools,
            self._items,
            status=status,
            usage_=usage(
                self.context.num_prompt_tokens, self._output_tokens, self._reasoning_tokens
            ),
            incomplete_reason=incomplete_reason,
            error=error,
        )
        out.append(ev.lifecycle(event_type, self.final_response, self._next()))
        self._stage = Stage.DONE
        self._driver = None  # release the parser: per-request state ends here
