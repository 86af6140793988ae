# SPDX-License-Identifier: Apache-2.0
"""The ``Response`` object carried by lifecycle events and returned non-streaming.

Every Response carries every field OpenAI's API sends (``null`` where unset), in OpenAI's
order, then the remaining fields of the ``openai`` model (also ``null``). The request's part
of it (echoed parameters, tools) is a per-request *envelope*, built once and copied for each
snapshot; only id, status, output, usage, error and timestamps change between snapshots.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from typing import Any

from openai.types.responses import Response, ResponseUsage, Tool
from openai.types.responses.response import IncompleteDetails
from openai.types.responses.response_error import ResponseError
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from pydantic import BaseModel

from .compat import construct_type
from .context import ResponseContext
from .fastmodel import construct, construct_complete, keys_given
from .items import ItemRecord, build_item

#: The fields of a Response as OpenAI's API sends them, in its order (see
#: ``docs/openai-recordings.md``; ``trtllm_stream_fix/differential/openai_schema.json``).
OPENAI_RESPONSE_FIELDS: tuple[str, ...] = (
    "id",
    "object",
    "created_at",
    "status",
    "background",
    "completed_at",
    "error",
    "frequency_penalty",
    "incomplete_details",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "model",
    "output",
    "parallel_tool_calls",
    "presence_penalty",
    "previous_response_id",
    "prompt_cache_key",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "usage",
    "user",
    "metadata",
)
_OTHER_FIELDS = tuple(name for name in Response.model_fields if name not in OPENAI_RESPONSE_FIELDS)
_FUNCTION_TOOL_FIELDS = ("type", "name", "description", "parameters", "strict")
#: Request fields echoed verbatim when the request sets them (``ResponseContext.echo``).
ECHOED_REQUEST_FIELDS: tuple[str, ...] = (
    "background",
    "frequency_penalty",
    "max_tool_calls",
    "metadata",
    "presence_penalty",
    "previous_response_id",
    "prompt",
    "prompt_cache_key",
    "safety_identifier",
    "service_tier",
    "store",
    "top_logprobs",
    "truncation",
    "user",
)
_DEFAULTS: dict[str, Any] = {
    "background": False,
    "frequency_penalty": 0.0,
    "metadata": {},
    "presence_penalty": 0.0,
    "service_tier": "auto",
    "store": True,
    "top_logprobs": 0,
    "truncation": "disabled",
}
#: Sampling values in effect when the request leaves them out (OpenAI's defaults), sent as
#: numbers on every Response as OpenAI's API does.
SAMPLING_DEFAULTS: dict[str, float] = {
    "temperature": 1.0,
    "top_p": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}
#: Echoed fields whose ``openai`` type is a model: built as one (pydantic warns about a
#: plain dict in a model field when the Response is dumped).
_MODEL_FIELDS = ("prompt", "reasoning", "text", "tool_choice")


def request_echo(request: Mapping[str, Any]) -> dict[str, Any]:
    """The Response fields a request dict fixes beyond ``ResponseContext``'s own fields.

    ``reasoning`` becomes ``{"effort", "summary"}`` and ``text`` keeps OpenAI's defaults for
    what it leaves out; the other fields of :data:`ECHOED_REQUEST_FIELDS` are copied when set.
    """
    echo = {k: request[k] for k in ECHOED_REQUEST_FIELDS if request.get(k) is not None}
    reasoning = request.get("reasoning")
    if isinstance(reasoning, Mapping):
        echo["reasoning"] = {
            "effort": reasoning.get("effort"),
            "summary": reasoning.get("summary"),
        }
    text = request.get("text")
    if isinstance(text, Mapping):
        echo["text"] = {"format": {"type": "text"}, "verbosity": "medium", **text}
    return echo


def echoed_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A request tool as a Response echoes it.

    Function tools name every field OpenAI sends (``description``, ``parameters`` and
    ``strict`` null when not given); other tools are echoed as given.
    """
    if tool.get("type") != "function":
        return dict(tool)
    return {**{k: tool.get(k) for k in _FUNCTION_TOOL_FIELDS}, **tool}


