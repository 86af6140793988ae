# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.llmapi.reasoning_parser``: text reasoning parsers serve the
non-Harmony path only; creating one is an error here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class ReasoningParserResult:
    content: str = ""
    reasoning_content: str = ""


class BaseReasoningParser:
    pass


class ReasoningParserFactory:
    @staticmethod
    def create_reasoning_parser(name: str, chat_template_kwargs: Any = None) -> Any:
        raise NotImplementedError("text reasoning parsers are not on the Harmony path")

    @staticmethod
    def resolves_thinking_from_prompt(name: str) -> bool:
        return False
