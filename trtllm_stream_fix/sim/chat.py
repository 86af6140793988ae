# SPDX-License-Identifier: Apache-2.0
"""``POST /v1/chat/completions`` on the simulated server (streaming and not).

``generator="ours"`` streams through :class:`~trtllm_stream_fix.core.chat_machine.
ChatChunkMachine`; ``"upstream"`` through the older upstream line's chat path re-implemented
in :mod:`trtllm_stream_fix.baseline.chat`. Generations are selected as for
``/v1/responses`` (``scenario``, ``seed``, ``metadata``, or a hash of the messages);
``tools`` and ``tool_choice`` are validated and, for the upstream generator, filter calls as
upstream does.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core import chat_chunks as cc
from ..core.chat_machine import (
    ChatChunkMachine,
    ChatContext,
    ChatGenerationError,
    ChatOptions,
    build_chat_completion,
)
from ..defaults import random_id
from .conversations import check_tool_messages
from .direct_routes import DirectRoutesApp
from .engine import Generation, SimulatedEngine
from .limits import ServerLimits
from .protocol import (
    MAX_TOKENS,
    MAX_TOP_LOGPROBS,
    SEED_RANGE,
    RequestError,
    check_metadata,
    decode_body,
    error_body,
    input_text,
    select_generation,
)
from .sse_response import EventStreamResponse
from .validation import check_value

logger = logging.getLogger(__name__)


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """The subset of ``POST /v1/chat/completions`` the simulated server honours.

    Unknown fields are accepted and ignored. Extension fields as for ``/v1/responses``:
    ``scenario``, ``seed``, ``stream_interval`` (and ``metadata.scenario`` / ``.seed``).
    """

    model_config = ConfigDict(extra="allow", strict=True)

    model: str = Field(min_length=1)
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    top_logprobs: int | None = Field(default=None, ge=0, le=MAX_TOP_LOGPROBS)
    n: int = Field(default=1, ge=1, le=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    metadata: dict[str, str] | None = None
    scenario: str | None = None
    seed: int | None = Field(default=None, ge=SEED_RANGE[0], le=SEED_RANGE[1])
    stream_interval: int | None = Field(default=None, ge=1, le=4096)


class _ChatFunction(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str | None = None
    parameters: dict[str, Any] | None = None


class _ChatTool(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["function"]
    function: _ChatFunction


def parse_chat_request(raw: bytes, *, max_depth: int = 64) -> ChatRequest:
    """Decode and validate a chat request body; raises :class:`RequestError` (400)."""
    request = decode_body(raw, ChatRequest, max_depth=max_depth)
    check_metadata(request.metadata)
    check_tool_messages(request.messages)
    if request.stream_options is not None and not request.stream:
        raise RequestError(
            400, "stream_options can only be set if stream is true", param="stream_options"
        )
    names: set[str] = set()
    for k, tool in enumerate(request.tools or ()):
        try:
            name = _ChatTool.model_validate(tool).function.name
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in (f"tools[{k}]", *first["loc"]))
            raise RequestError(
                400, f"invalid {where}: {first['msg']}", param=where, code="invalid_value"
            ) from None
        if name in names:
            raise RequestError(400, f"duplicate function name {name!r}", param=f"tools[{k}]")
        names.add(name)
    if request.tool_choice is not None:
        from openai.types.chat import ChatCompletionToolChoiceOptionParam

        check_value("tool_choice", ChatCompletionToolChoiceOptionParam, request.tool_choice)
    if request.tool_choice not in (None, "none") and not request.tools:
        raise RequestError(400, "tool_choice needs tools", param="tool_choice")
    return request


def add_chat_routes(
    app: DirectRoutesApp,
    *,
    engine: SimulatedEngine,
    encoding: Any,
    generator: str,
    models: tuple[str, ...],
    limits: ServerLimits,
    gauge: Any,
    options: ChatOptions | None = None,
) -> None:
    """Serve ``POST /v1/chat/completions`` on ``app``, as a direct route: the endpoint
    reads and bounds its request and answers its own errors, as ``/v1/responses`` does."""
    from .server import _tracked, prompt_tokens, read_request
    from .turns import chat_request

    options = options or ChatOptions()

    async def chat_completions(request: Request) -> Response:
        try:
            body = await read_request(request, parse_chat_request, limits, models)
            turn_input, tools, tool_choice = chat_request(
                body.messages, body.tools, body.tool_choice
            )
            generation = select_generation(
                engine,
                body,
                turn_input,
                max_output_tokens=body.max_completion_tokens or body.max_tokens,
                tools=tools,
                tool_choice=tool_choice,
                parallel_tool_calls=getattr(body, "parallel_tool_calls", None) is not False,
            )
            num_prompt_tokens = await prompt_tokens(input_text(body.messages), encoding, limits)
        except RequestError as exc:
            return JSONResponse(exc.body, status_code=exc.status)
        context = ChatContext(
            completion_id=random_id("chatcmpl").replace("_", "-", 1),
            model=body.model,
            created=int(time.time()),
            num_prompt_tokens=num_prompt_tokens,
            include_usage=bool(body.stream_options and body.stream_options.include_usage),
        )
        if not body.stream:
            return _completion(context, body, generation, generator, options, encoding)
        chunks = _stream(context, body, generation, engine, generator, options, encoding)
        return EventStreamResponse(
            _tracked(gauge, chunks),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    app.add_direct_route("/v1/chat/completions", chat_completions)


def _upstream_args(context: ChatContext, body: ChatRequest, encoding: Any) -> dict[str, Any]:
    """What the upstream chat path is given for one request (streamed or not)."""
    return {
        "model": context.model,
        "created": context.created,
        "num_prompt_tokens": context.num_prompt_tokens,
        "tools": body.tools,
        "tool_choice": body.tool_choice,
        "encoding": encoding,
    }


def _completion(
    context: ChatContext,
    body: ChatRequest,
    generation: Generation,
    generator: str,
    options: ChatOptions,
    encoding: Any,
) -> Response:
    if generator == "upstream":
        from ..baseline.chat import upstream_chat_completion

        completion = upstream_chat_completion(
            generation.delivered,
            generation.finish_reason,
            **_upstream_args(context, body, encoding),
        )
        return JSONResponse(completion)
    try:
        result = build_chat_completion(
            context,
            generation.delivered,
            generation.finish_reason,
            options=options,
            encoding=encoding,
        )
    except ChatGenerationError as exc:
        error = exc.error.error
        return JSONResponse(
            error_body(error.message, type_="server_error", code=error.code), status_code=500
        )
    return Response(cc.to_json(result), media_type="application/json")


async def _stream(
    context: ChatContext,
    body: ChatRequest,
    generation: Generation,
    engine: SimulatedEngine,
    generator: str,
    options: ChatOptions,
    encoding: Any,
) -> AsyncIterator[str]:
    """The SSE frames of one chat stream, one write per engine response."""
    if generator == "upstream":
        from ..baseline.chat import UpstreamChatBaseline

        stream: Any = UpstreamChatBaseline(**_upstream_args(context, body, encoding))
        frame: Callable[[Any], str] = _upstream_frame
    else:
        stream = ChatChunkMachine(context, options=options, encoding=encoding)
        frame = cc.format_chat_sse
    first = stream.start()
    if first:
        yield "".join(frame(f) for f in first)
    async for response in engine.stream(generation, body.stream_interval):
        frames = stream.feed(
            response.token_ids_diff,
            finished=response.finished,
            finish_reason=response.finish_reason,
        )
        if frames:
            yield "".join(frame(f) for f in frames)
        if response.finished:
            return


def _upstream_frame(payload: Any) -> str:
    if payload == "[DONE]":
        return "data: [DONE]\n\n"
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


__all__ = ["ChatRequest", "add_chat_routes", "parse_chat_request"]
