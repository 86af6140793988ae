# SPDX-License-Identifier: Apache-2.0
"""Run a driver that prints one ``RESULT <json>`` line (``realstub.drive``, ``matrix``, ...)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any


def run_result(
    command: list[str],
    env: dict[str, str],
    *,
    cwd: Path | None = None,
    timeout: float = 600,
) -> dict[str, Any]:
    """``command``'s last ``RESULT`` line, parsed; the test fails with the driver's stderr or
    traceback when it printed none or reported an error."""
    proc = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT ") :])
    assert "error" not in result, result.get("traceback", result.get("error"))
    return result
