# SPDX-License-Identifier: Apache-2.0
"""Harmony Chat Completions post-processing on the chat chunk machine, token by token.

``chat_harmony_streaming_post_processor(rsp, args)`` (one engine response: a list of SSE
frames; the server appends ``data: [DONE]``) calls ``stream_chunks`` and
``chat_harmony_post_processor(rsp, args)`` (the finished result: a response the server dumps)
calls ``chat_completion``, inline or in a post-processing worker (``args`` is copied to the
worker once per request). Every engine response's ``token_ids_diff`` goes to the
``ChatChunkMachine`` with the finished flag and the finish reason, so the chunks do not
depend on how many tokens each engine response carries.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from openai.types.completion_usage import PromptTokensDetails

from ..core.chat_chunks import DONE, format_chat_sse, to_dict
from ..core.chat_machine import (
    ChatChunkMachine,
    ChatContext,
    ChatGenerationError,
    ChatOptions,
    ReasoningField,
    build_chat_completion,
)
from ..core.config import REASONING_FIELD_ENV, StreamConfig, env_choice
from ..defaults import default_encoding
from .disaggregated import ContextCounts, context_counts, is_context_only, token_count

logger = logging.getLogger(__name__)

_STATE = "_harmony_chat_machine"
_ENDED = "ended"
NOT_FINISHED = "not_finished"  # a context-only result handing the generation on


def chat_options(environ: Mapping[str, str] | None = None) -> ChatOptions:
    """The chat options of the environment.

    Preambles and the Harmony driver come from ``StreamConfig.from_env`` (the Responses
    switches: ``TRTLLM_STREAM_FIX_PREAMBLES=drop`` drops preambles, ``TRTLLM_STREAM_FIX_PARSER``
    picks ``fast``, the default, or ``reference``; a bad value is the same ``ValueError``);
    ``TRTLLM_STREAM_FIX_REASONING_FIELD`` names the reasoning field (``reasoning``, default,
    or ``reasoning_content``).
    """
    env = os.environ if environ is None else environ
    field = env_choice(env, REASONING_FIELD_ENV, ReasoningField, "reasoning")
    return ChatOptions.from_config(StreamConfig.from_env(env), reasoning_field=field)


def _include_usage(args: Any) -> bool:
    if not hasattr(args, "stream_options"):
        return True  # lines without stream_options always sent the usage chunk
    options = args.stream_options
    return bool(options is not None and getattr(options, "include_usage", False))


def chat_context(
    rsp: Any, args: Any, *, stream: bool, num_prompt_tokens: int | None = None
) -> ChatContext:
    """The request's facts from the server's post-processor arguments.

    ``num_prompt_tokens`` overrides ``args.num_prompt_tokens`` (disaggregated serving counts
    the context phase's).
    """
    completion_id = getattr(args, "stream_response_id", None) or f"chatcmpl-{uuid.uuid4().hex}"
    created = getattr(args, "stream_created", None) or int(time.time())
    return ChatContext(
        completion_id=completion_id,
        model=getattr(args, "model", None) or "",
        created=int(created),
        num_prompt_tokens=int(num_prompt_tokens or getattr(args, "num_prompt_tokens", None) or 0),
        include_usage=stream and _include_usage(args),
    )


def stream_chunks(rsp: Any, args: Any, num_prompt_tokens: int | None = None) -> list[str]:
    """SSE frames for one engine response of a Harmony chat stream (without ``[DONE]``).

    The request's ``ChatChunkMachine`` lives on ``args`` (the object the server, or the
    post-processing worker, keeps for the request), created on the first response and
    dropped on the last.
    """
    machine = getattr(args, _STATE, None)
    if machine == _ENDED:
        return []
    frames = []
    if machine is None:
        machine = ChatChunkMachine(
            chat_context(rsp, args, stream=True, num_prompt_tokens=num_prompt_tokens),
            options=chat_options(),
            encoding=default_encoding(),
        )
        setattr(args, _STATE, machine)
        frames = machine.start()  # the role chunk
    output = rsp.outputs[0]
    done = bool(getattr(rsp, "_done", False))
    frames += machine.feed(output.token_ids_diff, finished=done, finish_reason=output.finish_reason)
    if machine.finished:
        setattr(args, _STATE, _ENDED)  # release the parser; later responses send nothing
        if not done and machine.error is not None:
            _abort(rsp)
        counts = context_counts(rsp.outputs, getattr(args, "ctx_usage", None))
        for frame in frames:
            usage = getattr(frame, "usage", None)
            if counts is not None and usage is not None:
                with_context_usage(usage, counts)
    return [format_chat_sse(frame) for frame in frames if frame is not DONE]


def with_context_usage(usage: Any, counts: ContextCounts) -> None:
    """Put the context worker's prompt and cached tokens on a chat ``usage``.

    As upstream's ``rewrite_usage_info_from_ctx`` sets them.
    """
    usage.prompt_tokens = counts.prompt_tokens
    usage.total_tokens = counts.prompt_tokens + (usage.completion_tokens or 0)
    usage.prompt_tokens_details = PromptTokensDetails.model_construct(
        cached_tokens=counts.cached_tokens
    )


def chat_completion(
    rsp: Any,
    args: Any,
    response_type: Any = None,
    to_disaggregated_params: Callable[[Any], Any] | None = None,
) -> Any:
    """The non-streaming ``chat.completion`` as ``response_type``.

    ``response_type`` is the server's ``ChatCompletionResponse`` (the ``openai`` model is
    returned when it is absent or refuses it); ``to_disaggregated_params`` converts the
    output's disaggregated parameters for the response's first choice. A generation that
    cannot be completed raises ``ValueError`` with the message the stream would have sent;
    the server turns it into an error response.
    """
    output = rsp.outputs[0]
    context = chat_context(rsp, args, stream=False)
    if is_context_only(output) and output.finish_reason == NOT_FINISHED:
        body = handoff_body(context, output, getattr(rsp, "cached_tokens", None))
        return _server_response(body, body, output, response_type, to_disaggregated_params)
    try:
        completion = build_chat_completion(
            context,
            output.token_ids,
            output.finish_reason,
            options=chat_options(),
            encoding=default_encoding(),
        )
    except ChatGenerationError as exc:
        raise ValueError(str(exc)) from None
    counts = context_counts(rsp.outputs, getattr(args, "ctx_usage", None))
    if counts is not None:
        with_context_usage(completion.usage, counts)
    return _as_server_response(completion, output, response_type, to_disaggregated_params)


def handoff_body(context: ChatContext, output: Any, cached_tokens: Any = None) -> dict[str, Any]:
    """The JSON body of a context-only request that hands the generation on.

    Disaggregated serving: its one token is not a Harmony message to parse, and only the
    orchestrator reads it (``finish_reason``, the ``disaggregated_params`` the caller sets,
    and the usage it relays to the generation worker as ``ctx_usage``: the prompt tokens with
    the engine's ``cached_tokens``, as upstream's usage counts them).
    """
    generated = len(output.token_ids)
    message = {"role": "assistant", "content": None}
    return {
        "id": context.completion_id,
        "object": "chat.completion",
        "created": context.created,
        "model": context.model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": NOT_FINISHED, "logprobs": None}
        ],
        "usage": {
            "prompt_tokens": context.num_prompt_tokens,
            "completion_tokens": generated,
            "total_tokens": context.num_prompt_tokens + generated,
            "prompt_tokens_details": {"cached_tokens": token_count(cached_tokens) or 0},
        },
    }


def _as_server_response(
    completion: Any,
    output: Any,
    response_type: Any,
    convert: Callable[[Any], Any] | None,
) -> Any:
    """``response_type`` holding ``completion``, or ``completion`` when the type refuses it.

    The server reads the response's ``choices[0].disaggregated_params``.
    """
    if response_type is None:
        return completion
    return _server_response(to_dict(completion), completion, output, response_type, convert)


def _server_response(
    body: dict[str, Any],
    fallback: Any,
    output: Any,
    response_type: Any,
    convert: Callable[[Any], Any] | None,
) -> Any:
    """``response_type`` validated from ``body`` (``fallback`` when absent or refused).

    The output's converted ``disaggregated_params`` go on its first choice.
    """
    if response_type is None:
        return fallback
    try:
        response = response_type.model_validate(body)
    except Exception:
        # Upstream's UsageInfo forbids fields it does not know (completion_tokens_details).
        (body.get("usage") or {}).pop("completion_tokens_details", None)
        try:
            response = response_type.model_validate(body)
        except Exception as exc:
            logger.debug("chat completion kept as the openai model: %s", exc)
            return fallback
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
