# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.tool_parser.base_tool_parser``."""

from __future__ import annotations

from typing import Any


class BaseToolParser:
    pass


def warn_if_tool_call_unparsed(parser_id: Any, parser: Any, text: str, calls: Any) -> None:
    """Upstream logs when text looks like an unparsed call; nothing to report here."""
