# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.responses_web_search`` (non-Harmony tool listing)."""

from __future__ import annotations

from typing import Any


def is_web_search_tool(tool: Any) -> bool:
    return str(getattr(tool, "type", "")).startswith("web_search")
