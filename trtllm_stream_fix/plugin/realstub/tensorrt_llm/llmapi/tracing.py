# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.llmapi.tracing``: no OpenTelemetry exporter is configured."""

from __future__ import annotations

from typing import Any


def extract_trace_headers(headers: Any) -> None:
    return None
