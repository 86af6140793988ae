# SPDX-License-Identifier: Apache-2.0
"""What the simulated server remembers of its responses: the function calls of each stored
conversation, so ``previous_response_id`` and ``function_call_output`` items can be checked
as OpenAI checks them.

A response is stored when it ends (any terminal status) unless its request set
``store: false``; the store keeps the newest :data:`MAX_STORED` responses. Only the function
calls (``call_id`` -> name) of each conversation are kept, not its text.

:func:`check_tool_messages` applies OpenAI's rule for Chat Completions ``tool`` messages:
each answers a call of the assistant message with ``tool_calls`` just before it (other
``tool`` messages may come between).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import RequestError

#: Responses remembered (oldest forgotten first).
MAX_STORED = 4096

Calls = dict[str, str]


class ResponseStore:
    """Stored responses by id: the function calls of the conversation up to each one."""

    def __init__(self, capacity: int = MAX_STORED) -> None:
        self.capacity = capacity
        self._calls: OrderedDict[str, Calls] = OrderedDict()

    def __contains__(self, response_id: object) -> bool:
        return response_id in self._calls

    def __len__(self) -> int:
        return len(self._calls)

    def previous_calls(self, previous_response_id: str | None) -> Calls:
        """The calls of the conversation ``previous_response_id`` ends (empty for None);
        :class:`RequestError` 400 ``previous_response_not_found`` for an unknown id."""
        if previous_response_id is None:
            return {}
        found = self._calls.get(previous_response_id)
        if found is None:
            raise RequestError(
                400,
                f"Previous response with id '{previous_response_id}' not found.",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        return found

    def record(self, response_id: str, calls: Calls, output: Iterable[Any]) -> None:
        """Store ``response_id`` with the conversation's ``calls`` and its ``output`` calls."""
        conversation = dict(calls)
        for item in output:
            if getattr(item, "type", None) == "function_call":
                conversation[item.call_id] = item.name
        self._calls[response_id] = conversation
        while len(self._calls) > self.capacity:
            self._calls.popitem(last=False)


def conversation_calls(
    store: ResponseStore, previous_response_id: str | None, request_input: Any
) -> Calls:
    """The function calls a request's conversation holds (those of the previous response
    and of its input); a ``function_call_output`` that answers none of them is OpenAI's 400."""
    calls = dict(store.previous_calls(previous_response_id))
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
