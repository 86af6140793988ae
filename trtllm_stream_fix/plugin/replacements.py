# SPDX-License-Identifier: Apache-2.0
"""Function replacements for ``tensorrt_llm.serve.responses_utils`` (``registry.PATCHES``).

Each factory takes upstream's function and returns a wrapper that keeps it as
``__wrapped__`` and carries the ``__trtllm_stream_fix__`` marker, so uninstall and the
shape checks can find the original.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..core.config import StreamConfig
from ..core.events import TERMINAL_TYPES
from ..core.nonstreaming import build_usage
from ..defaults import edge_defaults, new_context
from ..serving.processor import (
    harmony_output_content,
    server_usage,
    with_engine_input,
    with_phase_channel,
)
from .marker import mark
from .upstream_names import RESPONSES_UTILS


def harmony_messages(token_ids: list[int]) -> list[Any]:
    """Upstream's parse of the output tokens (conversation history), looked up at call time.

    Module level, so a processor holding it pickles to a PostprocWorker by reference.
    """
    return list(sys.modules[RESPONSES_UTILS]._parse_output_tokens(token_ids))


def create_output_content_harmony(
    original: Callable[..., Any], config: StreamConfig | None = None
) -> Callable[..., Any]:
    """``_create_output_content_harmony(final_res) -> (items, messages)`` built by our mapper.

    ``config`` defaults to ``StreamConfig.from_env(os.environ)``, as the streaming processor's does.
    """
    config = StreamConfig.from_env(os.environ) if config is None else config

    def _create_output_content_harmony(
        final_res: Any, *args: Any, **kwargs: Any
    ) -> tuple[list[Any], list[Any]]:
        output = final_res.outputs[0]
        return harmony_output_content(
            output.token_ids, output.finish_reason, harmony_messages, config
        )

    return mark(_create_output_content_harmony, original)


def create_response(
    original: Callable[..., Any], config: StreamConfig | None = None
) -> Callable[..., Any]:
    """``_create_response(final_res, use_harmony, ...) -> (response, messages)`` whose Harmony
    usage is the stream's terminal event's.

    Upstream's usage counts no reasoning tokens on the Harmony path; the stream's machine
    counts the analysis-channel tokens (and, for a generation it fails, the tokens parsed).
    The machine is fed ``final_res.outputs[0].token_ids`` and its output and reasoning
    counts replace upstream's; input tokens (prompt, cached, a disaggregated context's) stay
    upstream's. Where upstream built no usage (early-2026), the stream's is set: the engine's
    prompt and cached tokens with the machine's counts. ``config`` defaults to
    ``StreamConfig.from_env(os.environ)``, as the stream's.
    """
    config = StreamConfig.from_env(os.environ) if config is None else config
    signature = inspect.signature(original)

    def _create_response(*args: Any, **kwargs: Any) -> Any:
        call = signature.bind(*args, **kwargs).arguments
        response, messages = original(*args, **kwargs)
        if not call.get("use_harmony") or not hasattr(response, "usage"):
            return response, messages
        final_res = call["final_res"]
        output = final_res.outputs[0]
        prompt = len(getattr(final_res, "prompt_token_ids", None) or ())
        counted = build_usage(
            new_context(num_prompt_tokens=prompt),
            list(output.token_ids),
            output.finish_reason or "stop",
            config=config,
            **edge_defaults(),
        )
        if response.usage is not None:
            response.usage = with_output_counts(response.usage, counted)
        else:  # early-2026 builds no usage: the stream's (engine prompt counts, as its)
            with_engine_input(counted, final_res, None)
            response.usage = server_usage(type(response), counted)
        return response, messages

    return mark(_create_response, original)


def with_output_counts(usage: Any, counted: Any) -> Any:
    """``usage`` (upstream's type) with ``counted``'s output and reasoning tokens."""
    output_tokens = counted.output_tokens
    details = usage.output_tokens_details.model_copy(
        update={"reasoning_tokens": counted.output_tokens_details.reasoning_tokens}
    )
    return usage.model_copy(
        update={
            "output_tokens": output_tokens,
            "output_tokens_details": details,
            "total_tokens": usage.input_tokens + output_tokens,
        }
    )


def parse_response_input(original: Callable[..., Any]) -> Callable[..., Any]:
    """``_parse_response_input`` that renders assistant messages on their phase's channel."""
    return mark(with_phase_channel(original), original)


TERMINAL_MARKERS = tuple(f"event: {etype}" for etype in sorted(TERMINAL_TYPES))


def _has_terminal(chunk: Any) -> bool:
    text = chunk.decode("utf-8", "replace") if isinstance(chunk, bytes) else str(chunk)
    return any(marker in text for marker in TERMINAL_MARKERS)


def guard_responses_stream(original: Callable[..., Any]) -> Callable[..., Any]:
    """``guard_responses_stream`` after which nothing follows any terminal event.

    Upstream 271a1eda treats only ``response.completed`` as final, so an exception after a
    ``response.incomplete`` or ``response.failed`` made it append ``error`` +
    ``response.failed``. The wrapper watches the frames for all three terminal events and
    hands upstream's guard a ``terminal_events`` that returns nothing once one went out;
    the exception still propagates (the server logs it) and frames pass through untouched.
    """

    async def guarded(
        stream: Any, terminal_events: Callable[..., Any], *args: Any, **kw: Any
    ) -> AsyncIterator[Any]:
        ended = False

        async def watched() -> Any:
            nonlocal ended
            async for chunk in stream:
                ended = ended or _has_terminal(chunk)
                yield chunk

        def after_terminal(cause: str, detail: str, events_sent: int = 0) -> list[Any]:
            return [] if ended else terminal_events(cause, detail, events_sent)

        async for chunk in original(watched(), after_terminal, *args, **kw):
            yield chunk

    mark(guarded, original)
    guarded.__name__ = "guard_responses_stream"
    return guarded
