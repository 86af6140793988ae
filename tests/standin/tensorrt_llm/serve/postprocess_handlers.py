# SPDX-License-Identifier: Apache-2.0
"""Stand-in of ``tensorrt_llm.serve.postprocess_handlers`` (Responses API handlers)."""

from __future__ import annotations

from dataclasses import dataclass

from ..executor import GenerationResult
from ..executor.postproc_worker import PostprocArgs
from ..llmapi import SamplingParams
from .openai_protocol import ResponsesRequest, ResponsesResponse
from .responses_utils import ResponsesStreamingProcessor
from .responses_utils import create_response_non_store as responses_api_create_response_non_store


@dataclass(kw_only=True)
class ResponsesAPIPostprocArgs(PostprocArgs):
    model: str
    request: ResponsesRequest
    sampling_params: SamplingParams
    use_harmony: bool
    reasoning_parser: str | None = None
    tool_parser: str | None = None
    streaming_processor: ResponsesStreamingProcessor | None = None


def responses_api_post_processor(
    rsp: GenerationResult, args: ResponsesAPIPostprocArgs
) -> ResponsesResponse:
    return responses_api_create_response_non_store(
        generation_result=rsp,
        request=args.request,
        sampling_params=args.sampling_params,
        model_name=args.model,
        use_harmony=args.use_harmony,
        reasoning_parser=args.reasoning_parser,
        tool_parser=args.tool_parser,
        num_prompt_tokens=args.num_prompt_tokens,
    )


def responses_api_streaming_post_processor(
    rsp: GenerationResult, args: ResponsesAPIPostprocArgs
) -> list[str]:
    if args.streaming_processor is None:
        raise ValueError("streaming_processor is required for streaming post-processing")
    outputs = args.streaming_processor.process_single_output(rsp)
    if rsp._done:
        outputs.append(
            args.streaming_processor.get_final_response_non_store(rsp, args.num_prompt_tokens)
        )
    return outputs


@dataclass(kw_only=True)
class ChatCompletionPostprocArgs(PostprocArgs):
    """The Harmony chat arguments (the older line's fields, plus the newer stream options)."""

    model: str
    tools: list | None = None
    tool_choice: str | dict | None = None
    request_id: int | None = None
    stream_options: object | None = None


def chat_harmony_post_processor(rsp: GenerationResult, args: ChatCompletionPostprocArgs):
    """Upstream calls ``harmony_adapter.handle_non_streaming_response`` (not stood in)."""
    raise NotImplementedError("the stand-in has no Harmony chat conversion")


def chat_harmony_streaming_post_processor(
    rsp: GenerationResult, args: ChatCompletionPostprocArgs
) -> list[str]:
    """Upstream calls ``harmony_adapter.handle_streaming_response`` (not stood in)."""
    raise NotImplementedError("the stand-in has no Harmony chat conversion")
