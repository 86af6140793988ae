# SPDX-License-Identifier: Apache-2.0
"""The plugin against the real TensorRT-LLM Responses modules, when their sources are at hand.

``TRTLLM_SOURCE_DIR`` names a TensorRT-LLM checkout (or any folder with
``tensorrt_llm/serve/{responses_utils,harmony_adapter,openai_protocol,postprocess_handlers}.py``);
``TRTLLM_SOURCE_DIRS`` names several (``os.pathsep``-separated), one per upstream version
line, and every test runs once per tree. Without either an installed ``tensorrt_llm`` is
used for those four files; otherwise every test skips with the reason.
A subprocess (``tests/realstub/drive.py``) loads the four modules for real
and everything else they import from our stubs in ``tests/realstub/``, then drives the real
``ResponsesStreamingProcessor`` the way ``openai_server`` does, for 100 synthetic outputs at 1
and 20 tokens per engine response and with the processor pickled to an emulated worker, first
unpatched, then with the plugin installed.

Contract: the recorded shapes match; install patches every loaded target and uninstall
restores upstream; with the plugin every stream passes the strict checker and the OpenAI SDK
accumulator and shows the client the same events at any batch size; unpatched upstream fails
the same checks (so the checks can fail).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from _result import run_result

from trtllm_stream_fix.plugin.realstub.drive_preclass import is_pre_class

pytestmark = pytest.mark.cpu_only

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
OUTPUTS = 100
REAL = ("responses_utils", "harmony_adapter", "openai_protocol", "postprocess_handlers")


def _sources() -> list[str]:
    """The configured source trees (``TRTLLM_SOURCE_DIRS``, then ``TRTLLM_SOURCE_DIR``)."""
    many = [p for p in os.environ.get("TRTLLM_SOURCE_DIRS", "").split(os.pathsep) if p]
    one = os.environ.get("TRTLLM_SOURCE_DIR")
    return many + ([one] if one and one not in many else []) or [""]


def _source(configured: str, pre_class: bool = False) -> tuple[Path | None, str]:
    """The folder holding ``tensorrt_llm/serve/`` of the line asked for (the pre-class line,
    or one with ``ResponsesStreamingProcessor``), or None and why not."""
    if configured:
        root = Path(configured)
    else:
        spec = importlib.util.find_spec("tensorrt_llm")
        if spec is None or spec.origin is None:
            return None, "TRTLLM_SOURCE_DIR is not set and TensorRT-LLM is not installed"
        if "standin" in spec.origin or "realstub" in spec.origin:
            return None, "TRTLLM_SOURCE_DIR is not set; only a test stand-in is importable"
        root = Path(spec.origin).resolve().parent.parent
    serve = root / "tensorrt_llm" / "serve"
    missing = [m for m in REAL if not (serve / f"{m}.py").is_file()]
    if missing:
        return None, f"{root}/tensorrt_llm/serve lacks {', '.join(missing)}"
    if is_pre_class(str(root)) != pre_class:
        return None, (
            f"{root}: the pre-class line (no ResponsesStreamingProcessor); "
            "tests/upstream/test_plugin_real_preclass.py drives it"
            if not pre_class
            else f"{root}: not the pre-class line (tests/upstream/test_plugin_real.py drives it)"
        )
    return root, ""


def run_driver(
    module: str, configured: str, outputs: int, *extra: str, pre_class: bool = False
) -> dict[str, Any]:
    """Run ``python -m realstub.<module> ROOT OUTPUTS [EXTRA...]`` on a tree of the line asked
    for (else skip); return its ``RESULT`` line."""
    root, reason = _source(configured, pre_class)
    if root is None:
        pytest.skip(reason)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(TESTS), str(REPO))))
    env.pop("TRTLLM_STREAM_FIX", None)
    command = [sys.executable, "-m", f"realstub.{module}", str(root), str(outputs), *extra]
    result = run_result(command, env, cwd=TESTS)
    result["root"] = str(root)
    return result


@cache
def _run(configured: str) -> dict[str, Any]:
    return run_driver("drive", configured, OUTPUTS)


@pytest.fixture(scope="module", params=_sources(), ids=lambda p: Path(p).name or "installed")
def real(request) -> dict[str, Any]:
    return _run(request.param)


def test_the_four_responses_modules_are_loaded_from_the_source_tree(real):
    serve = Path(os.path.abspath(real["root"])) / "tensorrt_llm" / "serve"
    files = {Path(os.path.abspath(f)) for f in real["real_files"].values()}  # links kept
    assert files == {serve / f"{m}.py" for m in REAL}


def _optional(dotted: str) -> bool:
    """A target a version may lack (early-2026 has no guard)."""
    from trtllm_stream_fix.plugin import registry

    return any(t.optional and t.dotted == dotted for t in registry.all_targets())


def _pre_class(dotted: str) -> bool:
    """A target of the pre-class line's design (absent on this line)."""
    from trtllm_stream_fix.plugin import registry, targets

    line = targets.PRE_CLASS_LINE
    return any(t.line == line and t.dotted == dotted for t in registry.all_targets())


