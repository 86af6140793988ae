# SPDX-License-Identifier: Apache-2.0
"""Which Responses item a Harmony message becomes, and how item models are built.

``KINDS`` is the per-kind table of what each item kind opens and closes. Models are built
with ``fastmodel.construct`` (unvalidated unless the validating mode is on): the values are
ours.
"""

from __future__ import annotations

import enum
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_function_web_search import (
    ActionFind,
    ActionOpenPage,
    ActionSearch,
)
from openai.types.responses.response_reasoning_item import Content as ReasoningContent
from openai_harmony import Role
from pydantic import BaseModel

from .fastmodel import construct

FUNCTION_PREFIX = "functions."
BROWSER_PREFIX = "browser."

PreambleRoute = Literal["commentary", "reasoning", "drop"]
"""What commentary messages without a recipient become: ``message`` items with phase
``commentary``, reasoning (a chat rendering choice), or nothing."""

IdFactory = Callable[[str], str]
"""Makes a unique id from a prefix (``"msg"`` -> ``"msg_..."``); handed in by the edges."""


class ItemKind(enum.Enum):
    """The Responses item a Harmony message maps to (what each opens and closes: ``KINDS``)."""

    REASONING = "reasoning"  # analysis channel, no recipient
    MESSAGE = "message"  # final answer or preamble
    FUNCTION_CALL = "function_call"  # recipient functions.NAME, any channel
    TOOL_CALL = "tool_call"  # built-in tool other than the browser (python, ...): reasoning item
    WEB_SEARCH = "web_search_call"  # recipient browser.*
    NONE = "none"  # dropped (preamble in upstream-parity mode, tool-authored message)


@dataclass(frozen=True, slots=True)
class KindSpec:
    """What the items of one kind open and close, in stream order.

    ``streamed``: added when the header ends and streamed per engine response; otherwise
    added when the message ends, with the whole text in one delta. ``content_part``:
    ``content_part.added``/``.done`` wrap the text. ``text_events``: ``<kind>.delta`` and
    ``<kind>.done`` carry the text (or the arguments). ``reasoning_tokens``: its content
    tokens count in ``usage.output_tokens_details.reasoning_tokens``.
    """

    id_prefix: str
    streamed: bool
    content_part: bool
    text_events: bool
    reasoning_tokens: bool = False


#: kind -> what it opens and closes. A kind not listed (``NONE``) emits nothing.
KINDS: dict[ItemKind, KindSpec] = {
    ItemKind.MESSAGE: KindSpec("msg", streamed=True, content_part=True, text_events=True),
    ItemKind.REASONING: KindSpec(
        "rs", streamed=True, content_part=True, text_events=True, reasoning_tokens=True
    ),
    ItemKind.FUNCTION_CALL: KindSpec("fc", streamed=True, content_part=False, text_events=True),
    ItemKind.TOOL_CALL: KindSpec("rs", streamed=False, content_part=True, text_events=True),
    ItemKind.WEB_SEARCH: KindSpec("ws", streamed=False, content_part=False, text_events=False),
}


def classify(
    channel: str | None,
    recipient: str | None,
    preambles: PreambleRoute = "commentary",
    role: Role | None = Role.ASSISTANT,
) -> tuple[ItemKind, str | None]:
    """Map a message header to ``(kind, phase)``; ``phase`` only for message items.

    Only assistant messages become items (a tool-authored message in a completion is
    dropped, as upstream's final response drops it). Built-in tool calls (``browser.*``,
    ``python`` and unknown recipients) are announced at message end (``KINDS``).
    ``preambles`` says what a commentary message without a recipient is.
    """
    if role is not Role.ASSISTANT:
        return ItemKind.NONE, None
    if recipient:
        if recipient.startswith(FUNCTION_PREFIX):
            return ItemKind.FUNCTION_CALL, None
        if recipient.startswith(BROWSER_PREFIX):
            return ItemKind.WEB_SEARCH, None
        return ItemKind.TOOL_CALL, None
    if channel == "analysis":
        return ItemKind.REASONING, None
    if channel == "commentary":
        if preambles == "drop":
            return ItemKind.NONE, None
        if preambles == "reasoning":
            return ItemKind.REASONING, None
        return ItemKind.MESSAGE, "commentary"
    return ItemKind.MESSAGE, "final_answer"


