# SPDX-License-Identifier: Apache-2.0
"""Local OpenAI Responses server backed by the simulated gpt-oss engine.

``create_app(engine_config, generator)`` serves ``POST /v1/responses`` (SSE stream or JSON),
``GET`` and ``DELETE /v1/responses/{id}`` (stored responses, from the ``store`` it is given:
in-process by default, Redis to share them between replicas), ``POST /v1/chat/completions``
(:mod:`.chat`), ``GET /v1/models`` and ``GET /health`` (``{"active_streams": n}``).
``generator="ours"`` streams through :class:`~trtllm_stream_fix.core.machine.ResponsesEventMachine`;
``"upstream"`` through the upstream-equivalent baseline, for comparison.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from ..core import events as ev
from ..core.config import StreamConfig
from ..core.context import ResponseContext
from ..core.events import TERMINAL_TYPES
from ..core.harmony_utf8 import token_bytes
from ..core.machine import ResponsesEventMachine
from ..core.nonstreaming import build_response
from ..core.response import response_envelope as build_response_object
from ..core.response import typed_tools
from ..core.sse import format_sse, model_to_json
from ..defaults import new_context, random_id
from ..store import MemoryStore, ResponseStore, StoreError
from ..store.base import decode
from .compaction import SimCompaction
from .conversations import (
    Conversation,
    engine_input,
    load_conversation,
    prompt_text,
    store_failure,
    turn_messages,
)
from .direct_routes import DirectRoutesApp
from .engine import EngineConfig, Generation, SimulatedEngine
from .faults import inject
from .limits import ServerLimits, check_input_size, count_prompt_tokens
from .protocol import (
    RequestError,
    ResponsesRequest,
    echoed_fields,
    error_body,
    parse_request,
    select_generation,
)
from .sse_response import EventStreamResponse
from .websocket_route import WebSocketSettings, add_websocket_route

logger = logging.getLogger(__name__)
#: Connection events (a client that left) go where uvicorn logs its own, at ``--log-level``.
connection_logger = logging.getLogger("uvicorn.error")

Generator = Literal["ours", "upstream"]
DEFAULT_MODELS = ("gpt-oss-20b", "gpt-oss-120b")
DEFAULT_MAX_BODY_BYTES = ServerLimits.max_body_bytes
#: Prompts up to this many characters are tokenised on the event loop (tens of µs).
INLINE_PROMPT_CHARS = 4096


class StreamGauge:
    """Counts the streams whose per-request state is alive."""

    def __init__(self) -> None:
        self.active = 0
        self.total = 0

    def opened(self) -> None:
        self.active += 1
        self.total += 1

    def closed(self) -> None:
        self.active -= 1


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, or :class:`RequestError` 413 once it exceeds ``limit`` bytes.

    A client that disconnects before its body is complete is logged in one line (it is not
    an error of the server) and answered 400, which nobody reads.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(413, f"request body exceeds {limit} bytes", code="body_too_large")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise RequestError(
                    413, f"request body exceeds {limit} bytes", code="body_too_large"
                )
    except ClientDisconnect:
        connection_logger.info(
            "client disconnected while sending its request to %s (%d bytes received)",
            request.url.path,
            len(body),
        )
        raise RequestError(
            400, "client disconnected before the request body was complete"
        ) from None
    return bytes(body)


class _Streamer:
    """Builds the SSE chunks (one per engine response) of one request."""

    def __init__(
        self,
        engine: SimulatedEngine,
        generator: Generator,
        stream_config: StreamConfig,
        encoding: Any,
    ) -> None:
        self.engine = engine
        self.generator = generator
        self.stream_config = stream_config
        self.encoding = encoding

    def _stream_object(self, context: ResponseContext) -> Any:
        if self.generator == "upstream":
            from ..baseline.responses import UpstreamBaselineStream

            return UpstreamBaselineStream(context, encoding=self.encoding)
        return ResponsesEventMachine(
            context,
            config=self.stream_config,
            encoding=self.encoding,
            new_id=random_id,
        )

    async def chunks(
        self,
        context: ResponseContext,
        generation: Generation,
        interval: int | None,
        on_end: Callable[[Any], Awaitable[list[Any]]] | None = None,
        wrap: Callable[[Any], Any] | None = None,
    ) -> AsyncIterator[str]:
        """The SSE chunks; ``on_end`` gets the terminal event before it is sent and returns
        the events sent in its place (itself, or ``error`` + ``response.failed``); ``wrap``
        wraps the event machine (a compaction item streamed first)."""
        stream = self._stream_object(context)
        if wrap is not None:
            stream = wrap(stream)
        sent: list[Any] = list(stream.start())
        yield "".join(format_sse(event) for event in sent)
        next_seq = sent[-1].sequence_number + 1
        async for response in self.engine.stream(generation, interval):
            try:
                events = stream.feed(
                    response.token_ids_diff,
                    finished=response.finished,
                    finish_reason=response.finish_reason,
                )
            except Exception as exc:
                # Upstream's stream guard turns an escaping exception into error + failed.
                logger.warning("upstream-equivalent stream raised: %r", exc)
                failed = _failed_events(context, f"{type(exc).__name__}: {exc}", next_seq)
                if on_end is not None:
                    failed[-1:] = await on_end(failed[-1])
                yield "".join(format_sse(event) for event in failed)
                return
            if events:
                next_seq = events[-1].sequence_number + 1
                if on_end is not None and events[-1].type in TERMINAL_TYPES:
                    events[-1:] = await on_end(events[-1])
                yield "".join(format_sse(event) for event in events)
            if response.finished:
                return


def warm_up(encoding: Any, stream_config: StreamConfig) -> None:
    """Stream every named scenario once, so that no request pays for building the event and
    item classes' schemas (the openai models defer them to first use)."""
    from .model import NAMED_SCENARIOS, engine_responses, named_output

    for name in NAMED_SCENARIOS:
        output = named_output(name)
        machine = ResponsesEventMachine(new_context(), config=stream_config, encoding=encoding)
        events = machine.start()
        for response in engine_responses(output, 7):
            events += machine.feed(
                response.token_ids_diff,
                finished=response.finished,
                finish_reason=response.finish_reason,
            )
        for event in events:
            format_sse(event)