def typed_tools(tools: Sequence[dict[str, Any]]) -> list[Any]:
    """Request tool dicts as ``openai`` tool models (built once per request)."""
    return [construct_type(type_=Tool, value=echoed_tool(tool)) for tool in tools]


def usage(input_tokens: int, output_tokens: int, reasoning_tokens: int) -> ResponseUsage:
    return construct(
        ResponseUsage,
        input_tokens=input_tokens,
        input_tokens_details=construct(InputTokensDetails, cached_tokens=0, cache_write_tokens=0),
        output_tokens=output_tokens,
        output_tokens_details=construct(OutputTokensDetails, reasoning_tokens=reasoning_tokens),
        total_tokens=input_tokens + output_tokens,
    )


def envelope(context: ResponseContext, tools: list[Any]) -> dict[str, Any]:
    """Every Response field with the values ``context`` fixes (built once per request)."""
    found = context.envelope
    if found is not None:
        return found
    values: dict[str, Any] = dict.fromkeys(OPENAI_RESPONSE_FIELDS)
    values.update(_DEFAULTS)
    values.update(
        object="response",
        model=context.model,
        created_at=int(context.created_at),
        instructions=context.instructions,
        max_output_tokens=context.max_output_tokens,
        parallel_tool_calls=context.parallel_tool_calls,
        reasoning={"effort": None, "summary": None},
        temperature=context.temperature,
        text={"format": {"type": "text"}, "verbosity": "medium"},
        tool_choice=context.tool_choice,
        tools=tools,
        top_p=context.top_p,
    )
    values.update(context.echo)
    for name, default in SAMPLING_DEFAULTS.items():
        values[name] = _number(values.get(name), default)
    for name in _MODEL_FIELDS:
        if name in values:
            values[name] = _as_model(name, values[name])
    for name in _OTHER_FIELDS:
        values.setdefault(name, None)  # after the echoed ones (``prompt``)
    context.envelope = values
    return values


def json_value(value: Any) -> Any:
    """An envelope value as plain JSON values (models dumped with the keys they hold)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, warnings=False)
    if isinstance(value, list):
        return [json_value(v) for v in value]
    return value


def _number(value: Any, default: float) -> float:
    """``value`` as a float, ``default`` when it is not a number (unset)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return default


def _as_model(name: str, value: Any) -> Any:
    """A dict ``value`` as the ``openai`` type of the Response field ``name``.

    A model field holds the keys given; a union of models (``tool_choice``) is the member
    the value matches, whole.
    """
    field = Response.model_fields.get(name)
    if not isinstance(value, dict) or field is None:
        return value
    built = construct_type(type_=field.annotation, value=value)
    members = [t for t in typing.get_args(field.annotation) if t is not type(None)]
    return keys_given(built, value, drop=len(members) == 1)


def response_envelope(
    context: ResponseContext,
    tools: list[Any],
    items: Sequence[ItemRecord],
    *,
    status: str,
    usage_: ResponseUsage | None = None,
    incomplete_reason: str | None = None,
    error: tuple[str, str] | None = None,
) -> Response:
    """A ``Response`` snapshot; ``error`` is ``(code, message)``."""
    values = envelope(context, tools).copy()
    values["id"] = context.response_id
    values["status"] = status
    values["completed_at"] = int(context.clock()) if status == "completed" else None
    values["error"] = construct(ResponseError, code=error[0], message=error[1]) if error else None
    values["incomplete_details"] = (
        construct(IncompleteDetails, reason=incomplete_reason) if incomplete_reason else None
    )
    values["output"] = [build_item(record) for record in items]
    values["usage"] = usage_
    return construct_complete(Response, values)
