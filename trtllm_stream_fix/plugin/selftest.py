# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix doctor --selftest``: prove the fix on this host's TensorRT-LLM.

In a fresh interpreter (``python -m trtllm_stream_fix.plugin.selftest``) the installed
``tensorrt_llm`` Responses modules are imported (or, with ``--source``/``TRTLLM_SOURCE_DIR``,
the four real files of a source tree, everything else stubbed: see
``trtllm_stream_fix.testing.realstub``), the plugin is installed, and upstream's own
``ResponsesStreamingProcessor`` and ``responses_api_streaming_post_processor`` are driven
the way ``openai_server`` drives them, with synthetic gpt-oss outputs at 1 and 20 tokens per
engine response (``stream_interval`` 1 and 20) and with the post-processor arguments pickled
as they travel to a PostprocWorker. Every stream goes through the strict checker and the
OpenAI SDK accumulator, and the stream_interval-20 streams must show the client the same
events as the stream_interval-1 stream. The parent prints a one-screen verdict and exits 0
only when everything passed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from typing import Any

DEFAULT_COUNT = 30
SOURCE_ENV = "TRTLLM_SOURCE_DIR"


def run(source: str | None, count: int) -> dict[str, Any]:
    """The selftest itself (call in a fresh interpreter)."""
    from ..testing import realstub

    if source:
        realstub.activate(source)
    from tensorrt_llm.serve import postprocess_handlers, responses_utils  # noqa: F401

    from ..testing.realstub.drive import run_all
    from ..testing.synthetic import generate_outputs
    from .installer import install

    report = install(mode="on")
    outcomes = [[o.target, o.status, o.detail] for o in report.outcomes]
    failed = [o for o in outcomes if o[1] in ("refused", "error")]
    stats = run_all(list(generate_outputs(count, seed=11))) if not failed else {}
    chat_patched = any(
        o[0].endswith(".chat_harmony_streaming_post_processor") and o[1] in ("patched", "already")
        for o in outcomes
    )
    chat: dict[str, Any] = {}
    if chat_patched and not failed:
        from ..testing.realstub.drive_chat import run_chat

        chat = run_chat(list(generate_outputs(max(count // 3, 1), seed=12)))
    return {
        "source": source or "installed",
        "files": {m: getattr(sys.modules.get(m), "__file__", None) for m in realstub.REAL_MODULES},
        "install": outcomes,
        "stats": stats,
        "chat": chat,
    }


def passed(result: dict[str, Any]) -> bool:
    stats = result.get("stats") or {}
    chat = result.get("chat") or {}
    chat_ok = not chat or all(
        chat[k] == chat["streams"] for k in ("strict", "sdk", "identical", "nonstreaming")
    )
    return (
        "error" not in result
        and bool(stats.get("streams"))
        and stats["strict"] == stats["sdk"] == stats["streams"]
        and stats["identical"] == stats["compared"]
        and stats["raised"] == 0
        and chat_ok
    )


def verdict_text(result: dict[str, Any]) -> str:
    """The one-screen verdict."""
    lines = [f"trtllm-stream-fix selftest (TensorRT-LLM: {result.get('source', '?')})"]
    if "error" in result:
        lines.append(f"could not run: {result['error']}")
        lines.append("verdict: FAIL")
        return "\n".join(lines)
    for target, status, detail in result.get("install", []):
        lines.append(f"  {target}: {status}{' - ' + detail if detail else ''}")
    stats = result.get("stats") or {}
    if stats:
        lines.append(
            f"streams: {stats['streams']} (stream_interval 1 and 20, inline and pickled to a "
            "worker)"
        )
        lines.append(f"  strict checker passes: {stats['strict']}/{stats['streams']}")
        lines.append(f"  OpenAI SDK accepts:    {stats['sdk']}/{stats['streams']}")
        lines.append(
            f"  same client events as stream_interval 1: {stats['identical']}/{stats['compared']}"
        )
        lines.append(f"  ended by an exception: {stats['raised']}")
        lines += [f"  e.g. {example}" for example in stats.get("examples", [])[:3]]
    else:
        lines.append("no stream was run: the fix did not install (see above)")
    chat = result.get("chat") or {}
    if chat:
        n = chat["streams"]
        lines.append(f"chat completions streams: {n} (1 and 20 tokens, inline and pickled)")
        lines.append(
            f"  strict checker {chat['strict']}/{n}, OpenAI SDK {chat['sdk']}/{n}, same as at 1 "
            f"token {chat['identical']}/{n}, equal to non-streaming {chat['nonstreaming']}/{n}"
        )
        lines += [f"  e.g. {example}" for example in chat.get("examples", [])[:3]]
    lines.append(f"verdict: {'PASS' if passed(result) else 'FAIL'}")
    return "\n".join(lines)


def selftest(source: str | None = None, count: int = DEFAULT_COUNT) -> dict[str, Any]:
    """Run the selftest in a fresh interpreter and return its result."""
    cmd = [sys.executable, "-m", "trtllm_stream_fix.plugin.selftest", str(count)]
    if source:
        cmd.append(source)
    env = {k: v for k, v in os.environ.items() if k != "TRTLLM_STREAM_FIX"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {proc.returncode}: {tail}"}


def selftest_main(source: str | None, count: int, as_json: bool = False) -> int:
    result = selftest(source or os.environ.get(SOURCE_ENV) or None, count)
    print(json.dumps(result, indent=2) if as_json else verdict_text(result))
    return 0 if passed(result) else 1


if __name__ == "__main__":
    try:
        payload = run(sys.argv[2] if len(sys.argv) > 2 else None, int(sys.argv[1]))
    except Exception as exc:
        payload = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    print("RESULT " + json.dumps(payload))
