# SPDX-License-Identifier: Apache-2.0
"""Stand-in of the ``/v1/responses`` handler of ``openai_server`` on the pre-class line.

As upstream's e7f7345e server: ``process_streaming_events``, ``create_response`` and
``request_preprocess`` are imported by name under ``responses_api_*`` names, so the handler
calls whatever those module globals are bound to; a streamed request returns the async
generator of SSE strings (upstream wraps it in a ``StreamingResponse``), a non-streaming one
the awaited response. No post-processing workers on this line. The engine is a callable
``(prompt, sampling_params) -> async iterator`` of ``GenerationResult`` updates.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any

from .harmony_adapter import HarmonyAdapter
from .openai_protocol import ResponsesRequest
from .postprocess_handlers import (  # noqa: F401  (bound by name, as upstream's server)
    chat_harmony_post_processor,
    chat_harmony_streaming_post_processor,
)
from .preclass_responses_utils import ConversationHistoryStore
from .preclass_responses_utils import create_response as responses_api_create_response
from .preclass_responses_utils import (
    process_streaming_events as responses_api_process_streaming_events,
)
from .preclass_responses_utils import request_preprocess as responses_api_request_preprocess

Engine = Callable[[list[int], Any], AsyncIterator[Any]]


class Promise:
    """``generate_async``'s result: async-iterable per engine response, awaitable for the last."""

    def __init__(self, updates: AsyncIterator[Any]) -> None:
        self._updates = updates

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._updates

    def __await__(self) -> Any:
        return self._last().__await__()

    async def _last(self) -> Any:
        final = None
        async for res in self._updates:
            final = res
        return final


class OpenAIServer:
    def __init__(self, engine: Engine, model: str = "gpt-oss-20b", enable_store: bool = True):
        self.engine = engine
        self.model = model
        self.enable_store = enable_store
        self.conversation_store = ConversationHistoryStore()
        self.harmony_adapter: HarmonyAdapter | None = None

    async def await_disconnected(self, raw_request: Any, promise: Any) -> None:
        """Upstream's disconnect watcher (e7f7345e): abort once the client has gone."""
        while not await raw_request.is_disconnected():
            await asyncio.sleep(1)
        if not getattr(promise, "finished", True):
            promise.abort()

    # Upstream's signature is (self, request, raw_request) (set below); the stand-in serves
    # no HTTP, so raw_request is optional here and unused.
    async def openai_responses(self, request: ResponsesRequest, raw_request: Any = None) -> Any:
        if not self.harmony_adapter:
            self.harmony_adapter = HarmonyAdapter()
        prev_response = None
        if self.enable_store and request.previous_response_id is not None:
            prev_response = await self.conversation_store.load_response(
                request.previous_response_id
            )
        input_tokens, sampling_params = await responses_api_request_preprocess(
            request,
            prev_response,
            self.harmony_adapter,
            self.conversation_store,
            self.enable_store,
        )
        promise = Promise(self.engine(input_tokens, sampling_params))
        if request.stream:
            return responses_api_process_streaming_events(
                request=request,
                sampling_params=sampling_params,
                generator=promise,
                harmony_adapter=self.harmony_adapter,
                model_name=self.model,
                conversation_store=self.conversation_store,
                enable_store=self.enable_store,
            )
        return await responses_api_create_response(
            generator=promise,
            request=request,
            sampling_params=sampling_params,
            model_name=self.model,
            conversation_store=self.conversation_store,
            generation_result=None,
            enable_store=self.enable_store,
        )


OpenAIServer.openai_responses.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        p.replace(default=inspect.Parameter.empty)
        for p in inspect.signature(OpenAIServer.openai_responses).parameters.values()
    ]
)
