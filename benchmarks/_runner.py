# SPDX-License-Identifier: Apache-2.0
"""Shared helpers of the benchmarks: machine description and percentiles."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Sequence
from typing import Any


def cpu_model() -> str:
    """The CPU model name as ``lscpu`` reports it (``/proc/cpuinfo`` as a fallback)."""
    try:
        out = subprocess.run(
            ["lscpu"], capture_output=True, check=False, text=True, timeout=5
        ).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, Any]:
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }


def bench_env(info: dict[str, Any]) -> str:
    return f"{info['cpu']}, {info['cores']} cores, Python {info['python']}"


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated ``q``-th percentile (0-100) of ``values``; nan when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
