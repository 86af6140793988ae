# SPDX-License-Identifier: Apache-2.0
"""Chat Completions wire objects: chunks, the finish and usage chunks, errors, SSE framing.

Shapes are ``openai.types.chat`` models built with ``fastmodel.construct`` (the values are
ours). A chunk's ``choices[0].finish_reason`` is always on the wire (``null`` until the
finish chunk), as OpenAI sends it; other None fields are left out. ``reasoning`` (or
``reasoning_content``) is an extra field of the delta and of the message, the field vLLM and
TensorRT-LLM's ``DeltaMessage`` carry for gpt-oss.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, TypeVar

from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
)
from openai.types.chat.chat_completion import Choice as CompletionChoice
from openai.types.chat.chat_completion_chunk import (
    Choice,
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChoiceDeltaToolCallFunction,
)
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.completion_usage import CompletionTokensDetails, CompletionUsage
from openai.types.shared import ErrorObject
from pydantic import BaseModel

from .compat import json_dumps, json_loads
from .fastmodel import construct, construct_complete, mark_set, with_extra


@dataclass(frozen=True, slots=True)
class ChatHeader:
    """What every chunk of one completion repeats."""

    completion_id: str
    model: str
    created: int


@dataclass(frozen=True, slots=True)
class ChatStreamError:
    """An error payload (``data: {"error": {...}}``): the OpenAI SDK raises ``APIError`` on it."""

    error: ErrorObject


class _Done:
    """The ``data: [DONE]`` sentinel that ends every stream."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DONE"


DONE = _Done()
Frame = ChatCompletionChunk | ChatStreamError | _Done


Envelope = TypeVar("Envelope", ChatCompletionChunk, ChatCompletion)


def _envelope(
    cls: type[Envelope], obj: str, header: ChatHeader, choices: list[Any], usage: Any
) -> Envelope:
    """A chunk or a completion of ``header``'s completion: ``object`` is ``obj``."""
    return construct(
        cls,
        id=header.completion_id,
        object=obj,
        created=header.created,
        model=header.model,
        choices=choices,
        usage=usage,
    )


def _chunk(header: ChatHeader, choices: list[Any], usage: Any = None) -> ChatCompletionChunk:
    return _envelope(ChatCompletionChunk, "chat.completion.chunk", header, choices, usage)


def _choice(delta: ChoiceDelta, finish_reason: str | None = None) -> Choice:
    choice = construct(Choice, index=0, delta=delta, finish_reason=finish_reason)
    return mark_set(choice, "finish_reason")  # ``null`` on the wire until the end


def role_chunk(header: ChatHeader) -> ChatCompletionChunk:
    """The first chunk: ``delta.role = "assistant"``."""
    return _chunk(header, [_choice(construct(ChoiceDelta, role="assistant"))])


_DELTA_NONE = dict.fromkeys(ChoiceDelta.model_fields)


def text_chunk(header: ChatHeader, field: str, text: str) -> ChatCompletionChunk:
    """A ``content`` delta, or a reasoning delta in the extra field ``field``.

    The per-token path: the three models are filled from complete dicts (no defaults walk).
    """
    values = dict(_DELTA_NONE)
    if field == "content":
        values["content"] = text
        delta = construct_complete(ChoiceDelta, values, {"content"})
    else:
        delta = construct_complete(ChoiceDelta, values, set(), {field: text})
    choice = construct_complete(
        Choice,
        {"delta": delta, "finish_reason": None, "index": 0, "logprobs": None},
        {"delta", "finish_reason", "index"},
    )
    return construct_complete(
        ChatCompletionChunk,
        {
            "id": header.completion_id,
            "choices": [choice],
            "created": header.created,
            "model": header.model,
            "object": "chat.completion.chunk",
            "moderation": None,
            "obfuscation": None,
            "service_tier": None,
            "system_fingerprint": None,
            "usage": None,
        },
        {"id", "choices", "created", "model", "object"},
    )


def tool_call_chunk(
    header: ChatHeader, index: int, arguments: str, call_id: str | None, name: str | None
) -> ChatCompletionChunk:
    """A tool-call delta; the first of a call carries ``id``, ``type`` and the name."""
    first = call_id is not None
    call = construct(
        ChoiceDeltaToolCall,
        index=index,
        id=call_id,
        type="function" if first else None,
        function=construct(ChoiceDeltaToolCallFunction, name=name, arguments=arguments),
    )
    return _chunk(header, [_choice(construct(ChoiceDelta, tool_calls=[call]))])


