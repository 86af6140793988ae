# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.serving_extensions``: no per-model extension registered."""

from __future__ import annotations

from typing import Any


def structured_output_format_for(reasoning_parser: str | None) -> Any:
    return None