def _unstored_events(terminal: Any, message: str) -> list[Any]:
    """``error`` + ``response.failed`` in place of ``terminal``, whose response the store
    could not keep: the items the client saw, status ``failed`` with the store's error."""
    from openai.types.responses import ResponseError

    failed = terminal.response.model_copy(
        update={
            "status": "failed",
            "error": ResponseError(code="server_error", message=message),
            "incomplete_details": None,
            "completed_at": None,
        }
    )
    seq = terminal.sequence_number
    return [
        ev.error(message, "server_error", seq),
        ev.lifecycle("response.failed", failed, seq + 1),
    ]


def _failed_events(context: ResponseContext, message: str, seq: int) -> list[Any]:
    failed = build_response_object(
        context,
        typed_tools(context.tools),
        [],
        status="failed",
        error=("server_error", message),
    )
    return [
        ev.error(message, "server_error", seq),
        ev.lifecycle("response.failed", failed, seq + 1),
    ]


async def read_request(
    request: Request, parse: Callable[..., Any], limits: ServerLimits, models: tuple[str, ...]
) -> Any:
    """The request body read within ``limits`` and decoded by ``parse``; a model this server
    does not serve is a :class:`RequestError` 404 (both endpoints)."""
    body = parse(await read_body(request, limits.max_body_bytes), max_depth=limits.max_json_depth)
    if body.model not in models:
        raise RequestError(
            404, f"model {body.model!r} not found", param="model", code="model_not_found"
        )
    return body


async def prompt_tokens(prompt: str, encoding: Any, limits: ServerLimits) -> int:
    """Tokens of ``prompt``, counted within ``limits`` (RequestError past them): large
    prompts in a worker thread, so the event loop keeps serving (both endpoints)."""
    check_input_size(prompt, limits)
    if len(prompt) <= INLINE_PROMPT_CHARS:  # a thread hand-off costs more than this
        return count_prompt_tokens(encoding, prompt, limits)
    return await run_in_threadpool(count_prompt_tokens, encoding, prompt, limits)


def _context(request: ResponsesRequest, num_prompt_tokens: int) -> ResponseContext:
    return new_context(
        model=request.model,
        num_prompt_tokens=num_prompt_tokens,
        tools=request.tools,
        tool_choice=request.tool_choice,
        parallel_tool_calls=request.parallel_tool_calls,
        instructions=request.instructions,
        max_output_tokens=request.max_output_tokens,
        temperature=request.temperature,
        top_p=request.top_p,
        echo=echoed_fields(request),
    )


def _error(exc: RequestError) -> JSONResponse:
    return JSONResponse(exc.body, status_code=exc.status)


