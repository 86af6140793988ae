# SPDX-License-Identifier: Apache-2.0
"""The chat post-processor replacements inside the real ``postprocess_handlers`` (and its
real ``openai_protocol`` types), when TensorRT-LLM sources are at hand (as
``test_plugin_real``: ``TRTLLM_SOURCE_DIR`` / ``TRTLLM_SOURCE_DIRS``, else skip).

A subprocess (``tests/realstub/drive_chat.py``) installs the plugin, builds upstream's own
``ChatCompletionPostprocArgs`` from a real ``ChatCompletionRequest``, and calls
``postprocess_handlers.chat_harmony_streaming_post_processor`` per engine response (inline and
with the args pickled to an emulated worker) and ``chat_harmony_post_processor`` once.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import pytest
from test_plugin_real import _sources, run_driver

pytestmark = pytest.mark.cpu_only
OUTPUTS = 20


@cache
def _run(configured: str) -> dict[str, Any]:
    return run_driver("drive_chat", configured, OUTPUTS)


@pytest.fixture(params=_sources(), ids=lambda p: os.path.basename(p.rstrip("/")) or "installed")
def real(request: pytest.FixtureRequest) -> dict[str, Any]:
    return _run(request.param)


def test_chat_post_processors_are_patched_with_the_responses_group(real):
    statuses = dict(real["install"])
    handlers = "tensorrt_llm.serve.postprocess_handlers"
    assert statuses[f"{handlers}.chat_harmony_streaming_post_processor"] == "patched"
    assert statuses[f"{handlers}.chat_harmony_post_processor"] == "patched"
    assert statuses["tensorrt_llm.serve.responses_utils.ResponsesStreamingProcessor"] == "patched"
    assert {status for _, status in real["uninstall"]} == {"restored"}


def test_every_chat_stream_is_correct_through_the_real_handlers(real):
    tally = real["tally"]
    assert tally["streams"] == 4 * OUTPUTS
    for count in ("strict", "sdk", "identical", "nonstreaming"):
        assert tally[count] == tally["streams"], (count, real["examples"])


def test_non_streaming_body_is_upstreams_response_type(real):
    assert real["response_type"] == "tensorrt_llm.serve.openai_protocol.ChatCompletionResponse"
