# SPDX-License-Identifier: Apache-2.0
"""Responses event machine: engine token batches in, OpenAI Responses events out.

Sans-IO and pure: one instance per request, ``feed`` once per engine response. It owns
output-index bookkeeping, item ids, content parts, delta coalescing, the final response and
the terminal event. Errors never escape ``feed``: they end the stream with ``error`` and
``response.failed``. Nothing is emitted after the terminal event.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from openai.types.responses import Response

from . import events as ev
from .config import DEFAULT_CONFIG, StreamConfig
from .context import ResponseContext
from .harmony_driver import (
    ContentDelta,
    Fact,
    HarmonyDriver,
    HarmonyStreamError,
    MessageClosed,
    MessageOpened,
    TruncatedHeaderError,
)
from .items import ItemKind, ItemRecord, classify, is_streamed
from .response import build_response, typed_tools, usage

logger = logging.getLogger(__name__)

COMPLETED_REASONS = frozenset((None, "stop", "tool_calls"))


def finish_status(finish_reason: str | None) -> str:
    """Response status for an engine finish reason: completed, incomplete or failed."""
    if finish_reason == "length":
        return "incomplete"
    return "completed" if finish_reason in COMPLETED_REASONS else "failed"


def message_text(message: Any) -> str:
    """The text of a Harmony message (its text content parts joined)."""
    return "".join(getattr(part, "text", "") for part in message.content)


class _OpenMessage:
    """The Harmony message being parsed: its deltas and the item it feeds (if streamed)."""

    __slots__ = ("chunks", "kind", "opened_at", "recipient", "record")

    def __init__(self, kind: ItemKind, recipient: str | None, at: int):
        self.kind = kind
        self.recipient = recipient
        self.opened_at = at
        self.record: ItemRecord | None = None
        self.chunks: list[str] = []


class ResponsesEventMachine:
    """Turns one gpt-oss generation into Responses stream events."""

    def __init__(
        self,
        context: ResponseContext,
        *,
        config: StreamConfig = DEFAULT_CONFIG,
        encoding: Any = None,
        first_sequence_number: int = 0,
    ) -> None:
        if encoding is None:
            from ..encoding import load_gpt_oss_encoding

            encoding = load_gpt_oss_encoding()
        self.context = context
        self.config = config
        self._driver: HarmonyDriver | None = HarmonyDriver(encoding)
        self._tools = typed_tools(context.tools)
        self._items: list[ItemRecord] = []
        self._message: _OpenMessage | None = None
        self._seq = first_sequence_number
        self._output_tokens = 0
        self._reasoning_tokens = 0
        self._started = False
        self.finished = False
        self.final_response: Response | None = None

    # -- public API ---------------------------------------------------------------------

    @property
    def items(self) -> list[ItemRecord]:
        return self._items

    def start(self) -> list[Any]:
        """``response.created`` and ``response.in_progress`` (once)."""
        if self._started or self.finished:
            return []
        self._started = True
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
        """Events for one engine response (``token_ids`` = its ``token_ids_diff``)."""
        if self.finished:
            return []
        out: list[Any] = []
        facts: list[Fact] = []
        try:
            if len(token_ids) == 1 and not finished and self._driver.is_content_token(token_ids[0]):
                # One content token per engine response (stream_interval 1): no facts.
                self._output_tokens += 1
                delta = self._driver.content_delta(token_ids[0])
                if delta:
                    self._on_delta(delta, out)
                return out
            if token_ids:
                self._output_tokens += len(token_ids)
                try:
                    self._driver.feed(token_ids, facts)
                finally:
                    self._apply(facts, out)
            if finished:
                self._finish(finish_reason, out)
        except HarmonyStreamError as exc:
            # Tokens after the offending one were never parsed: not output.
            self._output_tokens = exc.token_index + 1
            out.extend(self._fail_events(f"invalid Harmony token sequence: {exc}", "server_error"))
        except Exception as exc:
            logger.exception("response %s: internal error", self.context.response_id)
            out.extend(self._fail_events(f"internal error: {type(exc).__name__}: {exc}"))
        return out

    def fail(self, message: str, code: str = "server_error") -> list[Any]:
        """End the stream now with ``error`` + ``response.failed`` (open item incomplete)."""
        if self.finished:
            return []
        return self._fail_events(message, code)

    # -- facts -> events ----------------------------------------------------------------

    def _next(self) -> int:
        seq = self._seq
        self._seq = seq + 1
        return seq

    def _apply(self, facts: list[Fact], out: list[Any], eos_status: str = "completed") -> None:
        """Events for ``facts``; ``eos_status`` is the status of a message closed by EOS."""
        for fact in facts:
            if type(fact) is ContentDelta:
                self._on_delta(fact.text, out)
            elif type(fact) is MessageOpened:
                self._open(fact, out)
            else:
                self._close(fact, out, eos_status)

    def _on_delta(self, text: str, out: list[Any]) -> None:
        message = self._message
        message.chunks.append(text)
        if message.record is not None:
            out.append(ev.delta(message.record, text, self._next()))

    def _open(self, fact: MessageOpened, out: list[Any]) -> None:
        kind, phase = classify(fact.channel, fact.recipient, self.config, fact.role)
        message = _OpenMessage(kind, fact.recipient, fact.at)
        if is_streamed(kind, fact.recipient):
            record = ItemRecord.open(kind, len(self._items), phase, fact.recipient)
            self._items.append(record)
            message.record = record
            out.append(ev.item_added(record, self._next()))
            if kind is not ItemKind.FUNCTION_CALL:
                out.append(ev.part_added(record, self._next()))
        self._message = message

    def _close(self, fact: MessageClosed, out: list[Any], eos_status: str) -> None:
        message, self._message = self._message, None
        if message.kind is ItemKind.REASONING and not message.recipient:
            self._reasoning_tokens += fact.at - message.opened_at
        status = "completed" if fact.stop_token is not None else eos_status
        streamed = "".join(message.chunks)
        text = streamed
        if fact.partial_utf8:
            # The parser settles an incomplete UTF-8 sequence (as U+FFFD); send the rest.
            text = message_text(self._driver.messages[-1])
        record = message.record
        if record is None:
            if message.kind is ItemKind.NONE:
                return
            # Built-in tool call: announced and closed at message end.
            record = ItemRecord.open(message.kind, len(self._items), None, message.recipient)
            self._items.append(record)
            out.append(ev.item_added(record, self._next()))
            if record.kind is ItemKind.REASONING:
                out.append(ev.part_added(record, self._next()))
                if text:
                    out.append(ev.delta(record, text, self._next()))
            record.text = text
        else:
            record.text = streamed
            if len(text) > len(streamed) and text.startswith(streamed):
                out.append(ev.delta(record, text[len(streamed) :], self._next()))
                record.text = text
        record.status = status
        self._close_item(record, out)

    def _close_item(self, record: ItemRecord, out: list[Any]) -> None:
        if record.kind is not ItemKind.WEB_SEARCH:
            out.append(ev.text_done(record, self._next()))
            if record.kind is not ItemKind.FUNCTION_CALL:
                out.append(ev.part_done(record, self._next()))
        out.append(ev.item_done(record, self._next()))

    # -- terminal -------------------------------------------------------------------------

    def _finish(self, finish_reason: str | None, out: list[Any]) -> None:
        status = finish_status(finish_reason)
        if status == "failed":
            out.extend(self._fail_events(f"generation ended with finish reason {finish_reason!r}"))
            return
        cut = status == "incomplete"
        facts: list[Fact] = []
        try:
            self._driver.finish(facts)
        except TruncatedHeaderError:
            # Cut inside a message header: no item was opened for it.
            cut = True
        self._apply(facts, out, eos_status=status)
        if cut and self.config.length_terminal == "incomplete":
            event_type, status = "response.incomplete", "incomplete"
        elif cut:
            event_type, status = "response.completed", "incomplete"
        else:
            event_type, status = "response.completed", "completed"
        self._terminate(
            out,
            event_type,
            status,
            incomplete_reason="max_output_tokens" if cut else None,
        )

    def _fail_events(self, message: str, code: str = "server_error") -> list[Any]:
        out: list[Any] = []
        try:
            open_message, self._message = self._message, None
            record = open_message.record if open_message else None
            if record is not None:
                record.text = "".join(open_message.chunks)
                record.status = "incomplete"
                self._close_item(record, out)
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
        self.finished = True
        self._driver = None  # release the parser: per-request state ends here
