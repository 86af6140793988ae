# SPDX-License-Identifier: Apache-2.0
"""Replacements for upstream's Harmony chat post-processors (``/v1/chat/completions``).

``tensorrt_llm.serve.openai_server.OpenAIServer.chat_harmony`` hands every engine response
to ``postprocess_handlers.chat_harmony_streaming_post_processor(rsp, args)`` (a list of SSE
frames; the server appends ``data: [DONE]``) and the finished result to
``chat_harmony_post_processor(rsp, args)`` (a response object the server ``model_dump``s),
inline or in a PostprocWorker (the function travels by reference, ``args`` is copied to the
worker once per request). Both upstream lines read (harmony_adapter 38134b13 behind
postprocess_handlers of the same era, and 01bf1923 / 271a1eda) call them with
``(rsp, args)``; the helpers behind them (``harmony_adapter.handle_streaming_response`` /
``handle_non_streaming_response``) changed their parameters between the lines, so the
patch replaces the post-processors, not the helpers.

The streaming replacement keeps one :class:`ChatChunkMachine` per request on ``args`` (the
object the server, or the worker, keeps for the request's lifetime), created on the first
response and dropped on the last: nothing lives in a process-wide table.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import uuid
from collections.abc import Mapping
from typing import Any

from ..core.chat_chunks import DONE, format_chat_sse, to_dict
from ..core.chat_machine import (
    ChatChunkMachine,
    ChatContext,
    ChatGenerationError,
    ChatOptions,
    build_chat_completion,
)
from ..core.config import PARSER_ENV, PREAMBLES_ENV
from ..defaults import default_encoding

logger = logging.getLogger("trtllm_stream_fix.plugin")

POSTPROCESS_HANDLERS = "tensorrt_llm.serve.postprocess_handlers"
OPENAI_PROTOCOL = "tensorrt_llm.serve.openai_protocol"
STREAMING = "chat_harmony_streaming_post_processor"
NON_STREAMING = "chat_harmony_post_processor"
REASONING_FIELD_ENV = "TRTLLM_STREAM_FIX_REASONING_FIELD"
_STATE = "_trtllm_stream_fix_chat"
_ENDED = "ended"


def chat_options(environ: Mapping[str, str] | None = None) -> ChatOptions:
    """Options from the environment: ``TRTLLM_STREAM_FIX_PREAMBLES=drop`` drops preambles
    (upstream's Responses parity switch), ``TRTLLM_STREAM_FIX_REASONING_FIELD`` names the
    reasoning field (``reasoning``, default, or ``reasoning_content``), and
    ``TRTLLM_STREAM_FIX_PARSER`` picks the Harmony driver (``fast``, default, or ``reference``)."""
    env = os.environ if environ is None else environ
    preambles = env.get(PREAMBLES_ENV, "").strip().lower()
    field = env.get(REASONING_FIELD_ENV, "").strip().lower() or "reasoning"
    if field not in ("reasoning", "reasoning_content"):
        raise ValueError(f"{REASONING_FIELD_ENV}={field!r} is not reasoning or reasoning_content")
    parser = env.get(PARSER_ENV, "").strip().lower() or "fast"
    if parser not in ("reference", "fast"):
        raise ValueError(f"{PARSER_ENV}={parser!r} is not fast or reference")
    return ChatOptions(
        reasoning_field=field,  # type: ignore[arg-type]
        preambles="drop" if preambles == "drop" else "content",
        parser=parser,  # type: ignore[arg-type]
    )


def _include_usage(args: Any) -> bool:
    if not hasattr(args, "stream_options"):
        return True  # lines without stream_options always sent the usage chunk
    options = args.stream_options
    return bool(options is not None and getattr(options, "include_usage", False))


def chat_context(rsp: Any, args: Any, *, stream: bool) -> ChatContext:
    """The request's facts from upstream's post-processor arguments."""
    completion_id = getattr(args, "stream_response_id", None) or f"chatcmpl-{uuid.uuid4().hex}"
    created = getattr(args, "stream_created", None) or int(time.time())
    return ChatContext(
        completion_id=completion_id,
        model=getattr(args, "model", None) or "",
        created=int(created),
        num_prompt_tokens=int(getattr(args, "num_prompt_tokens", None) or 0),
        include_usage=stream and _include_usage(args),
    )


def chat_harmony_streaming_post_processor(rsp: Any, args: Any) -> list[str]:
    """SSE frames for one engine response of a Harmony chat stream (without ``[DONE]``)."""
    machine = getattr(args, _STATE, None)
    if machine == _ENDED:
        return []
    if machine is None:
        machine = ChatChunkMachine(
            chat_context(rsp, args, stream=True),
            options=chat_options(),
            encoding=default_encoding(),
        )
        setattr(args, _STATE, machine)
    output = rsp.outputs[0]
    done = bool(getattr(rsp, "_done", False))
    frames = machine.feed(output.token_ids_diff, finished=done, finish_reason=output.finish_reason)
    if machine.finished:
        setattr(args, _STATE, _ENDED)  # release the parser; later responses send nothing
        if not done and machine.error is not None:
            _abort(rsp)
    return [format_chat_sse(frame) for frame in frames if frame is not DONE]


def chat_harmony_post_processor(rsp: Any, args: Any) -> Any:
    """The non-streaming ``chat.completion`` (an ``openai`` model the server dumps).

    A generation that cannot be completed raises ``ValueError`` with the message the stream
    would have sent; upstream's handler turns it into an error response.
    """
    output = rsp.outputs[0]
    try:
        completion = build_chat_completion(
            chat_context(rsp, args, stream=False),
            output.token_ids,
            output.finish_reason,
            options=chat_options(),
            encoding=default_encoding(),
        )
    except ChatGenerationError as exc:
        raise ValueError(str(exc)) from None
    return _as_upstream(completion, output)


def _as_upstream(completion: Any, output: Any) -> Any:
    """Upstream's ``ChatCompletionResponse`` holding ``completion`` (the server reads its
    ``choices[0].disaggregated_params``), or ``completion`` itself when that type is absent
    or refuses it."""
    protocol = sys.modules.get(OPENAI_PROTOCOL)
    response_type = getattr(protocol, "ChatCompletionResponse", None)
    if response_type is None:
        return completion
    body = to_dict(completion)
    try:
        response = response_type.model_validate(body)
    except Exception:
        # Upstream's UsageInfo forbids fields it does not know (completion_tokens_details).
        (body.get("usage") or {}).pop("completion_tokens_details", None)
        try:
            response = response_type.model_validate(body)
        except Exception as exc:
            logger.debug("chat completion kept as the openai model: %s", exc)
            return completion
    convert = getattr(protocol, "to_disaggregated_params", None)
    params = getattr(output, "disaggregated_params", None)
    if convert is not None and params is not None:
        try:
            response.choices[0].disaggregated_params = convert(params)
        except Exception:
            logger.debug("disaggregated params not copied", exc_info=True)
    return response


def _abort(rsp: Any) -> None:
    """Stop generating for a stream that already ended with an error."""
    abort = getattr(rsp, "abort", None)
    if callable(abort):
        try:
            abort()
        except Exception:  # the stream is over either way
            logger.debug("abort after a chat stream error failed", exc_info=True)


chat_harmony_streaming_post_processor.__trtllm_stream_fix__ = True  # type: ignore[attr-defined]
chat_harmony_post_processor.__trtllm_stream_fix__ = True  # type: ignore[attr-defined]

__all__ = [
    "NON_STREAMING",
    "POSTPROCESS_HANDLERS",
    "STREAMING",
    "chat_context",
    "chat_harmony_post_processor",
    "chat_harmony_streaming_post_processor",
    "chat_options",
]
