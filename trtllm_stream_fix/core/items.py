# SPDX-License-Identifier: Apache-2.0
"""Which Responses item a Harmony message becomes, and how item models are built.

Shared by the streaming machine and the non-streaming builder so that both produce the
same items. Models are built with ``fastmodel.construct`` (no validation): the values are ours.
"""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import dataclass

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

from .config import StreamConfig
from .fastmodel import construct

FUNCTION_PREFIX = "functions."


class ItemKind(enum.Enum):
    """The Responses item a Harmony message maps to."""

    REASONING = "reasoning"  # analysis channel, or a built-in tool other than the browser
    MESSAGE = "message"  # final answer or preamble
    FUNCTION_CALL = "function_call"  # recipient functions.NAME, any channel
    WEB_SEARCH = "web_search_call"  # recipient browser.*
    NONE = "none"  # dropped (preamble in upstream-parity mode)


def classify(
    channel: str | None,
    recipient: str | None,
    config: StreamConfig,
    role: Role | None = Role.ASSISTANT,
) -> tuple[ItemKind, str | None]:
    """Map a message header to ``(kind, phase)``; ``phase`` only for message items.

    Only assistant messages become items (a tool-authored message in a completion is
    dropped, as upstream's final response drops it). Built-in tool calls (``browser.*``,
    ``python`` and unknown recipients) are not streamed: ``is_streamed`` tells.
    """
    if role is not Role.ASSISTANT:
        return ItemKind.NONE, None
    if recipient:
        if recipient.startswith(FUNCTION_PREFIX):
            return ItemKind.FUNCTION_CALL, None
        if recipient.startswith("browser."):
            return ItemKind.WEB_SEARCH, None
        return ItemKind.REASONING, None
    if channel == "analysis":
        return ItemKind.REASONING, None
    if channel == "commentary":
        if config.preambles == "drop":
            return ItemKind.NONE, None
        return ItemKind.MESSAGE, "commentary"
    return ItemKind.MESSAGE, "final_answer"


def is_streamed(kind: ItemKind, recipient: str | None) -> bool:
    """Items streamed token by token; built-in tool calls are announced at message end."""
    return kind is ItemKind.FUNCTION_CALL or (not recipient and kind is not ItemKind.NONE)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


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
        cls, kind: ItemKind, output_index: int, phase: str | None, recipient: str | None
    ) -> ItemRecord:
        prefix = {
            ItemKind.REASONING: "rs",
            ItemKind.MESSAGE: "msg",
            ItemKind.FUNCTION_CALL: "fc",
            ItemKind.WEB_SEARCH: "ws",
        }[kind]
        record = cls(kind, output_index, new_id(prefix), phase=phase, name=recipient or "")
        if kind is ItemKind.FUNCTION_CALL:
            record.name = (recipient or "")[len(FUNCTION_PREFIX) :]
            record.call_id = new_id("call")
        return record


def build_item(record: ItemRecord, *, final: bool = True):
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
    if kind is ItemKind.REASONING:
        content = [construct(ReasoningContent, type="reasoning_text", text=text)]
        return construct(
            ResponseReasoningItem,
            id=record.item_id,
            type="reasoning",
            summary=[],
            content=content if final else [],
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


def web_search_action(recipient: str, arguments: str):
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
