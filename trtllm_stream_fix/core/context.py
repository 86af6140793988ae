# SPDX-License-Identifier: Apache-2.0
"""Request-level facts that every Response object of one stream echoes."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ResponseContext:
    """What a Responses request fixes for the whole stream (id, model, echoed parameters)."""

    response_id: str
    model: str
    created_at: float
    num_prompt_tokens: int = 0
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: str | dict[str, Any] = "auto"
    parallel_tool_calls: bool = True
    instructions: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None

    @classmethod
    def new(cls, model: str = "gpt-oss-20b", **kwargs: Any) -> ResponseContext:
        """A context with a fresh ``resp_`` id and the current time."""
        kwargs.setdefault("response_id", f"resp_{uuid.uuid4().hex}")
        kwargs.setdefault("created_at", float(int(time.time())))
        return cls(model=model, **kwargs)
