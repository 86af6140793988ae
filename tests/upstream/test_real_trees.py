# SPDX-License-Identifier: Apache-2.0
"""Each upstream version tree is self-consistent, and its non-streaming path works with the plugin.

Runs per tree of ``TRTLLM_SOURCE_DIRS`` / ``TRTLLM_SOURCE_DIR`` (as ``test_plugin_real``) and
skips without them. Two checks:

- the tree's ``openai_protocol.py`` defines every ``ResponsesRequest`` attribute its
  ``responses_utils.py`` reads and every ``ResponsesResponse`` field it sets, except the two
  that no version in the code index defines (docs/real-upstream.md, "Which openai_protocol");
  a tree assembled with a protocol from another line fails here before it fails at run time;
- the version matrix (``realstub.matrix``) on a few outputs: with the plugin every
  non-streaming and streaming cell passes the strict checker and the SDK, unpatched upstream
  does not. The default tier pickles the post-processor arguments as for a worker; the slow
  tier runs two of upstream's real ``PostprocWorker`` processes (``realstub.workers``; needs
  the tree's ``executor/{postproc_worker,ipc}.py`` and pyzmq), where unpatched upstream also
  loses worker processes to exceptions its post-processors raise.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from _result import run_result
from test_plugin_real import _source, _sources

pytestmark = pytest.mark.cpu_only

#: Read or set by a line's responses_utils, defined by no openai_protocol.py in the index.
UNAVAILABLE = {
    ("ResponsesResponse", "incomplete_details"),  # terminal-event line and 993c0eec
    ("ResponsesRequest", "relayed_prompt_token_ids"),  # 993c0eec's request preprocessing
}
#: ``request.x`` / ``response.x`` hits that are methods every pydantic model has.
PYDANTIC = {"model_dump", "model_dump_json", "model_copy", "model_fields_set"}
MODELS = ("ResponsesRequest", "ResponsesResponse")
MATRIX = "trtllm_stream_fix.plugin.realstub.matrix"
MATRIX_OUTPUTS = 4


def _members(protocol: Path) -> dict[str, set[str]]:
    """The annotated fields and methods of ResponsesRequest and ResponsesResponse."""
    members: dict[str, set[str]] = {}
    for node in ast.parse(protocol.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name in MODELS:
            members[node.name] = {
                s.target.id
                for s in node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            } | {s.name for s in node.body if isinstance(s, ast.FunctionDef)}
    return members


def _used(responses_utils: Path) -> set[tuple[str, str]]:
    """``request.<name>`` read and ``response.<name> = ...`` set in responses_utils."""
    source = responses_utils.read_text()
    read = {("ResponsesRequest", n) for n in re.findall(r"\brequest\.(\w+)", source)}
    set_ = {("ResponsesResponse", n) for n in re.findall(r"\bresponse\.(\w+)\s*=[^=]", source)}
    return {(cls, name) for cls, name in read | set_ if name not in PYDANTIC}


@pytest.fixture(params=_sources(), ids=lambda p: Path(p).name or "installed")
def tree(request) -> Path:
    root, reason = _source(request.param)
    if root is None:
        pytest.skip(reason)
    return root


def test_the_protocol_defines_what_responses_utils_uses(tree):
    serve = tree / "tensorrt_llm" / "serve"
    members = _members(serve / "openai_protocol.py")
    missing = {
        (cls, name)
        for cls, name in _used(serve / "responses_utils.py")
        if name not in members.get(cls, set())
    }
    assert missing <= UNAVAILABLE, sorted(missing - UNAVAILABLE)


@cache
def _matrix(root: str, workers: str = "pickled", outputs: int = MATRIX_OUTPUTS) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("TRTLLM_STREAM_FIX", None)
    return run_result([sys.executable, "-m", MATRIX, root, str(outputs), "--workers", workers], env)


def test_with_the_plugin_every_matrix_cell_passes(tree):
    rows = _matrix(str(tree))["plugin"]
    bad = [r for r in rows if (r["strict"], r["sdk"], r["identical"]) != (r["n"],) * 3]
    assert not bad, bad
    stored = [r for r in rows if r["store"] and not r["workers"]]
    assert all(r["stored"] == r["n"] for r in stored), stored


def test_without_the_plugin_streaming_cells_fail(tree):
    rows = _matrix(str(tree))["upstream"]
    streaming = [r for r in rows if r["mode"] == "streaming"]
    assert all(r["strict"] < r["n"] for r in streaming), streaming


@pytest.mark.slow
def test_real_postprocessing_workers_with_and_without_the_plugin(tree):
    from trtllm_stream_fix.plugin.realstub.workers import available

    why_not = available(tree)
    if why_not:
        pytest.skip(why_not)
    payload = _matrix(str(tree), "processes", 2)
    assert payload["workers"] == "2 PostprocWorker processes"
    fixed = [r for r in payload["plugin"] if r["workers"]]
    assert all((r["strict"], r["sdk"], r["identical"]) == (r["n"],) * 3 for r in fixed), fixed
    assert payload["worker_exits"]["plugin"] == 0
    broken = [r for r in payload["upstream"] if r["workers"] and r["mode"] == "streaming"]
    assert all(r["strict"] < r["n"] for r in broken), broken


def test_a_version_without_a_stream_guard_is_streamed_unguarded():
    """early-2026 has no ``guard_responses_stream``: the harness passes the frames through
    (an exception then ends the stream) instead of failing on the missing name."""
    import asyncio
    from types import SimpleNamespace

    from trtllm_stream_fix.plugin.realstub.drive import stream_guard

    async def frames():
        yield "event: a\n\n"
        yield "event: b\n\n"

    async def passed(guard):
        return [frame async for frame in guard(frames(), None)]

    assert asyncio.run(passed(stream_guard(SimpleNamespace()))) == ["event: a\n\n", "event: b\n\n"]
    guard = object()
    assert stream_guard(SimpleNamespace(guard_responses_stream=guard)) is guard
