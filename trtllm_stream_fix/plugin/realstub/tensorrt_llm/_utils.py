# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm._utils``: clock helpers and the NVTX range decorator."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def get_steady_clock_now_in_seconds() -> float:
    return time.monotonic()


class AdjustedSteadyClock:
    """Steady clock (upstream aligns it across processes; irrelevant on one CPU)."""

    def now(self) -> float:
        return time.monotonic()

    def set_reference_offset(self, offset: float) -> None:
        self.offset = offset


def get_global_steady_clock_now_in_seconds() -> float:
    return time.monotonic()


def nvtx_mark(*args: Any, **kwargs: Any) -> None:
    """No-op: NVTX markers need CUDA."""


def set_prometheus_multiproc_dir() -> None:
    raise NotImplementedError("Prometheus metrics are not emulated")


def nvtx_range_debug(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """No-op: NVTX profiling ranges need CUDA."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        return func

    return decorate
