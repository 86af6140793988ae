# SPDX-License-Identifier: Apache-2.0
"""Strict checks of a request's ``tools`` and ``input`` items (400 with the field's path).

Function tools are checked against our own model (OpenAI's name rule, ``parameters`` an
object, ``strict`` a bool); other tool types against the openai SDK's ``ToolParam`` type of
that name. Input items are checked by type: messages (text parts), function calls and their
outputs, reasoning items, references to stored items (``item_reference``, resolved from the
store by the server); other item types are refused, as the simulated engine cannot render
them.
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


_INPUT_ITEMS: dict[str, type[BaseModel]] = {
    "message": _Message,
    "function_call": _FunctionCall,
    "function_call_output": _FunctionCallOutput,
    "reasoning": _Reasoning,
    "item_reference": _ItemReference,
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


def _reject(prefix: str, exc: ValidationError) -> RequestError:
    # The most specific error; union branch tags ("str", "list[_TextPart]") left out.
    first = max(exc.errors(), key=lambda err: len(err["loc"]))
    loc = [p for p in first["loc"] if not (isinstance(p, str) and (p == "str" or "[" in p))]
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
