# SPDX-License-Identifier: Apache-2.0
"""A typed client other than the Python SDK: the official OpenAI Node SDK streams from both
simulated servers (``tests/node/client.mjs``).

``client.responses.stream(...)`` + ``finalResponse()`` with and without tools, and
``client.chat.completions.stream(...)`` + ``finalChatCompletion()``: every stream of ours must
pass; the upstream-equivalent generator is shown failing the SDK's Responses accumulator.
Skipped (with the reason) when node or the npm package is missing: ``.ci/run`` installs it
into ``.node/`` (``TRTLLM_STREAM_FIX_NODE_DIR`` points elsewhere).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "tests" / "node" / "client.mjs"
SDK_VERSION = json.loads((ROOT / "tests" / "node" / "package.json").read_text())["dependencies"][
    "openai"
]
RESPONSES_STREAMS = 8


def _node_dir() -> Path:
    return Path(os.environ.get("TRTLLM_STREAM_FIX_NODE_DIR") or ROOT / ".node")


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed")
    sdk = _node_dir() / "node_modules" / "openai" / "package.json"
    if not sdk.is_file():
        pytest.skip(
            f"the OpenAI Node SDK is not installed in {_node_dir()} (.ci/run installs it: "
            f"npm install --prefix .node openai@{SDK_VERSION})"
        )
    return found


def _run(node: str, generator: str, **engine: Any) -> list[dict[str, Any]]:
    app = create_app(EngineConfig(**engine), generator)  # type: ignore[arg-type]
    with serve_in_thread(app) as url:
        done = subprocess.run(
            [node, str(CLIENT), f"{url}/v1", str(RESPONSES_STREAMS)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "OPENAI_NODE_DIR": str(_node_dir())},
        )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines and lines[-1].get("summary"), (done.returncode, done.stdout, done.stderr)
    summary, results = lines[-1], lines[:-1]
    assert summary["sdk"] == SDK_VERSION
    assert summary["streams"] == len(results) == RESPONSES_STREAMS + 2
    assert done.returncode == (1 if summary["failed"] else 0), done.stderr
    return results


@pytest.mark.parametrize("stream_interval", [1, 20])
def test_the_node_sdk_accepts_every_stream_of_ours(node, stream_interval):
    results = _run(node, "ours", stream_interval=stream_interval)
    assert [r["name"] for r in results if not r["ok"]] == [], results
    by_name = {r["name"]: r for r in results}
    assert any("function_call" in r["output"] for r in results if r["name"].endswith("tools"))
    assert all("function_call" not in r["output"] for r in results if "tools" not in r["name"])
    assert by_name["chat tools"]["status"] == "tool_calls"
    assert by_name["chat"]["status"] == "stop" and "content" in by_name["chat"]["output"]


def test_the_node_sdk_rejects_the_upstream_equivalent_responses_streams(node):
    results = _run(node, "upstream", stream_interval=20)
    failed = [r for r in results if not r["ok"]]
    assert failed and all(r["name"].startswith("responses") for r in failed), results
    assert any("output item id" in r["error"] for r in failed), failed
