# SPDX-License-Identifier: Apache-2.0
"""The plugin against the real Responses modules of the pre-class line (83ab45a5).

Runs when ``TRTLLM_SOURCE_DIR`` / ``TRTLLM_SOURCE_DIRS`` names a tree whose
``responses_utils.py`` streams through the module function ``process_streaming_events``
(no ``ResponsesStreamingProcessor``); skips with the reason otherwise. A subprocess
(``python -m realstub.drive ROOT N``, handed to ``realstub.drive_preclass``) calls the real
functions through the real ``openai_server``'s bindings, as its handler does, unpatched and
with the plugin. docs/real-upstream.md has the figures of the 100-output run.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from test_plugin_real import _sources, run_driver

pytestmark = pytest.mark.cpu_only

OUTPUTS = 30
PRE_CLASS = [
    "tensorrt_llm.serve.responses_utils.process_streaming_events",
    "tensorrt_llm.serve.responses_utils.create_response",
    "tensorrt_llm.serve.openai_server.responses_api_process_streaming_events",
    "tensorrt_llm.serve.openai_server.responses_api_create_response",
]


@cache
def _run(configured: str) -> dict[str, Any]:
    return run_driver("drive", configured, OUTPUTS, pre_class=True)


@pytest.fixture(scope="module", params=_sources(), ids=lambda p: Path(p).name or "installed")
def real(request) -> dict[str, Any]:
    return _run(request.param)


def test_the_pre_class_group_installs_alone_and_uninstall_restores_it(real):
    assert real["line"] == "pre-class" and real["server"], real["server"]
    statuses = {target: (status, detail) for target, status, detail in real["install"]}
    assert [statuses[t][0] for t in PRE_CLASS] == ["patched"] * 4
    absent = {t for t, (status, detail) in statuses.items() if detail == "not on this line"}
    assert "tensorrt_llm.serve.responses_utils.ResponsesStreamingProcessor" in absent
    assert not {"refused", "error"} & {status for status, _ in statuses.values()}, statuses
    assert real["active"] is True
    assert {status for _, status in real["uninstall"]} == {"restored"}
    assert real["restored"] is True
    checks = {target: status for target, (status, _) in real["checks"].items()}
    assert [checks[t] for t in PRE_CLASS] == ["ok"] * 4


def test_with_the_plugin_every_stream_is_correct_at_any_interval_store_on_and_off(real):
    fixed = real["plugin"]
    assert fixed["streams"] == 4 * OUTPUTS and fixed["compared"] == 2 * OUTPUTS
    for key in ("strict", "sdk", "sse"):
        assert fixed[key] == fixed["streams"], (key, fixed["examples"])
    assert fixed["identical"] == fixed["compared"], fixed["examples"]
    assert fixed["raised"] == 0, fixed["examples"]


def test_with_the_plugin_a_streamed_turn_is_stored_as_the_client_saw_it(real):
    fixed = real["plugin"]
    assert fixed["stored"] == fixed["stored_same"] == fixed["store_streams"], fixed["examples"]
    assert fixed["history"] == fixed["store_streams"] and fixed["leaked"] == 0


def test_with_the_plugin_the_body_is_the_streams_final_response_usage_too(real):
    fixed = real["plugin"]
    assert fixed["bodies"] == 2 * OUTPUTS and fixed["body_raised"] == 0, fixed["examples"]
    for key in ("body_sdk", "body_same", "body_usage", "body_counted"):
        assert fixed[key] == fixed["bodies"], (key, fixed["examples"])
    assert fixed["body_stored"] == OUTPUTS


def test_without_the_plugin_real_upstream_fails_the_same_checks(real):
    upstream = real["upstream"]
    assert upstream["streams"] == 4 * OUTPUTS
    assert upstream["strict"] < upstream["streams"] // 2
    assert upstream["identical"] < upstream["compared"] // 2
    assert upstream["raised"] > 0 and upstream["body_counted"] == 0
