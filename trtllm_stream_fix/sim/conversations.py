# SPDX-License-Identifier: Apache-2.0
"""What the simulated server reads of, and writes to, its response store for a Responses turn.

A request's conversation is the messages stored with its ``previous_response_id`` (the
whole conversation up to that response, as Responses input and output items), and its input
with each ``item_reference`` replaced by the stored output item it names
(:func:`~trtllm_stream_fix.store.references.resolve_item_references`). The function calls
of that conversation are checked as OpenAI checks them: a ``function_call_output`` must
answer one; so are its item ids (no id twice) and its referenced items (the types accepted
as input). The whole conversation counts against the limits of a direct input: the input as
its references expand against the body bound, as it is expanded; every item's text, the
stored history's too, against the character and token bounds (:func:`prompt_text`). A
response is stored when it ends (any terminal status) unless its request set ``store:
false``, with the conversation's messages plus its input and output (:func:`turn_messages`).
The store itself is :mod:`trtllm_stream_fix.store`; its failures become OpenAI-shaped errors
here (:func:`store_failure`).

:func:`check_tool_messages` applies OpenAI's rule for Chat Completions ``tool`` messages:
each answers a call of the assistant message with ``tool_calls`` just before it (other
``tool`` messages may come between).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..store import (
    DuplicateItem,
    ExpandedInputTooLarge,
    ResponseStore,
    StoreError,
    UnknownItemReference,
)
from ..store.references import DEFAULT_MAX_EXPANDED_BYTES, resolve_item_references
from .errors import RequestError
from .limits import ServerLimits, check_input_length
from .protocol import text_pieces
from .validation import validate_input

Calls = dict[str, str]
Input = str | list[dict[str, Any]]


@dataclass(frozen=True)
class Conversation:
    """What a turn continues: the stored messages before it and its resolved input."""

    history: list[dict[str, Any]]
    input: Input
    #: The function calls of ``history`` (``call_id`` -> name).
    previous_calls: Calls


def store_failure(exc: StoreError) -> RequestError:
    """The OpenAI-shaped error for a store that failed: 503 when it is unavailable."""
    return RequestError(exc.status, str(exc), type_="server_error", code=exc.code)


async def load_conversation(
    store: ResponseStore,
    previous_response_id: str | None,
    request_input: Input,
    *,
    store_turn: bool,
    max_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
) -> Conversation:
    """The conversation a request continues, read from ``store``; :class:`RequestError`:
    400 for an unknown ``previous_response_id`` or item id, for an item id the conversation
    already holds (OpenAI's duplicate item), for a referenced item of a type the server
    refuses as input, or for a ``function_call_output`` that answers no call; 413 when the
    input, its references resolved, is more than ``max_bytes`` of JSON (the body bound:
    counted as it is expanded); 503 / 500 when the store fails. A request that will store
    its turn (``store_turn``) and reads nothing checks that the store is up."""
    try:
        history = await previous_messages(store, previous_response_id)
        known = {i for m in history if isinstance(i := m.get("id"), str) and i}
        resolved = await resolve_item_references(
            store, request_input, max_bytes=max_bytes, known_ids=known
        )
        if store_turn and previous_response_id is None and resolved is request_input:
            await store.ping()
    except StoreError as exc:
        raise store_failure(exc) from None
    except (UnknownItemReference, DuplicateItem) as exc:
        raise RequestError(exc.status, str(exc), param=exc.param) from None
    except ExpandedInputTooLarge as exc:
        raise RequestError(413, str(exc), param=exc.param, code=exc.code) from None
    if resolved is not request_input:
        validate_input(resolved)  # a stored item is refused as it is refused when sent
    previous = calls_of(history)
    conversation_calls(previous, resolved)
    return Conversation(history, resolved, previous)


async def previous_messages(
    store: ResponseStore, previous_response_id: str | None
) -> list[dict[str, Any]]:
    """The messages stored with ``previous_response_id`` (empty for None); OpenAI's 400
    ``previous_response_not_found`` for an id the store does not hold."""
    if previous_response_id is None:
        return []
    found = await store.history(previous_response_id)
    if found is None:
        raise RequestError(
            400,
            f"Previous response with id '{previous_response_id}' not found.",
            param="previous_response_id",
            code="previous_response_not_found",
        )
    return found


def prompt_text(instructions: str | None, conversation: Conversation, limits: ServerLimits) -> str:
    """The text a turn's prompt holds: ``instructions``, the stored conversation and the
    input, every item kind's text (function call arguments and outputs included). Its
    length is checked (413 past ``max_input_chars``) before the text is joined."""
    own = conversation.input
    parts = [
        [instructions] if instructions else [],
        text_pieces(conversation.history),
        [own] if isinstance(own, str) else text_pieces(own),
    ]
    check_input_length(sum(len(piece) for part in parts for piece in part), limits)
    return "\n".join(filter(None, ("\n".join(part) for part in parts)))


def turn_messages(
    conversation: Conversation, output: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The messages stored with a turn's response: its conversation, input and ``output``."""
    own: Sequence[Mapping[str, Any]]
    if isinstance(conversation.input, str):
        own = [{"type": "message", "role": "user", "content": conversation.input}]
    else:
        own = conversation.input
    return [*conversation.history, *own, *output]


def calls_of(messages: Sequence[Mapping[str, Any]]) -> Calls:
    """The function calls among ``messages`` (``call_id`` -> name)."""
    return {
        m["call_id"]: m["name"]
        for m in messages
        if m.get("type") == "function_call" and "call_id" in m and "name" in m
    }


def conversation_calls(previous: Calls, request_input: Input) -> Calls:
    """The function calls a request's conversation holds (``previous`` and those of its
    input); a ``function_call_output`` that answers none of them is OpenAI's 400."""
    calls = dict(previous)
    if isinstance(request_input, str):
        return calls
    for item in request_input:
        if item.get("type") == "function_call":
            calls[item["call_id"]] = item["name"]
        elif item.get("type") == "function_call_output" and item["call_id"] not in calls:
            raise RequestError(
                400,
                f"No tool call found for function call output with call_id {item['call_id']}.",
                param="input",
            )
    return calls


def engine_input(
    request_input: str | list[dict[str, Any]], previous: Mapping[str, str]
) -> str | list[dict[str, Any]]:
    """The input the engine sees: ``request_input``, after the calls of the previous
    response that its ``function_call_output`` items answer (so the turn knows their tools)."""
    if not previous or isinstance(request_input, str):
        return request_input
    own = {i["call_id"] for i in request_input if i.get("type") == "function_call"}
    answered: Sequence[str] = [
        i["call_id"]
        for i in request_input
        if i.get("type") == "function_call_output" and i["call_id"] not in own
    ]
    calls = [
        {"type": "function_call", "call_id": c, "name": previous[c], "arguments": "{}"}
        for c in dict.fromkeys(answered)
        if c in previous
    ]
    return [*calls, *request_input] if calls else request_input


def check_tool_messages(messages: Sequence[Mapping[str, Any]]) -> None:
    """OpenAI's 400 for a chat ``tool`` message that does not follow an assistant message
    with ``tool_calls`` (``param`` ``messages.[N].role``) or whose ``tool_call_id`` is not
    one of that message's call ids (``messages.[N].tool_call_id``)."""
    calls: set[Any] | None = None  # the call ids tool messages may answer here
    for n, message in enumerate(messages):
        role = message.get("role")
        if role != "tool":
            tool_calls = message.get("tool_calls") if role == "assistant" else None
            calls = _call_ids(tool_calls) if tool_calls else None
            continue
        if calls is None:
            raise RequestError(
                400,
                "Invalid parameter: messages with role 'tool' must be a response to a "
                "preceeding message with 'tool_calls'.",
                param=f"messages.[{n}].role",
            )
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or call_id not in calls:
            raise RequestError(
                400,
                f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in 'tool_calls' "
                "of previous message.",
                param=f"messages.[{n}].tool_call_id",
            )


def _call_ids(tool_calls: Any) -> set[Any]:
    if not isinstance(tool_calls, list):
        return set()
    return {c.get("id") for c in tool_calls if isinstance(c, Mapping)}
