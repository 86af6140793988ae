# SPDX-License-Identifier: Apache-2.0
"""Stand-in of the ``/v1/responses`` part of ``tensorrt_llm.serve.openai_server``.

Like upstream, this module imports ``ResponsesStreamingProcessor``,
``responses_api_streaming_post_processor`` and ``request_preprocess`` (as
``responses_api_request_preprocess``) by name, so the handler uses whatever these module
globals are bound to when a request arrives. ``OpenAIServer.openai_responses`` follows the
handler's steps; the engine is replaced by ``engine``, a callable that receives the prompt
tokens and sampling params and returns an async iterator of ``GenerationResult`` updates.
With ``postproc_worker_enabled`` the post-processor and its args are pickled and unpickled
once per request, as the executor sends them to a PostprocWorker, and each response's
frames are read from ``outputs[0]._postprocess_result``. Frames are restamped at the egress
(``stamp_sse_sequence_number``).

Where FastAPI is installed, ``OpenAIServer.__init__`` builds ``self.app`` with the
``FastAPI`` name imported here and registers ``GET`` / ``DELETE /v1/responses/{id}``,
whose handlers call the conversation store with no error path, as upstream's do (without
FastAPI: no name, no app; the plugin's optional app patch then finds nothing to patch).

``POST /v1/responses`` calls ``openai_responses(request, raw_request)`` as upstream's route
does; given a ``raw_request`` the handler answers as upstream's: a ``StreamingResponse`` of
SSE frames, a ``JSONResponse`` body, or upstream's flat error body (a 404 for an unknown
``previous_response_id``), and starts ``await_disconnected(raw_request, promise)``, which
polls ``raw_request.is_disconnected()`` and aborts the unfinished engine request (recorded
in ``aborted``). Called without one (the tests' direct calls), it returns the SSE generator
or the response object (its signature is upstream's: ``raw_request`` has no default).
"""

from __future__ import annotations

import asyncio
import inspect
import pickle
from collections.abc import AsyncIterator, Callable
from typing import Any

try:
    from fastapi import FastAPI, Request  # Request: the POST's raw_request
except ImportError:  # no web framework: no app
    pass

from ..executor.postproc_worker import PostprocParams
from .openai_protocol import ResponsesRequest
from .postprocess_handlers import (  # noqa: F401  (chat names bound as upstream binds them)
    ResponsesAPIPostprocArgs,
    chat_harmony_post_processor,
    chat_harmony_streaming_post_processor,
    responses_api_post_processor,
    responses_api_streaming_post_processor,
)
from .responses_utils import (
    STANDIN_LINE,
    ConversationHistoryStore,
    ResponsesStreamingProcessor,
    guard_responses_stream,
    stamp_sse_sequence_number,
)
from .responses_utils import create_response as responses_api_create_response
from .responses_utils import request_preprocess as responses_api_request_preprocess

Engine = Callable[[list[int], Any], AsyncIterator[Any]]


def _without_default(func: Any, name: str) -> inspect.Signature:
    """``func``'s signature with parameter ``name`` required."""
    signature = inspect.signature(func)
    params = [
        p.replace(default=inspect.Parameter.empty) if p.name == name else p
        for p in signature.parameters.values()
    ]
    return signature.replace(parameters=params)


