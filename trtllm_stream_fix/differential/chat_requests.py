# SPDX-License-Identifier: Apache-2.0
"""Harmony chat requests driven through the server's post-processors, as ``chat_harmony`` does.

The post-processor arguments are built with ``ChatCompletionPostprocArgs.from_request`` from a
real ``ChatCompletionRequest`` (by hand where the protocol module has no request type);
each engine response goes to the streaming post-processor and ``data: [DONE]`` is appended at
the end, as the server's generator yields them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from ..sim.model import SyntheticOutput, engine_responses
from .engine_results import MODEL, Result

PROMPT_TOKENS = 7
DONE_FRAME = "data: [DONE]\n\n"


def chat_request(protocol: Any, stream: bool) -> Any:
    """A one-message ``ChatCompletionRequest`` (usage asked for when streaming)."""
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return protocol.ChatCompletionRequest(**body)


def chat_args(protocol: Any, args_type: Any, stream: bool) -> Any:
    """The post-processor arguments as the server builds them (``from_request``)."""
    if hasattr(protocol, "ChatCompletionRequest") and hasattr(args_type, "from_request"):
        args = args_type.from_request(chat_request(protocol, stream))
    else:
        args = args_type(model=MODEL)
        if stream and hasattr(args, "stream_options"):
            args.stream_options = SimpleNamespace(include_usage=True)
    args.num_prompt_tokens = PROMPT_TOKENS
    return args


def sse_payloads(frames: list[str]) -> list[Any]:
    """The JSON payloads of chat SSE frames (``"[DONE]"`` for the sentinel)."""
    out: list[Any] = []
    for frame in frames:
        if not (frame.startswith("data: ") and frame.endswith("\n\n")):
            raise ValueError(f"not one SSE data frame: {frame!r:.200}")
        data = frame[len("data: ") : -2]
        out.append("[DONE]" if data == "[DONE]" else json.loads(data))
    return out


def finished_result(output: SyntheticOutput) -> Result:
    """The done engine result of ``output`` (every token, as the non-streaming path gets it)."""
    result = Result(prompt_token_ids=[1] * PROMPT_TOKENS)
    for response in engine_responses(output, 10**9):
        result.apply(response.token_ids_diff, response.finished, response.finish_reason)
    return result


def stream_frames(
    post: Callable[[Any, Any], list[str]], output: SyntheticOutput, split: int, args: Any
) -> list[str]:
    """The frames of one chat stream of ``output`` at ``split`` tokens per engine response."""
    result = Result(prompt_token_ids=[1] * PROMPT_TOKENS)
    frames: list[str] = []
    for response in engine_responses(output, split):
        result.apply(response.token_ids_diff, response.finished, response.finish_reason)
        frames += post(result, args)
    return frames + [DONE_FRAME]