def _install_error_handlers(app: FastAPI) -> None:
    """Every error answer is OpenAI-shaped JSON (unknown routes, methods, internal errors)."""

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        body = error_body(str(exc.detail), code=f"http_{exc.status_code}")
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("request to %s failed", request.url.path)
        body = error_body("internal server error", type_="server_error", code="internal_error")
        return JSONResponse(body, status_code=500)


def create_app(
    engine_config: EngineConfig | None = None,
    generator: Generator = "ours",
    *,
    stream_config: StreamConfig | None = None,
    limits: ServerLimits | None = None,
    max_body_bytes: int | None = None,
    allow_faults: bool = False,
    models: tuple[str, ...] = DEFAULT_MODELS,
    store: ResponseStore | None = None,
    compaction_key: bytes | None = None,
    websocket: WebSocketSettings | None = None,
) -> FastAPI:
    """The local server app (one simulated engine, one stream generator).

    ``limits`` bounds each request (``max_body_bytes`` overrides its body size); ``store``
    keeps the responses (default: a new in-process :class:`~trtllm_stream_fix.store.MemoryStore`);
    ``compaction_key`` seals compaction items (default: ``TRTLLM_STREAM_FIX_COMPACTION_KEY``);
    ``websocket`` sets WebSocket mode on ``GET /v1/responses`` (default: on, OpenAI's limits).
    """
    if generator not in ("ours", "upstream"):
        raise ValueError(f"unknown generator {generator!r}")
    limits = limits or ServerLimits()
    if max_body_bytes is not None:
        limits = dataclasses.replace(limits, max_body_bytes=max_body_bytes)
    from ..encoding import load_gpt_oss_encoding

    engine_config = engine_config or EngineConfig()
    stream_config = stream_config or StreamConfig()
    encoding = load_gpt_oss_encoding()
    token_bytes(encoding)  # the fast parser's table, built now rather than in a request
    warm_up(encoding, stream_config)
    engine = SimulatedEngine(engine_config)
    streamer = _Streamer(engine, generator, stream_config, encoding)
    gauge = StreamGauge()
    store = store if store is not None else MemoryStore()
    started = int(time.time())
    compaction = SimCompaction(
        engine,
        encoding,
        store,
        models,
        put=lambda text, conversation: _put(store, text, conversation),
        key=compaction_key,
        max_prompt_tokens=limits.max_input_tokens,
    )

    app = DirectRoutesApp(
        title="trtllm-stream-fix simulated gpt-oss server",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    # No 307 to the path without (or with) a trailing slash: ``/v1/responses/{id}/`` (and
    # ``{id}%2F``) is an unknown route, OpenAI's 404, never the response ``{id}``.
    app.router.redirect_slashes = False
    _install_error_handlers(app)
    app.state.gauge = gauge
    app.state.limits = limits
    app.state.engine = engine
    app.state.generator = generator
    app.state.store = store

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "generator": generator,
            "stream_interval": engine_config.stream_interval,
            "active_streams": gauge.active,
            "total_streams": gauge.total,
        }

    @app.get("/v1/models")
    async def list_models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": started, "owned_by": "trtllm-stream-fix"}
                for m in models
            ],
        }

    async def responses(request: Request) -> Response:
        try:
            body = await read_request(request, parse_request, limits, models)
            if body.sim_fault and not allow_faults:
                raise RequestError(
                    400, "fault injection is disabled on this server", param="sim_fault"
                )
            plan = compaction.plan(body)
            conversation = await load_conversation(
                store,
                body.previous_response_id,
                plan.input,
                store_turn=body.store,
                max_bytes=limits.max_body_bytes,
            )
            if plan.trigger:
                return await _trigger_turn(body, conversation)
            managed = await compaction.manage(body, conversation, plan)
            conversation = managed.conversation
            # Bounded before anything is generated: the whole text the model reads.
            model_view = Conversation(
                conversation.history, managed.model_input, conversation.previous_calls
            )
            prompt = prompt_text(body.instructions, model_view, limits)
            num_prompt_tokens = await prompt_tokens(prompt, encoding, limits)
            generation = select_generation(
                engine,
                body,
                engine_input(managed.model_input, conversation.previous_calls),
                max_output_tokens=body.max_output_tokens,
                tools=body.tools,
                tool_choice=body.tool_choice,
                parallel_tool_calls=body.parallel_tool_calls,
                reasoning_effort=(body.reasoning or {}).get("effort"),
            )
        except RequestError as exc:
            return _error(exc)
        if body.sim_fault == "http503":
            return JSONResponse(
                error_body("engine overloaded", type_="server_error", code="overloaded"),
                status_code=503,
            )
        context = _context(body, num_prompt_tokens)
        if not body.stream:
            response = build_response(
                context,
                generation.delivered,
                generation.finish_reason,
                config=stream_config,
                encoding=encoding,
                new_id=random_id,
            )
            text = model_to_json(managed.response(response))
            if body.store:
                try:
                    await _put(store, text, conversation)
                except StoreError as exc:
                    return _error(store_failure(exc))
            return Response(text, media_type="application/json")

        async def stored(terminal: Any) -> list[Any]:
            try:
                await _put(store, model_to_json(terminal.response), conversation)
            except StoreError as exc:
                logger.warning("response %s not stored: %s", terminal.response.id, exc)
                return _unstored_events(terminal, str(exc))
            return [terminal]

        chunks: AsyncIterator[Any] = streamer.chunks(
            context,
            generation,
            body.stream_interval,
            stored if body.store else None,
            managed.wrap if managed.compaction is not None else None,
        )
        if body.sim_fault:
            chunks = inject(body.sim_fault, chunks)
        # The first chunk (created + in_progress, echoing the request) is built before the
        # 200 is sent: a request it cannot serialise fails as JSON, not mid-body.
        first = await chunks.__anext__()
        return EventStreamResponse(
            _tracked(gauge, chunks, first),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def _trigger_turn(body: Any, conversation: Conversation) -> Response:
        """A create whose last input item is ``compaction_trigger``: one compaction item."""
        context = _context(body, 0)
        if not body.stream:
            text = await compaction.trigger_body(body, context, conversation)
            return Response(text, media_type="application/json")
        chunks = compaction.trigger_chunks(body, context, conversation)
        first = await chunks.__anext__()
        return EventStreamResponse(
            _tracked(gauge, chunks, first),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def compact(request: Request) -> Response:
        try:
            raw = await read_body(request, limits.max_body_bytes)
        except RequestError as exc:
            return _error(exc)
        return await compaction.compact_endpoint(raw, limits.max_json_depth)

    # The endpoint reads, bounds and answers the request itself: FastAPI's middleware and
    # per-request dependency and response handling would be work for nothing.
    app.add_direct_route("/v1/responses", responses)
    app.add_direct_route("/v1/responses/compact", compact)
    add_websocket_route(app, responses, store, websocket or WebSocketSettings())

    @app.get("/v1/responses/{response_id}")
    async def get_response(response_id: str) -> Response:
        return await _stored_answer(store.get(response_id), response_id, JSONResponse)

    @app.delete("/v1/responses/{response_id}")
    async def delete_response(response_id: str) -> Response:
        deleted = {"id": response_id, "object": "response", "deleted": True}
        return await _stored_answer(
            store.delete(response_id), response_id, lambda _: JSONResponse(deleted)
        )

    from ..core.chat_machine import ChatOptions
    from .chat import add_chat_routes

    add_chat_routes(
        app,
        engine=engine,
        encoding=encoding,
        generator=generator,
        models=models,
        limits=limits,
        gauge=gauge,
        options=ChatOptions.from_config(stream_config),
    )
    return app


async def _put(store: ResponseStore, response_json: str, conversation: Conversation) -> None:
    """Store a turn's response (its JSON as sent) with the conversation's messages."""
    response = decode(response_json)
    await store.put(response, turn_messages(conversation, response["output"]))


async def _stored_answer(
    call: Awaitable[Any], response_id: str, answer: Callable[[Any], Response]
) -> Response:
    """``answer`` of what a store ``call`` about ``response_id`` returned; OpenAI's 404 when
    the store does not hold it (None or False), 503 / 500 when the store fails."""
    try:
        found = await call
    except StoreError as exc:
        return _error(store_failure(exc))
    if found is None or found is False:
        return _error(RequestError(404, f"Response with id '{response_id}' not found."))
    return answer(found)


async def _tracked(
    gauge: StreamGauge, chunks: AsyncIterator[Any], first: Any = None
) -> AsyncIterator[Any]:
    """``first`` (unless None), then ``chunks``, counted in ``gauge`` while alive; ``chunks``
    closed on disconnect or error."""
    gauge.opened()
    try:
        if first is not None:
            yield first
        async for chunk in chunks:
            yield chunk
    finally:
        gauge.closed()
        await chunks.aclose()  # type: ignore[attr-defined]
