# SPDX-License-Identifier: Apache-2.0
"""The real-module harness on one tree, in a fresh interpreter, with no plugin loaded.

``run_harness(root)`` starts ``python -m trtllm_stream_fix.upstream_pr.harness ROOT COUNT``:
``tests/realstub`` loads the tree's own ``responses_utils``, ``harmony_adapter``,
``openai_protocol`` and ``postprocess_handlers`` (plus ``tensorrt_llm/serve/harmony_stream/``
when the tree has it), stubs what they import off the Responses path, and drives the real
``ResponsesStreamingProcessor`` as ``openai_server`` does (``realstub.drive.run_all``), and the
Harmony chat post-processors as ``chat_harmony`` does (``realstub.drive_chat.run_chat``), and
checks non-streaming bodies against OpenAI's recorded schema (``drive.body_schema``). The
import hook is switched off and the run fails if any plugin module was imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

from .errors import HarnessUnavailableError
from .layout import REPO

TESTS = REPO / "tests"
COUNT = 100
BODY_OUTPUTS = 25  # outputs whose non-streaming body (inline, from a worker) is checked
PLUGIN_MODULES = ("trtllm_stream_fix.plugin.installer", "trtllm_stream_fix.plugin.processor")


def activate(root: Path) -> list[str]:
    """Import the tree's real Responses modules (and the new package, if patched) on CPU."""
    import realstub

    return realstub.activate(root)


def run_harness(root: Path, count: int = COUNT, timeout: float = 900) -> dict[str, Any]:
    """The harness counts for ``root`` (see ``realstub.drive.run_all``)."""
    if not (TESTS / "realstub" / "drive.py").is_file():
        return {
            "error": str(
                HarnessUnavailableError(
                    f"{TESTS}/realstub is missing (run from a trtllm-stream-fix checkout)"
                )
            )
        }
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(TESTS), str(REPO))))
    env["TRTLLM_STREAM_FIX"] = "0"  # no import hook: the patched files must stand alone
    proc = subprocess.run(
        [sys.executable, "-m", "trtllm_stream_fix.upstream_pr.harness", str(root), str(count)],
        capture_output=True,
        text=True,
        env=env,
        cwd=TESTS,
        timeout=timeout,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        return {"error": f"harness produced no result: {proc.stderr[-2000:]}"}
    return json.loads(lines[-1][len("RESULT ") :])


def _main(root: Path, count: int) -> dict[str, Any]:
    stubbed = activate(root)
    from realstub import REAL_MODULES
    from realstub.drive import run_all
    from tensorrt_llm.serve import postprocess_handlers, responses_utils  # noqa: F401

    from trtllm_stream_fix.plugin.realstub.drive import body_schema
    from trtllm_stream_fix.plugin.realstub.drive_chat import run_chat
    from trtllm_stream_fix.sim.model import generate_outputs

    outputs = list(generate_outputs(count, seed=7))
    stats = run_all(outputs)
    try:
        bodies = body_schema(outputs[:BODY_OUTPUTS])
    except Exception as exc:  # a tree whose non-streaming path cannot run here
        bodies = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        chat = run_chat(list(generate_outputs(count, seed=300)))
    except Exception as exc:  # a tree whose chat path cannot run here
        chat = {"error": f"{type(exc).__name__}: {exc}"}
    loaded = [name for name in PLUGIN_MODULES if name in sys.modules]
    marked = getattr(responses_utils.ResponsesStreamingProcessor, "__trtllm_stream_fix__", False)
    return {
        "stats": stats,
        "chat": chat,
        "bodies": bodies,
        "stubbed_third_party": stubbed,
        "real_files": {m: sys.modules[m].__file__ for m in REAL_MODULES},
        "plugin_loaded": loaded + (["marked processor class"] if marked else []),
    }


if __name__ == "__main__":
    try:
        payload = _main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else COUNT)
    except Exception as exc:
        payload = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    print("RESULT " + json.dumps(payload))