def test_real_modules_match_the_recorded_shapes(real):
    bad = {
        name: status
        for name, (status, _) in real["checks"].items()
        if status not in ("ok", "compatible", "other-line")
        and not (status == "missing" and _optional(name))
    }
    # openai_server is not imported: its streaming loop is emulated by the driver, so each of
    # its targets (the names it imports, the store group's app and request hooks) is unread.
    assert set(bad.values()) == {"not-loaded"}, bad
    assert all(".openai_server." in name for name in bad), bad
    assert {
        "tensorrt_llm.serve.openai_server.ResponsesStreamingProcessor",
        "tensorrt_llm.serve.openai_server.guard_responses_stream",
        "tensorrt_llm.serve.openai_server.chat_harmony_streaming_post_processor",
        "tensorrt_llm.serve.openai_server.chat_harmony_post_processor",
        "tensorrt_llm.serve.openai_server.ConversationHistoryStore",
    } <= set(bad)


def test_install_patches_the_real_modules_and_uninstall_restores_them(real):
    statuses = dict(real["install"])
    assert not {"refused", "error"} & set(statuses.values()), statuses
    # processor, non-streaming mapper, stream guard, input channels and the two chat
    # post-processors in postprocess_handlers (all or nothing); the complete Response model;
    # the non-streaming usage; the store group's store and item references. A version
    # without the guard (early-2026) has none to patch.
    absent = {name for name, status in statuses.items() if status == "absent"}
    lacking = {name for name in absent if not _pre_class(name)}  # the pre-class line's: absent
    assert all(_optional(name) for name in lacking), lacking
    loaded_lacking = {name for name in lacking if ".openai_server." not in name}
    assert list(statuses.values()).count("patched") == 10 - len(loaded_lacking)
    assert statuses["tensorrt_llm.serve.responses_utils.ConversationHistoryStore"] == "patched"
    assert statuses["tensorrt_llm.serve.responses_utils.ResponsesResponse"] == "patched"
    assert statuses["tensorrt_llm.serve.responses_utils._create_response"] == "patched"
    assert {status for _, status in real["uninstall"]} == {"restored"}
    assert real["restored"] is True


def test_with_the_plugin_every_stream_is_correct_and_batch_independent(real):
    fixed = real["plugin"]
    assert fixed["streams"] == 3 * OUTPUTS and fixed["compared"] == 2 * OUTPUTS
    assert fixed["identical"] == fixed["compared"], fixed["examples"]
    assert fixed["strict"] == fixed["streams"], fixed["examples"]
    assert fixed["sdk"] == fixed["streams"], fixed["examples"]
    assert fixed["raised"] == 0, fixed["examples"]
    # every event carries every key of OpenAI's recorded schema (upstream's do not)
    assert fixed["schema"] == fixed["streams"], fixed["examples"]
    assert real["upstream"]["schema"] < real["upstream"]["streams"]


