# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.tool_parser.tool_parser_factory``."""

from __future__ import annotations

from typing import Any


class ToolParserFactory:
    @staticmethod
    def create_tool_parser(name: str) -> Any:
        raise NotImplementedError("text tool parsers are not on the Harmony path")
