# SPDX-License-Identifier: Apache-2.0
"""Compaction items in a Responses stream.

A ``compaction_trigger`` turn streams exactly one item (:class:`TriggerStream`)::

    response.created response.in_progress
    output_item.added output_item.done (the compaction item, its sealed blob in both)
    response.completed

The item opens only once its blob is sealed: an item of this type has no ``incomplete``
form, so a compaction that fails (prompt past the context window, no summary written) ends
with ``error`` + ``response.failed`` and no item, never an item left open or an empty blob.
``response.compaction.compacting`` is therefore not sent.

A ``context_management`` turn that compacts puts the item first (:class:`CompactedTurnStream`
around the turn's event machine): added and done right after ``response.in_progress``, every
later event's ``output_index`` one higher, each Response's ``output`` led by the item and its
usage counting the summary's generation too.
"""

from __future__ import annotations

from typing import Any

from openai.types.responses import (
    Response,
    ResponseCompactionItem,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseUsage,
)

from ..core import events as ev
from ..core.context import ResponseContext
from ..core.response import response_envelope, typed_tools, usage
from .window import Item


def compaction_model(item: Item) -> ResponseCompactionItem:
    """The ``openai`` model of a compaction item."""
    return ResponseCompactionItem.model_construct(
        id=item["id"], type="compaction", encrypted_content=item["encrypted_content"]
    )


def added(item: Item, output_index: int, seq: int) -> ResponseOutputItemAddedEvent:
    return ResponseOutputItemAddedEvent.model_construct(
        type="response.output_item.added",
        item=compaction_model(item),
        output_index=output_index,
        sequence_number=seq,
    )


def done(item: Item, output_index: int, seq: int) -> ResponseOutputItemDoneEvent:
    return ResponseOutputItemDoneEvent.model_construct(
        type="response.output_item.done",
        item=compaction_model(item),
        output_index=output_index,
        sequence_number=seq,
    )


def added_usage(first: ResponseUsage | None, second: ResponseUsage) -> ResponseUsage:
    """Two generations' usage together."""
    if first is None:
        return second
    return usage(
        first.input_tokens + second.input_tokens,
        first.output_tokens + second.output_tokens,
        first.output_tokens_details.reasoning_tokens
        + second.output_tokens_details.reasoning_tokens,
    )


class TriggerStream:
    """The events of a ``compaction_trigger`` turn, built as its compaction proceeds."""

    def __init__(self, context: ResponseContext) -> None:
        self.context = context
        self.seq = 0
        self.final_response: Response | None = None

    def _next(self) -> int:
        self.seq += 1
        return self.seq - 1

    def _response(self, status: str, **kwargs: Any) -> Response:
        return response_envelope(
            self.context, typed_tools(self.context.tools), [], status=status, **kwargs
        )

    def start(self) -> list[Any]:
        """``response.created`` and ``response.in_progress``."""
        snapshot = self._response("in_progress")
        return [
            ev.lifecycle("response.created", snapshot, self._next()),
            ev.lifecycle("response.in_progress", snapshot, self._next()),
        ]

    def finish(self, item: Item, usage_: ResponseUsage) -> list[Any]:
        """The sealed item's ``added`` and ``done``, and ``response.completed``."""
        response = self._response("completed", usage_=usage_)
        response = response.model_copy(update={"output": [compaction_model(item)]})
        self.final_response = response
        return [
            added(item, 0, self._next()),
            done(item, 0, self._next()),
            ev.lifecycle("response.completed", response, self._next()),
        ]

    def fail(self, message: str, code: str) -> list[Any]:
        """``error`` + ``response.failed`` (the item is left out: it was never sealed)."""
        response = self._response("failed", error=(code, message))
        self.final_response = response
        return [
            ev.error(message, code, self._next()),
            ev.lifecycle("response.failed", response, self._next()),
        ]


class CompactedTurnStream:
    """A turn's event machine with a compaction item streamed first."""

    def __init__(self, inner: Any, item: Item, compaction_usage: ResponseUsage) -> None:
        self.inner = inner
        self.item = item
        self.compaction_usage = compaction_usage

    def _shift(self, events: list[Any]) -> list[Any]:
        out = []
        for event in events:
            update: dict[str, Any] = {"sequence_number": event.sequence_number + 2}
            if hasattr(event, "output_index"):
                update["output_index"] = event.output_index + 1
            response = getattr(event, "response", None)
            if isinstance(response, Response):
                update["response"] = self.response(response)
            out.append(event.model_copy(update=update))
        return out

    def response(self, response: Response) -> Response:
        """``response`` with the compaction item first and the summary's usage added."""
        update: dict[str, Any] = {"output": [compaction_model(self.item), *response.output]}
        if response.usage is not None:
            update["usage"] = added_usage(response.usage, self.compaction_usage)
        return response.model_copy(update=update)

    def start(self) -> list[Any]:
        """The machine's ``created`` and ``in_progress`` as they are, then the item."""
        events = self.inner.start()
        seq = events[-1].sequence_number + 1
        return [*events, added(self.item, 0, seq), done(self.item, 0, seq + 1)]

    def feed(self, *args: Any, **kwargs: Any) -> list[Any]:
        return self._shift(self.inner.feed(*args, **kwargs))

    @property
    def final_response(self) -> Response | None:
        final = self.inner.final_response
        return None if final is None else self.response(final)
