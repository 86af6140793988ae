# SPDX-License-Identifier: Apache-2.0
"""The summary in a compaction generation: the text of its ``final``-channel message.

The generated tokens are parsed by the same Responses machine as any turn
(``core.nonstreaming.build_response``), so the usage is the turn's usage too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openai.types.responses import ResponseUsage

from ..core.context import ResponseContext
from ..core.nonstreaming import build_response
from .errors import CompactionError


def final_text(
    context: ResponseContext, tokens: Sequence[int], finish_reason: str | None, encoding: Any
) -> tuple[str, ResponseUsage]:
    """The final-channel text of a generation and its usage; a 500 ``compaction_failed``
    when the model wrote no final answer (a parse error, a tool call, nothing but
    reasoning)."""
    response = build_response(context, tokens, finish_reason, encoding=encoding)
    texts = [
        part.text
        for item in response.output
        if item.type == "message" and getattr(item, "phase", None) != "commentary"
        for part in item.content
        if part.type == "output_text"
    ]
    summary = "\n".join(t for t in texts if t).strip()
    if response.status == "failed" or not summary:
        raise CompactionError(
            "the model did not write a compaction summary", code="compaction_failed", status=500
        )
    assert response.usage is not None  # every terminal response carries usage
    return summary, response.usage
