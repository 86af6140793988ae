# SPDX-License-Identifier: Apache-2.0
"""Strict checks of a request's ``tools``, ``input`` items and echoed fields (400 with the
field's path).

Function tools are checked against our own model (OpenAI's name rule, ``parameters`` an
object, ``strict`` a bool); other tool types against the openai SDK's ``ToolParam`` type of
that name. Input items are checked by type: messages (text parts), function calls and their
outputs, reasoning items, references to stored items (``item_reference``, resolved from the
store by the server), compaction items and Codex's ``compaction_trigger`` (both handled by
:mod:`trtllm_stream_fix.compaction`); other item types are refused, as the simulated engine
cannot render them. The fields a Response echoes (``tool_choice``, ``service_tier``, ``user``,
``reasoning`` ...) are checked against the ``openai`` Response model's type of that field, as
a strict client checks the Response that echoes them.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .errors import RequestError

#: OpenAI's rule for function names.
FUNCTION_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class FunctionTool(_Strict):
    type: Literal["function"]
    name: str = Field(pattern=FUNCTION_NAME_PATTERN)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class _TextPart(_Strict):
    type: str
    text: str | None = None


class _Message(_Strict):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[_TextPart]


class _FunctionCall(_Strict):
    type: Literal["function_call"]
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: str
    id: str | None = None


class _FunctionCallOutput(_Strict):
    type: Literal["function_call_output"]
    call_id: str = Field(min_length=1)
    output: str | list[_TextPart]


class _ItemReference(_Strict):
    type: Literal["item_reference"]
    id: str = Field(min_length=1)


class _Reasoning(_Strict):
    type: Literal["reasoning"]
    summary: list[_TextPart] = Field(default_factory=list)
    content: list[_TextPart] | None = None


class _Compaction(_Strict):
    type: Literal["compaction"]
    encrypted_content: str
    id: str | None = None


class _CompactionTrigger(_Strict):
    type: Literal["compaction_trigger"]
    id: str | None = None


_INPUT_ITEMS: dict[str, type[BaseModel]] = {
    "message": _Message,
    "function_call": _FunctionCall,
    "function_call_output": _FunctionCallOutput,
    "reasoning": _Reasoning,
    "item_reference": _ItemReference,
    "compaction": _Compaction,
    "compaction_trigger": _CompactionTrigger,
}


@functools.lru_cache(maxsize=1)
def _builtin_tools() -> dict[str, TypeAdapter[Any]]:
    """The openai SDK's tool param types other than function, by their ``type`` values."""
    from openai.types.responses import ToolParam

    adapters: dict[str, TypeAdapter[Any]] = {}
    for cls in typing.get_args(ToolParam):
        for name in typing.get_args(typing.get_type_hints(cls).get("type")):
            if isinstance(name, str) and name != "function":
                adapters[name] = TypeAdapter(cls)
    return adapters


def _path(prefix: str, loc: Sequence[Any]) -> str:
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _is_union_tag(part: str) -> bool:
    return part == "str" or "[" in part or part[:1].isupper()


def _reject(prefix: str, exc: ValidationError) -> RequestError:
    # The most specific error, one in the union member the object's ``type`` names rather
    # than a ``type`` mismatch of another member; union member tags ("str", "list[_TextPart]",
    # "ResponseFormatText") left out of the path.
    first = max(exc.errors(), key=lambda err: (len(err["loc"]), err["loc"][-1:] != ("type",)))
    loc = [p for p in first["loc"] if not (isinstance(p, str) and _is_union_tag(p))]
    param = _path(prefix, loc)
    return RequestError(400, f"invalid {param}: {first['msg']}", param=param, code="invalid_value")


def validate_tools(tools: Sequence[dict[str, Any]]) -> None:
    """Raise :class:`RequestError` (400) for a tool that is not a valid tool definition."""
    names: set[str] = set()
    for k, tool in enumerate(tools):
        kind = tool.get("type")
        where = f"tools[{k}]"
        if kind == "function":
            try:
                name = FunctionTool.model_validate(tool).name
            except ValidationError as exc:
                raise _reject(where, exc) from None
            if name in names:
                raise RequestError(400, f"duplicate function name {name!r}", param=f"{where}.name")
            names.add(name)
            continue
        adapter = _builtin_tools().get(kind) if isinstance(kind, str) else None
        if adapter is None:
            raise RequestError(
                400, f"unknown tool type {kind!r}", param=f"{where}.type", code="invalid_value"
            )
        try:
            adapter.validate_python(tool, strict=True)
        except ValidationError as exc:
            raise _reject(where, exc) from None


def validate_input(request_input: str | Sequence[dict[str, Any]]) -> None:
    """Raise :class:`RequestError` (400) for an input item the server cannot use."""
    if isinstance(request_input, str):
        return
    for k, item in enumerate(request_input):
        kind = item.get("type", "message")
        model = _INPUT_ITEMS.get(kind) if isinstance(kind, str) else None
        if model is None:
            raise RequestError(
                400,
                f"unsupported input item type {kind!r}; supported: {sorted(_INPUT_ITEMS)}",
                param=f"input[{k}].type",
                code="invalid_value",
            )
        try:
            model.model_validate(item)
        except ValidationError as exc:
            raise _reject(f"input[{k}]", exc) from None


def _type_values(member: Any) -> tuple[Any, ...]:
    """The ``type`` literals of a model or TypedDict union member (none for others)."""
    if isinstance(member, type) and issubclass(member, BaseModel):
        field = member.model_fields.get("type")
        return typing.get_args(field.annotation) if field else ()
    try:
        return typing.get_args(typing.get_type_hints(member).get("type"))
    except (NameError, TypeError):
        return ()


@functools.lru_cache(maxsize=64)
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def check_value(name: str, annotation: Any, value: Any) -> None:
    """Raise :class:`RequestError` (400, ``param`` the path) unless ``value`` is valid, in
    strict mode, for ``annotation``. An object in a union of typed objects is checked against
    the member its ``type`` names, so the error names the field within it."""
    if isinstance(value, dict):
        members = [m for m in typing.get_args(annotation) if _type_values(m)]
        if members:
            kind = value.get("type")
            named = [m for m in members if kind in _type_values(m)]
            if not named:
                known = sorted(v for m in members for v in _type_values(m))
                raise RequestError(
                    400,
                    f"invalid {name}.type {kind!r}; expected one of {known}",
                    param=f"{name}.type",
                    code="invalid_value",
                )
            annotation = named[0]
    try:
        _adapter(annotation).validate_python(value, strict=True)
    except ValidationError as exc:
        if isinstance(value, dict):
            raise _reject(name, exc) from None
        message = exc.errors()[0]["msg"]
        raise RequestError(
            400, f"invalid {name}: {message}", param=name, code="invalid_value"
        ) from None


@functools.lru_cache(maxsize=1)
def _response_fields() -> dict[str, Any]:
    from openai.types.responses import Response

    return {name: field.annotation for name, field in Response.model_fields.items()}


def validate_echo(fields: dict[str, Any]) -> None:
    """Raise :class:`RequestError` (400) for a field a Response would echo (``fields``: name
    -> the value echoed) that the ``openai`` Response type does not accept there."""
    types = _response_fields()
    for name, value in fields.items():
        if value is not None and name in types:
            check_value(name, types[name], value)