def derived_ids(response_id: str) -> IdFactory:
    """Ids derived from the response id: ``{prefix}_{suffix}_{n}``, n = 0, 1, 2, ...

    Unique within a response and, with unique response ids, across responses; deterministic,
    so the core needs no random source. Edges may hand in random ids instead.
    """
    suffix = response_id.split("_", 1)[-1] or response_id or "0"
    counter = itertools.count()
    return lambda prefix: f"{prefix}_{suffix}_{next(counter)}"


@dataclass(slots=True)
class ItemRecord:
    """One output item as both the stream and the final response see it."""

    kind: ItemKind
    output_index: int
    item_id: str
    phase: str | None = None
    name: str = ""  # function or built-in tool name (the recipient)
    call_id: str = ""
    text: str = ""  # message/reasoning text, or function-call arguments
    status: str = "in_progress"

    @classmethod
    def open(
        cls,
        kind: ItemKind,
        output_index: int,
        phase: str | None,
        recipient: str | None,
        new_id: IdFactory,
        name: str | None = None,
    ) -> ItemRecord:
        """A new item; ``name`` is a function call's name (default: read from ``recipient``)."""
        record = cls(kind, output_index, new_id(KINDS[kind].id_prefix), phase, recipient or "")
        if kind is ItemKind.FUNCTION_CALL:
            record.name = function_name(recipient) if name is None else name
            record.call_id = new_id("call")
        return record


def function_name(recipient: str | None) -> str:
    """The function name of a ``functions.NAME`` recipient (empty when there is none)."""
    return (recipient or "")[len(FUNCTION_PREFIX) :].strip()


def build_item(record: ItemRecord, *, final: bool = True) -> BaseModel:
    """The ``openai.types.responses`` output item for ``record``.

    ``final=False`` gives the shape announced by ``output_item.added`` (empty content).
    """
    status = record.status
    text = record.text if final else ""
    kind = record.kind
    if kind is ItemKind.MESSAGE:
        content = [
            construct(
                ResponseOutputText, type="output_text", text=text, annotations=[], logprobs=[]
            )
        ]
        return construct(
            ResponseOutputMessage,
            id=record.item_id,
            type="message",
            role="assistant",
            status=status,
            content=content if final else [],
            phase=record.phase,
        )
    if kind is ItemKind.REASONING or kind is ItemKind.TOOL_CALL:
        reasoning = [construct(ReasoningContent, type="reasoning_text", text=text)]
        return construct(
            ResponseReasoningItem,
            id=record.item_id,
            type="reasoning",
            summary=[],
            content=reasoning if final else [],
            status=status,
        )
    if kind is ItemKind.FUNCTION_CALL:
        return construct(
            ResponseFunctionToolCall,
            id=record.item_id,
            type="function_call",
            call_id=record.call_id,
            name=record.name,
            arguments=text,
            status=status,
        )
    return construct(
        ResponseFunctionWebSearch,
        id=record.item_id,
        type="web_search_call",
        status=status,
        action=web_search_action(record.name, record.text),
    )


def web_search_action(recipient: str, arguments: str) -> ActionOpenPage | ActionFind | ActionSearch:
    """The web-search action for a ``browser.*`` call, from its JSON arguments."""
    try:
        args = json.loads(arguments) if arguments else {}
    except ValueError:
        args = {}
    if not isinstance(args, dict):
        args = {}
    command = recipient.rsplit(".", 1)[-1]
    if command == "open":
        url = args.get("id") if isinstance(args.get("id"), str) else args.get("url")
        return construct(ActionOpenPage, type="open_page", url=url)
    if command == "find":
        return construct(
            ActionFind,
            type="find_in_page",
            pattern=str(args.get("pattern", "")),
            url=str(args.get("url", "")),
        )
    query = args.get("query")
    return construct(
        ActionSearch, type="search", query=query if isinstance(query, str) else arguments
    )
