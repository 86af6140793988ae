# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.tool_parser.core_types.ToolCallItem``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ToolCallItem:
    tool_index: int
    name: str | None = None
    parameters: str = ""
