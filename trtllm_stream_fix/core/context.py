# SPDX-License-Identifier: Apache-2.0
"""Request-level facts that every Response object of one stream echoes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ResponseContext:
    """What a Responses request fixes for the whole stream (id, model, echoed parameters).

    ``echo`` holds the other Response fields the request sets (``response.request_echo``);
    ``clock`` gives ``completed_at`` (seconds) and is required: the core reads no clock of
    its own (``new_context`` in the edges' ``defaults`` module gives a fresh id, the current
    time and the system clock); ``envelope`` caches the Response fields
    built from all this (``response.envelope``).
    """

    response_id: str
    model: str
    created_at: int
    num_prompt_tokens: int = 0
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: str | dict[str, Any] = "auto"
    parallel_tool_calls: bool = True
    instructions: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    echo: dict[str, Any] = field(default_factory=dict)
    clock: Callable[[], float] = field(kw_only=True, repr=False, compare=False)
    envelope: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)