def test_with_the_plugin_every_non_streaming_body_is_a_complete_response(real):
    """Inline and from a worker (pickled back), every body a client receives carries every
    field of OpenAI's recorded schema; upstream's own bodies do not (so the check can fail)."""
    fixed, upstream = real["plugin_bodies"], real["upstream_bodies"]
    assert fixed["bodies"] == upstream["bodies"] == 2 * OUTPUTS
    assert fixed["complete"] == fixed["bodies"], fixed["examples"]
    assert fixed["raised"] == 0, fixed["examples"]
    assert upstream["complete"] == 0, upstream["examples"]
    assert set(upstream["keys"]) - set(fixed["keys"]) == set()  # no key upstream sends dropped


def test_without_the_plugin_real_upstream_fails_the_same_checks(real):
    upstream = real["upstream"]
    assert upstream["streams"] == 3 * OUTPUTS
    assert upstream["strict"] < upstream["streams"] // 2
    if upstream["raised"] == upstream["streams"]:
        # the early-2026 tree: its responses_utils unpacks (messages, contents) from a
        # harmony_adapter of another version, so every unpatched stream raises alike
        return
    assert upstream["sdk"] < upstream["streams"]  # 993c0eec: most raise, then error + failed
    assert upstream["identical"] < upstream["compared"] // 2


def test_with_the_plugin_a_stored_streamed_response_is_what_the_client_saw(real):
    """Issue 11 item 4: the stored copy of a streamed turn is its terminal event's response
    (usage not null) with the non-streaming response's shape and token counts; unpatched,
    a streamed turn is not stored at all."""
    fixed = real["plugin_stored"]
    assert fixed["stored"] == fixed["streams"] > 0
    assert fixed["same"] == fixed["shape"] == fixed["streams"], fixed["examples"]
    # the streams the plugin failed (malformed Harmony) are not the non-streaming outcome
    assert fixed["usage"] == fixed["compared"] >= fixed["streams"] * 3 // 4, fixed["examples"]
    assert real["upstream_stored"]["stored"] == 0


def test_with_the_plugin_non_streaming_usage_is_the_terminal_events(real):
    """For the same generation the non-streaming body (inline and from a worker) reports the
    usage of the stream's terminal event: reasoning_tokens included (upstream's non-streaming
    Harmony path reports 0 where the stream counts the analysis tokens) and the prompt tokens
    the engine reports cached (the stream reported 0)."""
    fixed = real["plugin_usage"]
    assert fixed["outputs"] == 25
    assert fixed["inline"] == fixed["worker"] == fixed["outputs"], fixed["examples"]
    assert fixed["reasoning"] > fixed["outputs"] // 2  # the counts at stake are not zero
    assert fixed["cached"] == fixed["outputs"] // 2


@pytest.mark.parametrize("configured", _sources(), ids=lambda p: Path(p).name or "installed")
def test_plugin_streams_token_soups_through_the_real_modules(configured):
    """Input our synthetic generator never makes (token soups: special and reserved ids
    anywhere, ids outside the vocabulary, split and invalid UTF-8; hostile finish reasons;
    numpy ids): with the plugin every stream is valid, raises nothing and is the same at any
    batch size; unpatched upstream raises on them."""
    result = run_driver("drive", configured, 60, "soup")
    plugin, upstream = result["plugin"], result["upstream"]
    assert plugin["streams"] == upstream["streams"] == 180
    assert plugin["raised"] == 0, plugin["examples"]
    assert plugin["strict"] == plugin["sdk"] == plugin["streams"], plugin["examples"]
    assert plugin["identical"] == plugin["compared"], plugin["examples"]
    assert upstream["raised"] > 0 and upstream["strict"] < upstream["streams"]
