# SPDX-License-Identifier: Apache-2.0
"""Upstream's own ``openai_server`` as the context and generation workers of a disaggregated
deployment, called as the orchestrator calls them (``realstub.drive_disagg``: a context-only
request, then a generation-only one built from its body), with the plugin and without.

Runs for every tree of ``TRTLLM_SOURCE_DIRS`` / ``TRTLLM_SOURCE_DIR`` that has
``tensorrt_llm/serve/openai_server.py``; skips with the reason otherwise (CI has no
TensorRT-LLM sources).

Contract, with the plugin, for ``/v1/responses`` and ``/v1/chat/completions``: every
context-only request is answered with the hand-off; every generation-only stream passes the
strict checker and the SDK at ``stream_interval`` 1 and 20, shows the client the same at both
and the same as an aggregated request for the prompt (the relayed first token included); the
stream's usage and the non-streaming body's report the context worker's prompt and cached
tokens. The Responses context-only body keeps every field upstream sets, with upstream's
values; the plugin only adds OpenAI's fields upstream's model lacks.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import Any

import pytest
from _result import run_result
from test_real_server import _trees

pytestmark = pytest.mark.cpu_only

OUTPUTS = 8
#: Fields the plugin's response model (patch group ``response``) fills where upstream leaves
#: them null.
FILLED_BY_THE_PLUGIN = frozenset(("text", "reasoning", "metadata"))


@cache
def _drive(tree: str, plugin: bool) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "TRTLLM_STREAM_FIX"}
    module = "trtllm_stream_fix.plugin.realstub.drive_disagg"
    command = [sys.executable, "-m", module, tree, str(OUTPUTS), "on" if plugin else "off"]
    return run_result(command, env)


@pytest.fixture(scope="module", params=_trees())
def tree(request):
    return request.param


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_with_the_plugin_the_workers_serve_the_disaggregated_request(tree, api):
    result = _drive(tree, True)
    assert result["patched"]
    tally = result[api]["tally"]
    assert tally["ctx_ok"] == tally["outputs"] == OUTPUTS
    assert tally["handed_off"] >= OUTPUTS - 1  # a generation may end at its first token
    assert tally["streams"] == 2 * tally["handed_off"]
    for count in ("strict", "sdk", "stream_usage"):
        assert tally[count] == tally["streams"], (count, tally)
    for count in ("identical", "as_aggregated", "body_usage"):
        assert tally[count] == tally["handed_off"], (count, tally)


def test_the_context_only_body_keeps_upstreams_fields(tree):
    """Where upstream answers the context-only Responses request, every field it sets has
    its value with the plugin (hand-off, usage, status, output); the plugin adds OpenAI's
    fields and fills the three upstream leaves null."""
    patched = _drive(tree, True)["responses"]["ctx_bodies"]
    unpatched = _drive(tree, False)["responses"]["ctx_bodies"]
    compared = 0
    for seed, upstream in unpatched.items():
        if upstream.get("object") == "error":
            continue  # unpatched upstream cannot build this body on this tree
        ours = patched[seed]
        changed = {k for k, v in upstream.items() if ours.get(k) != v}
        assert changed <= FILLED_BY_THE_PLUGIN, (seed, changed)
        assert all(upstream[k] is None for k in changed)
        for key in ("disaggregated_params", "finish_reason", "usage", "status", "output"):
            assert ours[key] == upstream[key]
        compared += 1
    if not compared:
        pytest.skip("unpatched upstream builds no context-only body on this tree")
