# SPDX-License-Identifier: Apache-2.0
"""Responses event machine: engine token batches in, OpenAI Responses events out.

Sans-IO and pure: one instance per request. The encoding and the id factory are handed in
(``new_id=None``: ids derived from the response id), the clock with the context
(``ResponseContext.clock``). The non-streaming response is this
machine fed the whole token list in one call (``nonstreaming.build_response``), so a stream's
final response and the non-streaming response cannot diverge.

Lifecycle, fast path, facts loop, errors and token accounting: ``turn.Turn`` (``Stage``,
``LifecycleError``). ``feed`` or ``fail`` before ``start`` and a second ``start`` raise
``LifecycleError`` (a programming error). In DONE, ``feed`` and ``fail`` return ``[]``:
nothing follows the terminal event, and the parser is released.

Grammar of the emitted stream (every event's ``sequence_number`` counts on from
``first_sequence_number``; ``sequence_number`` is the next one)::

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

from typing import Any

from openai.types.responses import Response, ResponseStreamEvent

from . import events as ev
from .config import DEFAULT_CONFIG, StreamConfig
from .context import ResponseContext
from .errors import LifecycleError
from .items import IdFactory, ItemRecord, derived_ids
from .response import response_envelope, typed_tools, usage
from .turn import COMPLETED_REASONS, OpenMessage, Stage, Status, Turn, finish_status


class ResponsesEventMachine(Turn[ResponseStreamEvent, ResponseStreamEvent]):
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
        super().__init__(
            encoding=encoding,
            parser=config.parser,
            preambles=config.preambles,
            log_name=f"response {context.response_id}",
        )
        self.context = context
        self.config = config
        self._new_id = new_id or derived_ids(context.response_id)
        self._tools = typed_tools(context.tools)
        self._items: list[ItemRecord] = []
        #: The number of the next event.
        self.sequence_number = first_sequence_number
        self.final_response: Response | None = None

    @property
    def items(self) -> list[ItemRecord]:
        return self._items

    # -- turn -> events -----------------------------------------------------------------

    def _next(self) -> int:
        seq = self.sequence_number
        self.sequence_number = seq + 1
        return seq

    def _started(self) -> list[ResponseStreamEvent]:
        """``response.created`` and ``response.in_progress``."""
        snapshot = response_envelope(self.context, self._tools, [], status="in_progress")
        return [
            ev.lifecycle("response.created", snapshot, self._next()),
            ev.lifecycle("response.in_progress", snapshot, self._next()),
        ]

    def _rendered(self, out: list[ResponseStreamEvent]) -> list[ResponseStreamEvent]:
        return out

    def _opened(
        self, message: OpenMessage[ResponseStreamEvent], out: list[ResponseStreamEvent]
    ) -> None:
        if message.spec is not None and message.spec.streamed:
            self._announce(message, out)

    def _text(
        self, message: OpenMessage[ResponseStreamEvent], text: str, out: list[ResponseStreamEvent]
    ) -> None:
        render = message.render
        if render is not None:
            out.append(render(text))

    def _announce(
        self, message: OpenMessage[ResponseStreamEvent], out: list[ResponseStreamEvent]
    ) -> ItemRecord:
        record = ItemRecord.open(
            message.kind,
            len(self._items),
            message.phase,
            message.recipient,
            self._new_id,
            message.name,
        )
        self._items.append(record)
        message.target = record
        message.render = ev.delta_builder(record, self)
        out.append(ev.item_added(record, self._next()))
        spec = message.spec
        assert spec is not None  # set when the message opened
        if spec.content_part:
            out.append(ev.part_added(record, self._next()))
        return record

    def _closed(
        self,
        message: OpenMessage[ResponseStreamEvent],
        status: Status,
        out: list[ResponseStreamEvent],
    ) -> None:
        spec = message.spec
        assert spec is not None  # set when the message opened
        text = "".join(message.chunks)
        record = message.target
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

    def _completed(
        self, status: Status, finish_reason: str | None, out: list[ResponseStreamEvent]
    ) -> None:
        if status == "completed":
            self._terminate(out, "response.completed", "completed")
        elif self.config.length_terminal == "incomplete":
            self._terminate(
                out, "response.incomplete", "incomplete", incomplete_reason="max_output_tokens"
            )
        else:
            self._terminate(
                out, "response.completed", "incomplete", incomplete_reason="max_output_tokens"
            )

    def _failed(self, message: str, code: str, out: list[ResponseStreamEvent]) -> None:
        """``error`` + ``response.failed``."""
        out.append(ev.error(message, code, self._next()))
        self._terminate(out, "response.failed", "failed", error=(code, message))

    def _terminate(
        self,
        out: list[ResponseStreamEvent],
        event_type: str,
        status: str,
        *,
        incomplete_reason: str | None = None,
        error: tuple[str, str] | None = None,
    ) -> None:
        self.final_response = response_envelope(
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


__all__ = [
    "COMPLETED_REASONS",
    "LifecycleError",
    "ResponsesEventMachine",
    "Stage",
    "finish_status",
]
