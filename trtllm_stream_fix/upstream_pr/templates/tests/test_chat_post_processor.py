# SPDX-License-Identifier: Apache-2.0
"""Offline tests for the Harmony chat post-processors at any tokens per engine response.

The post-processors are driven as ``OpenAIServer.chat_harmony`` drives them: arguments from
``ChatCompletionPostprocArgs.from_request``, ``chat_harmony_streaming_post_processor`` once per
engine response (inline, and with the arguments pickled as for a post-processing worker),
``data: [DONE]`` at the end; ``chat_harmony_post_processor`` for the non-streaming body.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from tensorrt_llm.serve import openai_protocol, postprocess_handlers

from ....differential.chat import (
    chat_visible,
    check_chat_payloads,
    completion_view,
    stream_view,
    strict_chat_violations,
)
from ....differential.chat_oracle import sdk_accumulate_chat
from ....differential.chat_requests import chat_args, finished_result, sse_payloads, stream_frames
from ....sim.model import generate_outputs

# The CPU-* CI stages run pytest with -m 'cpu_only'. Without this marker every
# test in the file is deselected, which pytest reports as exit code 5 and the
# stage reports as a failure.
pytestmark = pytest.mark.cpu_only

OUTPUTS = list(generate_outputs(40, seed=300))


def _stream(output: Any, tokens_per_response: int, *, pickled: bool) -> list[Any]:
    args = chat_args(openai_protocol, postprocess_handlers.ChatCompletionPostprocArgs, True)
    if pickled:
        args = pickle.loads(pickle.dumps(args))
    post = postprocess_handlers.chat_harmony_streaming_post_processor
    return sse_payloads(stream_frames(post, output, tokens_per_response, args))


def _body(output: Any) -> tuple[Any, ...]:
    args = chat_args(openai_protocol, postprocess_handlers.ChatCompletionPostprocArgs, False)
    try:
        response = postprocess_handlers.chat_harmony_post_processor(finished_result(output), args)
    except ValueError as exc:  # the generation cannot complete: the stream's error message
        return ("error", str(exc))
    assert isinstance(response, openai_protocol.ChatCompletionResponse)
    return completion_view(json.loads(json.dumps(response.model_dump(), default=str)))


@pytest.mark.parametrize("output", OUTPUTS, ids=lambda o: f"{o.name}-{o.seed}")
def test_chat_chunks_do_not_depend_on_tokens_per_response(output):
    """Regression: with 20 tokens per engine response deltas were lost or mislabelled."""
    reference = chat_visible(_stream(output, 1, pickled=False))
    assert chat_visible(_stream(output, 20, pickled=False)) == reference
    assert chat_visible(_stream(output, 20, pickled=True)) == reference


@pytest.mark.parametrize("output", OUTPUTS, ids=lambda o: f"{o.name}-{o.seed}")
@pytest.mark.parametrize("tokens_per_response", [1, 20])
def test_every_chat_stream_passes_the_checker_the_sdk_and_equals_the_body(
    output, tokens_per_response
):
    """Regression: markup in content, analysis-channel calls as reasoning, role per chunk."""
    payloads = _stream(output, tokens_per_response, pickled=False)
    check = check_chat_payloads(payloads)
    assert strict_chat_violations(check) == [], check.violations[:3]
    sdk_accumulate_chat(payloads)
    assert stream_view(check) == _body(output)
