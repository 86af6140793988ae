# SPDX-License-Identifier: Apache-2.0
"""Helpers for the plugin tests: stand-in setup and the openai_server streaming flow.

``use_standin()`` puts this folder first on ``sys.path`` so ``import tensorrt_llm`` finds the
stand-in. ``stream(...)`` runs one request through the stand-in ``openai_server`` exactly as
upstream's handler does (``get_initial_responses``, then
``responses_api_streaming_post_processor(res, args)`` per engine response, the final
response appended on ``_done``), with or without emulated PostprocWorkers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

STANDIN_DIR = Path(__file__).resolve().parent


def use_standin() -> None:
    if str(STANDIN_DIR) not in sys.path:
        sys.path.insert(0, str(STANDIN_DIR))


def engine_for(output: Any, split: Any):
    """An engine callable that replays ``output`` (stop token sent, then trimmed upstream-style)."""
    from tensorrt_llm.executor import GenerationResult

    from trtllm_stream_fix.sim.model import engine_responses

    untrimmed = dataclasses.replace(output, stop_token_trimmed=False)

    async def engine(prompt: list[int], sampling_params: Any):
        res = GenerationResult(1, sampling_params, prompt)
        for response in engine_responses(untrimmed, split):
            res._handle_sequence(
                list(response.token_ids_diff),
                done=response.finished,
                finish_reason=response.finish_reason,
            )
            yield res

    return engine


def frames_to_events(frames: list[str]) -> list[dict[str, Any]]:
    events = []
    for frame in frames:
        for line in frame.splitlines():
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: ") :]))
    return events


def stream(
    output: Any, split: Any, *, request: Any = None, workers: int = 0, **request_fields: Any
) -> list[dict[str, Any]]:
    """The event dicts a client receives for ``output`` streamed with ``split``."""
    from tensorrt_llm.serve import openai_server
    from tensorrt_llm.serve.openai_protocol import ResponsesRequest

    if request is None:
        request = ResponsesRequest(input="hi", stream=True, store=False, **request_fields)
    server = openai_server.OpenAIServer(engine_for(output, split), num_postprocess_workers=workers)

    async def run() -> list[str]:
        generator = await server.openai_responses(request)
        return [frame async for frame in generator]

    return frames_to_events(asyncio.run(run()))


def comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``client_visible`` events without the wall-clock ``created_at``."""
    from trtllm_stream_fix.differential.visible import client_visible

    out = client_visible(events)
    for event in out:
        response = event.get("response")
        if isinstance(response, dict):
            response.pop("created_at", None)
    return out


def new_processor(cls: Any = None, **request_fields: Any) -> Any:
    """A processor built exactly as the server builds one (``cls`` default: the bound name)."""
    from tensorrt_llm.serve import openai_server
    from tensorrt_llm.serve.openai_protocol import ResponsesRequest

    request = ResponsesRequest(input="hi", stream=True, store=False, **request_fields)
    sampling = request.to_sampling_params(
        default_sampling_params={"stop_token_ids": [200002, 200012]}
    )
    cls = cls or openai_server.ResponsesStreamingProcessor
    return cls(
        request=request,
        sampling_params=sampling,
        model_name="gpt-oss-20b",
        create_time=1,
        use_harmony=True,
        reasoning_parser="gpt_oss",
    )


def drive(
    processor: Any,
    output: Any,
    split: Any,
    cached_tokens: int | None = None,
    disaggregated_params: Any = None,
) -> list[str]:
    """Run ``responses_api_streaming_post_processor`` per engine response, as a worker does
    (``cached_tokens``: the prompt tokens the engine result reports cached, if any;
    ``disaggregated_params``: set on the output, as on a generation-only result)."""
    from tensorrt_llm.executor import GenerationResult
    from tensorrt_llm.serve.postprocess_handlers import (
        ResponsesAPIPostprocArgs,
        responses_api_streaming_post_processor,
    )

    from trtllm_stream_fix.sim.model import engine_responses

    args = ResponsesAPIPostprocArgs(
        model="gpt-oss-20b",
        request=processor.request,
        sampling_params=processor.sampling_params,
        use_harmony=True,
        streaming_processor=processor,
        num_prompt_tokens=3,
    )
    res = GenerationResult(1, processor.sampling_params, [1, 2, 3])
    if cached_tokens is not None:
        res.cached_tokens = cached_tokens
    res.outputs[0].disaggregated_params = disaggregated_params
    frames: list[str] = []
    for response in engine_responses(dataclasses.replace(output, stop_token_trimmed=False), split):
        res._handle_sequence(
            list(response.token_ids_diff),
            done=response.finished,
            finish_reason=response.finish_reason,
        )
        frames += responses_api_streaming_post_processor(res, args)
    return frames


WORKER_CODE = """
import json, pickle, sys
import tensorrt_llm.serve.openai_server
import plugin_harness
from trtllm_stream_fix.plugin.installer import is_active
from trtllm_stream_fix.plugin.bootstrap import hook_enabled
from trtllm_stream_fix.sim.model import named_output
active, hook = is_active(), hook_enabled()
processor = pickle.loads(bytes.fromhex(sys.argv[1]))
frames = plugin_harness.drive(processor, named_output(sys.argv[2]), int(sys.argv[3]))
print("RESULT " + json.dumps({"active": active, "hook": hook, "frames": frames,
                              "class": type(processor).__module__}))
"""


@pytest.fixture
def uninstalled(monkeypatch):
    """The plugin off (default mode) before and after a test."""
    from trtllm_stream_fix.plugin.installer import uninstall

    monkeypatch.delenv("TRTLLM_STREAM_FIX", raising=False)
    uninstall()
    yield
    uninstall()
