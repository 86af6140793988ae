# SPDX-License-Identifier: Apache-2.0
"""Stand-in of ``tensorrt_llm.serve.responses_utils`` on the pre-class line.

Shapes follow NVIDIA/TensorRT-LLM@83ab45a50d169b08e29e9bf2f46fc66b3838cc37, the line before
``ResponsesStreamingProcessor``; the code is this project's own. There is no processor class:
``openai_server`` iterates ``process_streaming_events(...)`` (SSE strings) and awaits
``create_response(...)``. The tests load this module as ``tensorrt_llm.serve.responses_utils``
(``preclass_openai_server`` imports from it by name, as upstream's server does).

Reproduced on purpose: the stream runs the class stand-in's Harmony generator (upstream
factored the class line's out of this function), so each whole ``token_ids_diff`` goes to
the parser and one delta is read per engine response; ``response.completed`` is
``create_response``'s result, which re-parses the tokens with fresh ids and no usage.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from openai.types.responses import ResponseCompletedEvent

from . import responses_utils as _class_line
from .openai_protocol import ResponsesRequest, ResponsesResponse

ConversationHistoryStore = _class_line.ConversationHistoryStore
finish_reason_mapping = _class_line.finish_reason_mapping


def parse_output_tokens(tokens: list[int]) -> list[Any]:
    return _class_line._parse_output_tokens(tokens)


async def request_preprocess(
    request: ResponsesRequest,
    prev_response: Any,
    harmony_adapter: Any,
    conversation_store: Any,
    enable_store: bool = False,
) -> tuple[list[int], Any]:
    sampling_params = request.to_sampling_params(
        default_sampling_params={"stop_token_ids": harmony_adapter.get_stop_tokens()}
    )
    prev_msgs = []
    if enable_store and request.previous_response_id is not None:
        prev_msgs = await conversation_store.get_conversation_history(request.previous_response_id)
    input_tokens = await _class_line._create_input_tokens_harmony(
        request, prev_response, prev_msgs, conversation_store, enable_store and request.store
    )
    return input_tokens, sampling_params


async def create_response(
    generator: Any,
    request: ResponsesRequest,
    sampling_params: Any,
    model_name: str,
    conversation_store: Any,
    generation_result: Any = None,
    enable_store: bool = False,
    create_time: int | None = None,
) -> ResponsesResponse:
    final_res = generation_result if generation_result is not None else await generator
    if final_res is None:
        raise RuntimeError("No output generated or provided")
    output, messages = _class_line._create_output_content_harmony(final_res)
    response = ResponsesResponse.from_request(
        request=request,
        sampling_params=sampling_params,
        model_name=model_name,
        created_time=create_time if create_time is not None else int(time.time()),
        output=output,
        status=finish_reason_mapping(final_res.outputs[0].finish_reason),
    )
    if enable_store and request.store:
        await conversation_store.store_response(
            resp=response, resp_msgs=messages, prev_resp_id=request.previous_response_id
        )
    return response


async def process_streaming_events(
    request: ResponsesRequest,
    sampling_params: Any,
    generator: Any,
    harmony_adapter: Any,
    model_name: str,
    conversation_store: Any,
    create_time: int | None = None,
    enable_store: bool = False,
) -> AsyncIterator[str]:
    created = create_time if create_time is not None else int(time.time())
    events = _class_line.ResponsesStreamingProcessor(request, sampling_params, model_name, created)
    for frame in events.get_initial_responses():
        yield frame
    final_res = None
    async for res in generator:
        final_res = res
        for frame in events.process_single_output(res):
            yield frame
    final = await create_response(
        generator,
        request,
        sampling_params,
        model_name,
        conversation_store,
        final_res,
        enable_store,
        created,
    )
    yield events._send_event(
        ResponseCompletedEvent(
            type="response.completed", sequence_number=-1, response=final.model_dump()
        )
    )
