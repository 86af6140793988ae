# SPDX-License-Identifier: Apache-2.0
"""Builders for the ``openai.types.responses`` stream events we emit.

Built with ``fastmodel.construct``: the values come from our own bookkeeping, so
validation would only cost time on the per-token path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseErrorEvent,
    ResponseFailedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseIncompleteEvent,
    ResponseInProgressEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputText,
    ResponseReasoningTextDeltaEvent,
    ResponseReasoningTextDoneEvent,
    ResponseStreamEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
)
from openai.types.responses.response_content_part_added_event import (
    PartReasoningText as AddedReasoningPart,
)
from openai.types.responses.response_content_part_done_event import (
    PartReasoningText as DoneReasoningPart,
)
from pydantic import BaseModel

from . import fastmodel
from .fastmodel import construct, construct_complete
from .items import ItemKind, ItemRecord, build_item

DELTA_TYPES = frozenset(
    (
        "response.output_text.delta",
        "response.reasoning_text.delta",
        "response.function_call_arguments.delta",
    )
)
#: The event types that end a Responses stream (one of them, last).
TERMINAL_TYPES = frozenset(("response.completed", "response.incomplete", "response.failed"))
LIFECYCLE: dict[str, type[BaseModel]] = {
    "response.created": ResponseCreatedEvent,
    "response.in_progress": ResponseInProgressEvent,
    "response.completed": ResponseCompletedEvent,
    "response.incomplete": ResponseIncompleteEvent,
    "response.failed": ResponseFailedEvent,
}


def lifecycle(event_type: str, response: BaseModel, seq: int) -> ResponseStreamEvent:
    event = construct(
        LIFECYCLE[event_type], type=event_type, response=response, sequence_number=seq
    )
    return cast(ResponseStreamEvent, event)  # one of LIFECYCLE's classes


def error(message: str, code: str, seq: int) -> ResponseErrorEvent:
    return construct(
        ResponseErrorEvent,
        type="error",
        message=message,
        code=code,
        param=None,
        sequence_number=seq,
    )


def item_added(record: ItemRecord, seq: int) -> ResponseOutputItemAddedEvent:
    return construct(
        ResponseOutputItemAddedEvent,
        type="response.output_item.added",
        item=build_item(record, final=False),
        output_index=record.output_index,
        sequence_number=seq,
    )


def item_done(record: ItemRecord, seq: int) -> ResponseOutputItemDoneEvent:
    return construct(
        ResponseOutputItemDoneEvent,
        type="response.output_item.done",
        item=build_item(record),
        output_index=record.output_index,
        sequence_number=seq,
    )


def _part(record: ItemRecord, text: str, reasoning_class: type[BaseModel]) -> BaseModel:
    """The content part of ``record``: output text, or reasoning text of ``reasoning_class``.

    The added and the done event each have their own reasoning part class.
    """
    if record.kind is ItemKind.MESSAGE:
        return construct(
            ResponseOutputText, type="output_text", text=text, annotations=[], logprobs=[]
        )
    return construct(reasoning_class, type="reasoning_text", text=text)


#: Each content-part event's class and the reasoning part class it carries.
_PART_EVENTS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    "response.content_part.added": (ResponseContentPartAddedEvent, AddedReasoningPart),
    "response.content_part.done": (ResponseContentPartDoneEvent, DoneReasoningPart),
}


def _part_event(event_type: str, record: ItemRecord, text: str, seq: int) -> BaseModel:
    cls, reasoning_class = _PART_EVENTS[event_type]
    return construct(
        cls,
        type=event_type,
        item_id=record.item_id,
        output_index=record.output_index,
        content_index=0,
        part=_part(record, text, reasoning_class),
        sequence_number=seq,
    )


def part_added(record: ItemRecord, seq: int) -> ResponseStreamEvent:
    event = _part_event("response.content_part.added", record, "", seq)
    return cast(ResponseStreamEvent, event)  # a content-part or reasoning-part event


def part_done(record: ItemRecord, seq: int) -> ResponseStreamEvent:
    event = _part_event("response.content_part.done", record, record.text, seq)
    return cast(ResponseStreamEvent, event)  # a content-part or reasoning-part event


@dataclass(frozen=True, slots=True)
class _TextEvents:
    """The ``<text>.delta`` and ``<text>.done`` events of one item kind."""

    delta: type[BaseModel]
    done: type[BaseModel]
    delta_type: str
    done_type: str
    done_key: str  # the field of the whole text in the done event
    content_index: bool  # whether both carry ``content_index``
    logprobs: bool  # whether both carry ``logprobs``


_MESSAGE_TEXT = _TextEvents(
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
    "response.output_text.delta",
    "response.output_text.done",
    "text",
    True,
    True,
)
_REASONING_TEXT = _TextEvents(
    ResponseReasoningTextDeltaEvent,
    ResponseReasoningTextDoneEvent,
    "response.reasoning_text.delta",
    "response.reasoning_text.done",
    "text",
    True,
    False,
)
_ARGUMENTS = _TextEvents(
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "arguments",
    False,
    False,
)


def _text_event(
    record: ItemRecord, done: bool, text: str, seq: int
) -> tuple[type[BaseModel], dict[str, Any]]:
    """The class and the fields (in wire order) of ``record``'s delta or done event."""
    kind = record.kind
    if kind is ItemKind.MESSAGE:
        events = _MESSAGE_TEXT
    elif kind is ItemKind.FUNCTION_CALL:
        events = _ARGUMENTS
    else:  # reasoning, built-in tool call
        events = _REASONING_TEXT
    values: dict[str, Any] = {
        "type": events.done_type if done else events.delta_type,
        "item_id": record.item_id,
        "output_index": record.output_index,
    }
    if events.content_index:
        values["content_index"] = 0
    if done and events is _ARGUMENTS:
        # Required by openai 2.x's schema (TensorRT-LLM images), an extra field in 3.x.
        values["name"] = record.name
    values[events.done_key if done else "delta"] = text
    if events.logprobs:
        values["logprobs"] = []
    values["sequence_number"] = seq
    return (events.done if done else events.delta), values


