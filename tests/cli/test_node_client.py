# SPDX-License-Identifier: Apache-2.0
"""Typed clients other than the Python SDK: the official OpenAI Node SDK streams from both
simulated servers (``tests/node/client.mjs``), and the Vercel AI SDK runs a tool loop
(``tests/node/ai_sdk_agent.mjs``).

``client.responses.stream(...)`` + ``finalResponse()`` with and without tools, and
``client.chat.completions.stream(...)`` + ``finalChatCompletion()``: every stream of ours must
pass; the upstream-equivalent generator is shown failing the SDK's Responses accumulator.
The AI SDK's OpenAI Responses provider, with its default ``store: true``, sends step 2 of a
tool loop with ``item_reference`` input items (``generateText`` and ``streamText``).
Skipped (with the reason) when node or the npm packages are missing: ``.ci/run`` installs
``tests/node/package.json`` into ``.node/`` (``TRTLLM_STREAM_FIX_NODE_DIR`` points elsewhere).
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

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "tests" / "node" / "client.mjs"
AI_SDK_AGENT = ROOT / "tests" / "node" / "ai_sdk_agent.mjs"
RESPONSES_WS = ROOT / "tests" / "node" / "responses_ws.mjs"
PACKAGES = json.loads((ROOT / "tests" / "node" / "package.json").read_text())["dependencies"]
SDK_VERSION = PACKAGES["openai"]
RESPONSES_STREAMS = 8


def _node_dir() -> Path:
    return Path(os.environ.get("TRTLLM_STREAM_FIX_NODE_DIR") or ROOT / ".node")


def _node_with(*packages: str) -> str:
    """The node binary, once ``packages`` are installed in the node directory (else skip)."""
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed")
    for name in packages:
        if not (_node_dir() / "node_modules" / name / "package.json").is_file():
            pytest.skip(
                f"{name} is not installed in {_node_dir()} (.ci/run installs it: "
                f"npm install --prefix .node {name}@{PACKAGES[name]})"
            )
    return found


@pytest.fixture(scope="module")
def node() -> str:
    return _node_with("openai")


@pytest.fixture(scope="module")
def ws_node() -> str:
    return _node_with("openai", "ws")


@pytest.fixture(scope="module")
def ai_sdk_node() -> str:
    return _node_with("ai", "@ai-sdk/openai")


def _node_script(
    node: str, script: Path, app: Any, *args: str
) -> tuple[dict[str, Any], list[dict[str, Any]], subprocess.CompletedProcess[str]]:
    """Run ``script`` against ``app`` served on loopback: its summary line, its other JSON
    lines and the finished process."""
    with serve_in_thread(app) as url:
        done = subprocess.run(
            [node, str(script), f"{url}/v1", *args],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "OPENAI_NODE_DIR": str(_node_dir())},
        )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines and lines[-1].get("summary"), (done.returncode, done.stdout, done.stderr)
    return lines[-1], lines[:-1], done


def _run(node: str, generator: str, **engine: Any) -> list[dict[str, Any]]:
    app = create_app(EngineConfig(**engine), generator)  # type: ignore[arg-type]
    summary, results, done = _node_script(node, CLIENT, app, str(RESPONSES_STREAMS))
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


def test_the_vercel_ai_sdk_runs_a_tool_loop_with_item_references(ai_sdk_node):
    app = create_app(EngineConfig(stream_interval=20))
    summary, runs, done = _node_script(ai_sdk_node, AI_SDK_AGENT, app)
    assert (summary["ai"], summary["provider"]) == (PACKAGES["ai"], PACKAGES["@ai-sdk/openai"])
    assert [r["name"] for r in runs] == ["generateText", "streamText"]
    assert [r for r in runs if not r["ok"]] == [] and done.returncode == 0, done.stderr
    for run in runs:
        assert run["finishReasons"] == ["tool-calls", "stop"] and run["toolCalls"] == 1, run
        first, second = run["sent"]
        assert first == ["message"] and "item_reference" in second, run
        assert "get_weather returned" in run["text"], run


@pytest.mark.parametrize("stream_interval", [1, 20])
def test_the_node_sdk_runs_responses_websocket_mode(ws_node, stream_interval):
    """``ResponsesWS``: a store: false tool loop, two lanes, generate: false, a reconnect
    (previous_response_not_found, then a fresh turn); every turn strictly checked."""
    from trtllm_stream_fix.testing.ws_client import checked

    app = create_app(EngineConfig(stream_interval=stream_interval))
    summary, turns, done = _node_script(ws_node, RESPONSES_WS, app)
    assert summary["ok"] and done.returncode == 0, (turns, done.stderr)
    names = [t["name"] for t in turns]
    assert names == [
        "tool call",
        "tool answer",
        "lane left",
        "lane right",
        "generate false",
        "after warm-up",
        "reconnect",
        "fresh turn",
    ], turns
    for turn in turns:
        if "events" in turn:
            checked(turn["events"])
