# SPDX-License-Identifier: Apache-2.0
"""The compaction prompt, rendered in Harmony as any gpt-oss turn is.

The conversation to compact (Responses input items, compaction items already expanded by
``window.expand``) becomes Harmony messages: a system message (reasoning effort low), the
request's ``instructions`` as the developer message, user messages, assistant answers on the
``final`` channel, function calls as ``commentary`` messages to ``functions.NAME`` and their
outputs as ``functions.NAME`` tool messages; reasoning items are left out, as Harmony leaves
out earlier turns' analysis. Last comes a user message holding :data:`COMPACTION_PROMPT`,
and the prompt ends where the assistant's reply starts. What the model writes on the
``final`` channel is the summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openai_harmony import (
    Author,
    Conversation,
    DeveloperContent,
    Message,
    ReasoningEffort,
    Role,
    SystemContent,
)

#: The request that makes the model write the summary (after the Codex CLI's "context
#: checkpoint" idea: a hand-off note for whoever resumes the task, in our words).
COMPACTION_PROMPT = (
    "Context checkpoint. This conversation is being compacted: everything above will be "
    "replaced by the note you write now, so write it for whoever resumes the work without "
    "the earlier messages. Cover, in plain concise text and without a preamble: the user's "
    "goals and the constraints or preferences they stated; what has been done so far, with "
    "the results, decisions and exact facts (names, paths, numbers, identifiers) later steps "
    "need; tool calls whose results still matter; and what remains to be done, starting "
    "with the user's latest request if it has not been answered yet. Do not call tools."
)


@dataclass(frozen=True)
class RenderedPrompt:
    """A Harmony prompt: its messages and their tokens (up to the assistant's turn)."""

    messages: list[Message]
    tokens: list[int]


def text_of(content: Any) -> str:
    """The text of an item's ``content`` or ``output`` (a string or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(part.get("text") or "" for part in content if isinstance(part, Mapping))
    return ""


def conversation_messages(items: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Harmony messages for Responses input ``items`` (compaction items expanded)."""
    calls = {i.get("call_id"): i.get("name") for i in items if i.get("type") == "function_call"}
    messages: list[Message] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            text = text_of(item.get("content"))
            if role == "assistant":
                messages.append(
                    Message.from_role_and_content(Role.ASSISTANT, text).with_channel("final")
                )
            elif role in ("system", "developer"):
                messages.append(Message.from_role_and_content(Role.DEVELOPER, text))
            else:
                messages.append(Message.from_role_and_content(Role.USER, text))
        elif kind == "function_call":
            messages.append(
                Message.from_role_and_content(Role.ASSISTANT, str(item.get("arguments") or ""))
                .with_channel("commentary")
                .with_recipient(f"functions.{item.get('name')}")
                .with_content_type("<|constrain|>json")
            )
        elif kind == "function_call_output":
            name = calls.get(item.get("call_id")) or "tool"
            messages.append(
                Message.from_author_and_content(
                    Author.new(Role.TOOL, f"functions.{name}"), text_of(item.get("output"))
                )
                .with_channel("commentary")
                .with_recipient("assistant")
            )
    return messages


def header_messages(instructions: str | None, effort: ReasoningEffort) -> list[Message]:
    """The system message and, with ``instructions``, the developer message."""
    system = SystemContent.new().with_reasoning_effort(effort)
    messages = [Message.from_role_and_content(Role.SYSTEM, system)]
    if instructions:
        developer = DeveloperContent.new().with_instructions(instructions)
        messages.append(Message.from_role_and_content(Role.DEVELOPER, developer))
    return messages


def render(encoding: Any, messages: list[Message]) -> RenderedPrompt:
    """``messages`` rendered for the assistant's next turn."""
    tokens = encoding.render_conversation_for_completion(
        Conversation.from_messages(messages), Role.ASSISTANT
    )
    return RenderedPrompt(messages, list(tokens))


def compaction_prompt(
    encoding: Any, items: Sequence[Mapping[str, Any]], instructions: str | None
) -> RenderedPrompt:
    """The prompt that asks the model to summarise ``items``."""
    messages = [
        *header_messages(instructions, ReasoningEffort.LOW),
        *conversation_messages(items),
        Message.from_role_and_content(Role.USER, COMPACTION_PROMPT),
    ]
    return render(encoding, messages)


def turn_prompt(
    encoding: Any, items: Sequence[Mapping[str, Any]], instructions: str | None
) -> RenderedPrompt:
    """The prompt of an ordinary turn over ``items`` (what ``compact_threshold`` measures)."""
    messages = [
        *header_messages(instructions, ReasoningEffort.MEDIUM),
        *conversation_messages(items),
    ]
    return render(encoding, messages)
