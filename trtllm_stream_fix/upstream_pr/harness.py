# SPDX-License-Identifier: Apache-2.0
"""The real-module harness on one tree, in a fresh interpreter, with no plugin loaded.

``run_harness(root)`` starts ``python -m trtllm_stream_fix.upstream_pr.harness ROOT COUNT``:
``tests/realstub`` loads the tree's own ``responses_utils``, ``harmony_adapter``,
``openai_protocol`` and ``postprocess_handlers`` (plus ``tensorrt_llm/serve/harmony_stream/``
when the tree has it), stubs what they import off the Responses path, and drives the real
``ResponsesStreamingProcessor`` as ``openai_server`` does (``realstub.drive.run_all``). The
import hook is switched off and the run fails if any plugin module was imported.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

from .layout import PACKAGE, PACKAGE_DIR, REPO

TESTS = REPO / "tests"
COUNT = 100
PLUGIN_MODULES = ("trtllm_stream_fix.plugin.installer", "trtllm_stream_fix.plugin.processor")


class HarnessUnavailableError(RuntimeError):
    """The harness lives in the repository's ``tests/``, which this install lacks."""


class _PackageFinder(importlib.abc.MetaPathFinder):
    """Loads the new package from the tree (the stub ``tensorrt_llm.serve`` has no such folder)."""

    def __init__(self, root: Path) -> None:
        self.folder = root / PACKAGE_DIR

    def find_spec(self, fullname, path=None, target=None):
        if fullname == PACKAGE:
            return importlib.util.spec_from_file_location(
                fullname, self.folder / "__init__.py", submodule_search_locations=[str(self.folder)]
            )
        if fullname.startswith(PACKAGE + "."):
            name = fullname[len(PACKAGE) + 1 :]
            return importlib.util.spec_from_file_location(fullname, self.folder / f"{name}.py")
        return None


def activate(root: Path) -> list[str]:
    """Import the tree's real Responses modules (and the new package) on CPU."""
    import realstub

    stubbed = realstub.activate(root)
    if (root / PACKAGE_DIR / "__init__.py").is_file():
        # Ahead of realstub's finder, which answers every other tensorrt_llm module.
        sys.meta_path.insert(0, _PackageFinder(root))
    return stubbed


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

    from trtllm_stream_fix.testing.synthetic import generate_outputs

    stats = run_all(list(generate_outputs(count, seed=7)))
    loaded = [name for name in PLUGIN_MODULES if name in sys.modules]
    marked = getattr(responses_utils.ResponsesStreamingProcessor, "__trtllm_stream_fix__", False)
    return {
        "stats": stats,
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
