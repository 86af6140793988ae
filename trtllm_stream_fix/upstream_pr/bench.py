# SPDX-License-Identifier: Apache-2.0
"""The cost benchmark's rows measured on the tree as it is and on the patched copy.

``measure(root, patched)`` runs ``benchmarks/cpu_event_cost.py --quick --json --impls
floor,upstream-real`` twice, with ``TRTLLM_SOURCE_DIR`` naming the tree and then the patched
copy: ``upstream-real`` is the tree's own ``ResponsesStreamingProcessor`` (loaded by
``tests/realstub``, no plugin), so on the copy it is the patched files themselves. Each run
reports µs per output token with the bare-parser floor timed in the same worker. The copy's
row is required; the tree's may be missing (its own modules raise), and then says why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .layout import REPO

BENCHMARK = REPO / "benchmarks" / "cpu_event_cost.py"
ARGS = ("--quick", "--json", "--impls", "floor,upstream-real")
COMMAND = "python benchmarks/cpu_event_cost.py " + " ".join(ARGS)


def _rows(tree: Path, timeout: float) -> tuple[list[dict[str, Any]], str | None]:
    """The rows measured with ``TRTLLM_SOURCE_DIR`` naming ``tree``, and why the tree's own
    processor has no row (the benchmark's reason; None: it has one)."""
    with tempfile.TemporaryDirectory(prefix="upstream-pr-bench-") as out:
        env = dict(os.environ, TRTLLM_SOURCE_DIR=str(tree))
        proc = subprocess.run(
            [sys.executable, str(BENCHMARK), *ARGS, "--out", out],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    line = next((x for x in proc.stdout.splitlines() if x.startswith('{"rows"')), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"benchmark failed on {tree}: {(proc.stderr or proc.stdout)[-500:]}")
    report = json.loads(line)
    rows = report["rows"]
    if any(r["impl"] == "upstream-real" for r in rows):
        return rows, None
    return rows, report.get("skipped", {}).get("upstream-real", "no reason given")


def measure(root: Path, patched: Path, timeout: float = 900) -> dict[str, Any]:
    """``{"before": rows, "after": rows, "command": ...}`` (with ``"before_error"`` when the
    tree's own processor cannot be timed: an assembled tree whose unpatched modules raise on
    every stream still has its patched copy measured), or ``{"error": ...}``."""
    if not BENCHMARK.is_file():
        return {"error": f"{BENCHMARK} is missing (run from a trtllm-stream-fix checkout)"}
    try:
        before, before_error = _rows(root, timeout)
        after, after_error = _rows(patched, timeout)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        return {"error": str(exc)}
    if after_error:
        return {"error": f"benchmark measured no upstream-real row on {patched}: {after_error}"}
    measured: dict[str, Any] = {"before": before, "after": after, "command": COMMAND}
    if before_error:
        measured["before_error"] = before_error
    return measured
