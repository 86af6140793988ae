# SPDX-License-Identifier: Apache-2.0
"""Non-streaming Responses output from a complete token list.

Built from whole Harmony messages (not from deltas), with the same message-to-item mapping
as the stream, so a non-streaming response and a stream's final response agree on item
types, texts, statuses and order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openai.types.responses import Response

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
from .items import ItemKind, ItemRecord, classify
from .machine import finish_status, message_text
from .response import build_response as build_response_object
from .response import typed_tools, usage


def output_items(
    token_ids: Sequence[int],
    finish_reason: str | None,
    *,
    config: StreamConfig = DEFAULT_CONFIG,
    encoding: Any = None,
) -> tuple[list[ItemRecord], int, str | None, bool, int]:
    """``(items, reasoning_tokens, error, header_cut, parsed)`` for a whole generation.

    ``error`` is the Harmony parse error message, if any (items parsed before it are kept);
    ``header_cut`` tells that the tokens ended inside a message header; ``parsed`` counts the
    tokens up to the offending one (all of them without an error).
    """
    if encoding is None:
        from ..encoding import load_gpt_oss_encoding

        encoding = load_gpt_oss_encoding()
    driver = HarmonyDriver(encoding)
    facts: list[Fact] = []
    error: str | None = None
    header_cut = False
    parsed = len(token_ids)
    try:
        driver.feed(token_ids, facts)
        driver.finish(facts)
    except TruncatedHeaderError:
        header_cut = True
    except HarmonyStreamError as exc:
        error = f"invalid Harmony token sequence: {exc}"
        parsed = exc.token_index + 1
    eos_status = "incomplete" if finish_status(finish_reason) == "incomplete" else "completed"
    items: list[ItemRecord] = []
    reasoning_tokens = 0
    messages = iter(driver.messages)
    opened: MessageOpened | None = None
    partial: list[str] = []
    for fact in facts:
        if type(fact) is ContentDelta:
            partial.append(fact.text)
        elif type(fact) is MessageOpened:
            opened, partial = fact, []
        elif type(fact) is MessageClosed and opened is not None:
            message = next(messages)
            kind, phase = classify(opened.channel, opened.recipient, config, opened.role)
            if kind is ItemKind.REASONING and not opened.recipient:
                reasoning_tokens += fact.at - opened.at
            if kind is not ItemKind.NONE:
                record = ItemRecord.open(kind, len(items), phase, opened.recipient)
                record.text = message_text(message)
                record.status = "completed" if fact.stop_token is not None else eos_status
                items.append(record)
            opened = None
    if error and opened is not None:
        kind, phase = classify(opened.channel, opened.recipient, config, opened.role)
        if kind is not ItemKind.NONE:
            # The stream closes the interrupted item as incomplete; do the same.
            record = ItemRecord.open(kind, len(items), phase, opened.recipient)
            record.text = "".join(partial)
            record.status = "incomplete"
            items.append(record)
    return items, reasoning_tokens, error, header_cut, parsed


def build_response(
    context: ResponseContext,
    token_ids: Sequence[int],
    finish_reason: str | None,
    *,
    config: StreamConfig = DEFAULT_CONFIG,
    encoding: Any = None,
) -> Response:
    """The non-streaming ``Response`` for a complete generation."""
    items, reasoning_tokens, error, header_cut, parsed = output_items(
        token_ids, finish_reason, config=config, encoding=encoding
    )
    status = finish_status(finish_reason)
    if error is None and status == "failed":
        error = f"generation ended with finish reason {finish_reason!r}"
    if error is not None:
        status, reason = "failed", None
    elif status == "incomplete" or header_cut:
        status, reason = "incomplete", "max_output_tokens"
    else:
        reason = None
    return build_response_object(
        context,
        typed_tools(context.tools),
        items,
        status=status,
        usage_=usage(context.num_prompt_tokens, parsed, reasoning_tokens),
        incomplete_reason=reason,
        error=("server_error", error) if error else None,
    )
