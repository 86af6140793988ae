# SPDX-License-Identifier: Apache-2.0
"""The plugin against real TensorRT-LLM modules, when they are available.

Runs in a subprocess so the stand-in used by the other plugin tests cannot mask the real
package. Enabled when ``TRTLLM_SOURCE_DIR`` names a TensorRT-LLM checkout (its
``tensorrt_llm/serve`` modules are loaded under bare parent packages, so the native bindings
in ``tensorrt_llm/__init__.py`` are not imported) or when ``tensorrt_llm`` is installed;
otherwise skipped with the reason. Contract: every recorded shape matches, install patches
every ledger target, uninstall restores them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cpu_only

REPO = Path(__file__).resolve().parent.parent
SOURCE = os.environ.get("TRTLLM_SOURCE_DIR")

CHILD = """
import json, sys, types
source = sys.argv[1]
if source:
    packages = (("tensorrt_llm", "tensorrt_llm"), ("tensorrt_llm.serve", "tensorrt_llm/serve"))
    for name, rel in packages:
        if name not in sys.modules:  # bare packages: skip the native-binding __init__
            module = types.ModuleType(name)
            module.__path__ = [f"{source}/{rel}"]
            sys.modules[name] = module
out = {}
try:
    import tensorrt_llm.serve.responses_utils
except Exception as exc:
    print("RESULT " + json.dumps({"skip": f"{type(exc).__name__}: {exc}"}))
    raise SystemExit(0)
from trtllm_stream_fix.plugin import targets
from trtllm_stream_fix.plugin.installer import install, uninstall
out["checks"] = [c.describe() for c in map(targets.check, targets.ALL_TARGETS) if not c.ok
                 and c.status != "not-loaded"]
out["install"] = [o.status for o in install(mode="on").outcomes]
out["uninstall"] = [o.status for o in uninstall().outcomes]
print("RESULT " + json.dumps(out))
"""


def _real_available() -> str | None:
    """None when real modules can be tried, else the reason to skip."""
    if SOURCE:
        return (
            None
            if Path(SOURCE, "tensorrt_llm/serve/responses_utils.py").is_file()
            else (f"TRTLLM_SOURCE_DIR={SOURCE} has no tensorrt_llm/serve/responses_utils.py")
        )
    spec = importlib.util.find_spec("tensorrt_llm")
    if spec is None:
        return "TensorRT-LLM is not installed and TRTLLM_SOURCE_DIR is not set"
    if "standin" in (spec.origin or ""):
        return "only the test stand-in of tensorrt_llm is importable"
    return None


def test_real_modules_match_the_recorded_shapes_and_install_cleanly():
    reason = _real_available()
    if reason:
        pytest.skip(reason)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, SOURCE or ""],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-2000:]
    result = json.loads(lines[0][len("RESULT ") :])
    if "skip" in result:
        pytest.skip(f"real responses_utils not importable here: {result['skip']}")
    assert result["checks"] == []
    assert "refused" not in result["install"] and "error" not in result["install"]
    assert result["install"].count("patched") >= 3
    assert set(result["uninstall"]) == {"restored"}