def delta(record: ItemRecord, text: str, seq: int) -> ResponseStreamEvent:
    """The delta event of ``record``'s kind carrying ``text`` (the per-token path)."""
    cls, values = _text_event(record, False, text, seq)
    # A _TextEvents class; no cast(): this runs once per content delta.
    return construct_complete(cls, values)  # type: ignore[return-value]


class Numbering(Protocol):
    """The owner of a stream's ``sequence_number``: the number of its next event."""

    sequence_number: int


def delta_builder(record: ItemRecord, numbering: Numbering) -> Callable[[str], Any]:
    """``lambda text: delta(record, text, <next number of numbering>)``, fields bound once.

    The per-token path at one token per engine response: one call numbers and builds the
    event (the fields of ``delta``'s event, in the same order, copied from a per-item
    template).
    """
    template = delta(record, "", 0)
    cls, fixed = type(template), template.__dict__
    logprobs = "logprobs" in fixed
    names = set(fixed)
    setters = fastmodel.direct_setters(cls, names)
    if setters is None:  # validating, or not buildable directly

        def build_checked(text: str) -> Any:
            seq = numbering.sequence_number
            numbering.sequence_number = seq + 1
            return delta(record, text, seq)

        return build_checked
    new, set_dict, set_fields, set_extra, set_private = setters

    def build(text: str) -> Any:
        seq = numbering.sequence_number
        numbering.sequence_number = seq + 1
        values = fixed.copy()
        values["delta"] = text
        if logprobs:
            values["logprobs"] = []
        values["sequence_number"] = seq
        model = new(cls)
        set_dict(model, values)
        set_fields(model, names.copy())
        set_extra(model, {})
        set_private(model, None)
        return model

    return build


def text_done(record: ItemRecord, seq: int) -> ResponseStreamEvent:
    """The ``*.done`` event closing ``record``'s text (or arguments)."""
    cls, values = _text_event(record, True, record.text, seq)
    return cast(ResponseStreamEvent, construct(cls, **values))  # a _TextEvents class
