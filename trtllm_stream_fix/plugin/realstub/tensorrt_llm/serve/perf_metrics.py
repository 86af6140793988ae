# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.perf_metrics``: per-request performance records, off
unless the engine is asked for perf metrics (the harness's fake engine never is)."""

from __future__ import annotations

from typing import Any


class PerfMetricsJsonlWriter:
    """Writes nothing: upstream writes only when an output directory is configured."""

    def __init__(self, output_dir: Any, server_kind: str) -> None:
        if output_dir is not None:
            raise NotImplementedError("perf-metrics output is not emulated")

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None


class PerfMetricsMiddleware:
    def __init__(self, app: Any, **kwargs: Any) -> None:
        raise NotImplementedError("perf-metrics middleware is not emulated")


def build_request_metrics_record(*args: Any, **kwargs: Any) -> None:
    raise NotImplementedError("perf-metrics records are not emulated")