def finish_chunk(header: ChatHeader, finish_reason: str | None) -> ChatCompletionChunk:
    """The one chunk that carries ``finish_reason`` (empty delta)."""
    return _chunk(header, [_choice(construct(ChoiceDelta), finish_reason)])


def completion_usage(prompt: int, completion: int, reasoning: int) -> CompletionUsage:
    return construct(
        CompletionUsage,
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        completion_tokens_details=construct(CompletionTokensDetails, reasoning_tokens=reasoning),
    )


def usage_chunk(header: ChatHeader, usage: CompletionUsage) -> ChatCompletionChunk:
    """The ``stream_options.include_usage`` chunk: no choices, the usage."""
    return _chunk(header, [], usage)


def stream_error(message: str, code: str = "server_error") -> ChatStreamError:
    return ChatStreamError(
        construct(ErrorObject, message=message, type=code, code=code, param=None)
    )


def completion(
    header: ChatHeader,
    *,
    content: str | None,
    reasoning: str | None,
    reasoning_field: str,
    tool_calls: list[tuple[str, str, str]],
    finish_reason: str,
    usage: CompletionUsage,
) -> ChatCompletion:
    """The non-streaming ``chat.completion``; ``tool_calls`` are ``(id, name, arguments)``."""
    calls = [
        construct(
            ChatCompletionMessageFunctionToolCall,
            id=call_id,
            type="function",
            function=construct(Function, name=name, arguments=arguments),
        )
        for call_id, name, arguments in tool_calls
    ]
    message = construct(
        ChatCompletionMessage, role="assistant", content=content, tool_calls=calls or None
    )
    mark_set(message, "content")  # ``null`` when the turn has no text
    if reasoning is not None:
        with_extra(message, {reasoning_field: reasoning})
    choice = construct(
        CompletionChoice, index=0, message=message, finish_reason=finish_reason, logprobs=None
    )
    mark_set(choice, "logprobs")
    return _envelope(ChatCompletion, "chat.completion", header, [choice], usage)


# -- JSON and SSE -----------------------------------------------------------------------------


def _fields(value: Any) -> Any:
    """orjson ``default``: a model's set fields (as ``exclude_unset``) plus its extra fields."""
    if not isinstance(value, BaseModel):
        raise TypeError(f"cannot serialise {type(value).__name__}")
    keep = value.__pydantic_fields_set__
    fields = {k: v for k, v in value.__dict__.items() if k in keep}
    extra = value.__pydantic_extra__
    if extra:
        fields.update(extra)
    return fields


def to_dict(frame: Any) -> Any:
    """A JSON-ready value of ``frame`` (``"[DONE]"`` for the sentinel)."""
    if frame is DONE:
        return "[DONE]"
    return json_loads(to_json(frame))


@functools.lru_cache(maxsize=4096)
def _chunk_prefix(completion_id: str, created: int, model: str) -> str:
    head = json_dumps(
        {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model}
    ).decode()
    return head[:-1] + ',"choices":[{"index":0,"delta":{'


def _text_json(frame: ChatCompletionChunk) -> str | None:
    """A one-field text chunk's JSON from a per-completion prefix (the per-token path)."""
    d = frame.__dict__
    choices = d["choices"]
    if d["usage"] is not None or len(choices) != 1 or d["system_fingerprint"] is not None:
        return None
    choice = choices[0].__dict__
    if choice["finish_reason"] is not None or choice["logprobs"] is not None:
        return None
    delta = choice["delta"]
    extra = delta.__pydantic_extra__
    fields = delta.__pydantic_fields_set__
    if not fields and extra and len(extra) == 1:
        ((field, text),) = extra.items()
    elif fields == {"content"} and not extra:
        field, text = "content", delta.__dict__["content"]
    else:
        return None
    if type(text) is not str or type(field) is not str:
        return None
    prefix = _chunk_prefix(d["id"], d["created"], d["model"])
    pair = f"{json_dumps(field).decode()}:{json_dumps(text).decode()}"
    return f'{prefix}{pair}}},"finish_reason":null}}]}}'


def to_json(frame: Any) -> str:
    """``frame`` as compact JSON: a chunk, a completion or an error payload."""
    if type(frame) is ChatCompletionChunk:
        text = _text_json(frame)
        if text is not None:
            return text
    if isinstance(frame, ChatStreamError):
        return json_dumps({"error": frame.error}, default=_fields).decode()
    return json_dumps(frame, default=_fields).decode()


def format_chat_sse(frame: Any) -> str:
    """One SSE frame: ``data: <json>\\n\\n`` (``data: [DONE]\\n\\n`` for the sentinel)."""
    if frame is DONE:
        return "data: [DONE]\n\n"
    return f"data: {to_json(frame)}\n\n"
