# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.responses_web_search`` (non-Harmony tool listing)."""

from __future__ import annotations

from typing import Any


def is_web_search_tool(tool: Any) -> bool:
    return str(getattr(tool, "type", "")).startswith("web_search")


def web_search_rejection_reason(tools: Any) -> str | None:
    """Why a ``web_search`` tool cannot be honoured (no search backend here), or None."""
    if any(is_web_search_tool(tool) for tool in tools or ()):
        return "no web search backend is configured"
    return None
