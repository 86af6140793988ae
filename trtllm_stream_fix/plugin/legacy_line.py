# SPDX-License-Identifier: Apache-2.0
"""Harmony Responses on the line before ``ResponsesStreamingProcessor`` (ledger entries 13-16).

On that line (``responses_utils.py`` at 83ab45a5) ``openai_server`` imports two module
functions by name and calls them directly, with no post-processing workers:
``responses_api_process_streaming_events(...)``, an async generator of SSE strings that a
``StreamingResponse`` sends as they come, and ``await responses_api_create_response(...)``,
the non-streaming body. Upstream's generator feeds each whole ``token_ids_diff`` to the
parser and reads one ``last_content_delta`` per engine response, so the events depend on
``stream_interval``; its non-streaming body has no usage and fresh item ids.

The replacements below keep the signatures (unknown keywords are accepted and not read) and
the output types. The stream is ``HarmonyResponsesStream``, the class line's fix: one event
per frame, numbered from 0, the terminal event last; the final response the client saw is
stored with its Harmony messages when ``enable_store`` and ``request.store`` are set, as
upstream stores its own. The non-streaming body is the machine fed every token at once: the
stream's final response for the same generation (items, status, usage), as the server's
``ResponsesResponse``, stored the same way.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from ..core.nonstreaming import build_response
from ..defaults import edge_defaults, system_clock
from ..serving.processor import (
    HarmonyResponsesStream,
    environment_config,
    harmony_output_messages,
    request_context,
    server_response,
    with_engine_input,
)
from .marker import mark
from .upstream_names import RESPONSES_UTILS

NO_OUTPUT = "No output generated or provided"  # upstream's error for an empty generation

logger = logging.getLogger(__name__)


@dataclass
class LegacyRequest:
    """One request as ``HarmonyResponsesStream`` reads its processor on the class line."""

    request: Any
    sampling_params: Any
    model_name: str
    response_creation_time: int
    conversation_store: Any
    enable_store: bool
    sequence_number: int = 0


def legacy_harmony_messages(token_ids: list[int]) -> list[Any]:
    """Upstream's parse of the output tokens (conversation history), looked up at call time."""
    return list(sys.modules[RESPONSES_UTILS].parse_output_tokens(token_ids))


def _response_model() -> Any:
    """The server's response model as ``responses_utils`` binds it now (maybe the plugin's)."""
    return getattr(sys.modules.get(RESPONSES_UTILS), "ResponsesResponse", None)


def _legacy_request(
    request: Any,
    sampling_params: Any,
    model_name: str,
    conversation_store: Any,
    create_time: int | None,
    enable_store: bool,
) -> LegacyRequest:
    created = int(system_clock()) if create_time is None else int(create_time)
    return LegacyRequest(
        request, sampling_params, model_name, created, conversation_store, bool(enable_store)
    )


def _unread(name: str, kwargs: dict[str, Any]) -> None:
    if kwargs:
        logger.debug("%s: keywords not read on this line: %s", name, sorted(kwargs))


def process_streaming_events(original: Callable[..., Any]) -> Callable[..., Any]:
    """``process_streaming_events(...)`` yielding the machine's SSE frames (see the module)."""

    async def _process_streaming_events(
        request: Any,
        sampling_params: Any,
        generator: Any,
        harmony_adapter: Any,
        model_name: str,
        conversation_store: Any,
        create_time: int | None = None,
        enable_store: bool = False,
        **kwargs: Any,
    ) -> AsyncIterator[str]:
        _unread("process_streaming_events", kwargs)
        state = _legacy_request(
            request, sampling_params, model_name, conversation_store, create_time, enable_store
        )
        stream = HarmonyResponsesStream(legacy_harmony_messages, _response_model())
        for frame in stream.initial_responses(state):
            yield frame
        final_res = None
        async for res in generator:
            final_res = res
            for frame in stream.process_output(state, res):
                yield frame
        if final_res is None:
            raise RuntimeError(NO_OUTPUT)
        frame, response = stream.final_response(state, final_res)
        await stream.store(state, response, final_res)  # before the client sees the end
        yield frame

    return mark(_process_streaming_events, original)


def create_response(original: Callable[..., Any]) -> Callable[..., Any]:
    """``await create_response(...)``: the stream's final response for the whole generation."""

    async def _create_response(
        generator: Any,
        request: Any,
        sampling_params: Any,
        model_name: str,
        conversation_store: Any,
        generation_result: Any = None,
        enable_store: bool = False,
        create_time: int | None = None,
        **kwargs: Any,
    ) -> Any:
        _unread("create_response", kwargs)
        final_res = generation_result if generation_result is not None else await generator
        if final_res is None:
            raise RuntimeError(NO_OUTPUT)
        state = _legacy_request(
            request, sampling_params, model_name, conversation_store, create_time, enable_store
        )
        output = final_res.outputs[0]
        context = request_context(
            request, sampling_params, model_name, state.response_creation_time
        )
        context.num_prompt_tokens = len(getattr(final_res, "prompt_token_ids", None) or ())
        response = build_response(
            context,
            list(output.token_ids),
            output.finish_reason or "stop",
            config=environment_config(),
            **edge_defaults(),
        )
        if response.usage is not None:
            with_engine_input(response.usage, final_res, None)
        body = server_response(_response_model(), state, response)
        stored = getattr(request, "store", True) and conversation_store is not None
        if state.enable_store and stored:
            await conversation_store.store_response(
                resp=body,
                resp_msgs=harmony_output_messages(output.token_ids, legacy_harmony_messages),
                prev_resp_id=getattr(request, "previous_response_id", None),
            )
        return body

    return mark(_create_response, original)