class OpenAIServer:
    def __init__(
        self,
        engine: Engine,
        model: str = "gpt-oss-20b",
        use_harmony: bool = True,
        num_postprocess_workers: int = 0,
        worker: Callable[[bytes, Any], Any] | None = None,
    ) -> None:
        self.engine = engine
        self.model = model
        self.use_harmony = use_harmony
        self.postproc_worker_enabled = num_postprocess_workers > 0
        self.enable_store = not self.postproc_worker_enabled
        self.conversation_store = ConversationHistoryStore()
        self.tool_parser = None
        self.reasoning_parser = None
        # How a PostprocWorker runs: (pickled PostprocParams, response) -> frames.
        self.worker = worker or _inline_worker
        self.aborted: list[str] = []  # request ids await_disconnected aborted
        self.watchers: set[asyncio.Task] = set()
        self.disconnect_poll = 0.05  # upstream polls every second
        if "FastAPI" in globals():
            self.app = FastAPI()
            self.register_routes()

    def register_routes(self) -> None:
        self.app.add_api_route("/v1/responses", self.openai_responses, methods=["POST"])
        route = "/v1/responses/{response_id}"
        self.app.add_api_route(route, self.openai_responses_get_response, methods=["GET"])
        self.app.add_api_route(route, self.openai_responses_delete_response, methods=["DELETE"])

    def _error(self, message: str, status: int) -> Any:
        from fastapi.responses import JSONResponse

        body = {"object": "error", "message": message, "type": "InvalidRequestError"}
        return JSONResponse({**body, "param": None, "code": status}, status_code=status)

    async def openai_responses_get_response(self, response_id: str) -> Any:
        from fastapi.responses import JSONResponse

        response = await self.conversation_store.load_response(response_id)
        if response is None:
            return self._error(f"Response with id '{response_id}' not found.", 404)
        return JSONResponse(content=response.model_dump())

    async def openai_responses_delete_response(self, response_id: str) -> Any:
        from fastapi.responses import JSONResponse

        if not await self.conversation_store.pop_response(response_id):
            return self._error(f"Response with id '{response_id}' not found.", 404)
        return JSONResponse(content={"id": response_id, "object": "response", "deleted": True})

    async def await_disconnected(self, raw_request: Any, promise: _Promise) -> None:
        while not await raw_request.is_disconnected():
            await asyncio.sleep(self.disconnect_poll)
        if not promise.finished:
            promise.abort()
            self.aborted.append(promise.request_id)

    async def openai_responses(self, request: ResponsesRequest, raw_request: Request = None) -> Any:
        if raw_request is None:
            return await self._respond(request)
        from fastapi.responses import JSONResponse, StreamingResponse

        if self.enable_store and request.previous_response_id is not None:
            found = await self.conversation_store.load_response(request.previous_response_id)
            if found is None:
                message = f"Response with id '{request.previous_response_id}' not found."
                return self._error(message, 404)
        try:
            answer = await self._respond(request, raw_request)
        except Exception as exc:  # upstream's handler: create_error_response(str(e))
            return self._error(str(exc), 400)
        if request.stream:
            return StreamingResponse(content=answer, media_type="text/event-stream")
        return JSONResponse(content=answer.model_dump())

    # Upstream's shape, ``(self, request, raw_request)``: the default above only lets the
    # tests call the handler directly without a raw request.
    openai_responses.__signature__ = _without_default(openai_responses, "raw_request")

    async def _respond(self, request: ResponsesRequest, raw_request: Any = None) -> Any:
        prev_response = None
        if self.enable_store and request.previous_response_id is not None:
            prev_response = await self.conversation_store.load_response(
                request.previous_response_id
            )
        input_tokens, sampling_params = await responses_api_request_preprocess(
            request=request,
            prev_response=prev_response,
            conversation_store=self.conversation_store,
            enable_store=self.enable_store and request.store,
            use_harmony=self.use_harmony,
            reasoning_parser="gpt_oss" if self.use_harmony else self.reasoning_parser,
        )
        streaming_processor = None
        if request.stream:
            streaming_processor = ResponsesStreamingProcessor(
                request=request,
                sampling_params=sampling_params,
                model_name=self.model,
                conversation_store=self.conversation_store,
                enable_store=self.enable_store and request.store,
                use_harmony=self.use_harmony,
                reasoning_parser=self.reasoning_parser,
                tool_parser=self.tool_parser,
            )
        postproc_args = ResponsesAPIPostprocArgs(
            model=self.model,
            request=request,
            sampling_params=sampling_params,
            use_harmony=self.use_harmony,
            reasoning_parser=self.reasoning_parser,
            tool_parser=self.tool_parser,
            streaming_processor=streaming_processor,
        )
        postproc_params = PostprocParams(
            post_processor=responses_api_streaming_post_processor
            if request.stream
            else responses_api_post_processor,
            postproc_args=postproc_args,
        )
        # The executor pickles the params when the request is submitted.
        shipped = pickle.dumps(postproc_params) if self.postproc_worker_enabled else None
        promise = _Promise(self.engine(input_tokens, sampling_params), request.request_id)
        if raw_request is not None:
            watcher = asyncio.create_task(self.await_disconnected(raw_request, promise))
            self.watchers.add(watcher)
            watcher.add_done_callback(self.watchers.discard)
        if not self.postproc_worker_enabled:
            postproc_args.num_prompt_tokens = len(input_tokens)
        if request.stream:
            return guard_responses_stream(
                self._create_streaming_generator(promise, postproc_params, shipped),
                streaming_processor.get_stream_failed_events,
            )
        final_res = None
        async for res in promise:
            final_res = res
        if self.postproc_worker_enabled:
            return self.worker(shipped, final_res)
        return await responses_api_create_response(
            generator=None,
            request=request,
            sampling_params=sampling_params,
            model_name=self.model,
            conversation_store=self.conversation_store,
            generation_result=final_res,
            enable_store=self.enable_store and request.store,
            use_harmony=self.use_harmony,
            num_prompt_tokens=len(input_tokens),
        )

    async def _create_streaming_generator(
        self, promise, postproc_params: PostprocParams, shipped: bytes | None
    ):
        post_processor, args = postproc_params.post_processor, postproc_params.postproc_args
        sequence_number = 0
        stamp = stamp_sse_sequence_number if STANDIN_LINE != "993c0eec" else _unstamped
        for frame in args.streaming_processor.get_initial_responses():
            yield stamp(frame, sequence_number)
            sequence_number += 1
        async for res in promise:
            if self.postproc_worker_enabled:
                res.outputs[0]._postprocess_result = self.worker(shipped, res)
                pp_results = res.outputs[0]._postprocess_result
            else:
                pp_results = post_processor(res, args)
            for frame in pp_results:
                yield stamp(frame, sequence_number)
                sequence_number += 1


class _Promise:
    """The engine's updates with upstream's ``finished`` and ``abort()``: an aborted
    request yields no further update."""

    def __init__(self, updates: AsyncIterator[Any], request_id: str) -> None:
        self.updates = updates
        self.request_id = request_id
        self.finished = False
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True

    async def __aiter__(self) -> AsyncIterator[Any]:
        async for res in self.updates:
            if self.aborted:
                return
            self.finished = bool(getattr(res, "_done", False))
            yield res


def _unstamped(frame: str, sequence_number: int) -> str:
    """The 993c0eec egress: frames leave as the processor numbered them."""
    return frame


class _InlineWorker:
    """A PostprocWorker in this process: unpickles the params once per request."""

    def __init__(self) -> None:
        self._params: dict[bytes, PostprocParams] = {}

    def __call__(self, shipped: bytes, res: Any) -> Any:
        params = self._params.get(shipped)
        if params is None:
            params = self._params[shipped] = pickle.loads(shipped)
        worker_res = pickle.loads(pickle.dumps(res))
        frames = params.post_processor(worker_res, params.postproc_args)
        if res._done:
            del self._params[shipped]
        return frames


def _inline_worker(shipped: bytes, res: Any) -> Any:
    return _INLINE(shipped, res)


_INLINE = _InlineWorker()
