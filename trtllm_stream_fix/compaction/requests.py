# SPDX-License-Identifier: Apache-2.0
"""What compaction reads of a request: the ``/compact`` body and ``context_management``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .errors import CompactionError

#: OpenAI's smallest ``compact_threshold``.
MIN_COMPACT_THRESHOLD = 1000


class CompactRequest(BaseModel):
    """``POST /v1/responses/compact``: ``model`` required; other OpenAI fields accepted."""

    model_config = ConfigDict(extra="allow", strict=True)

    model: str = Field(min_length=1)
    input: str | list[dict[str, Any]] | None = None
    previous_response_id: str | None = None
    instructions: str | None = None
    prompt_cache_key: str | None = None


def compact_threshold(value: Any, default: int) -> int | None:
    """The ``compact_threshold`` of a create's ``context_management`` (None: no compaction;
    ``default`` for an entry without one; the smallest of several entries); a 400 naming
    the entry for anything else."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise CompactionError("context_management must be a list", param="context_management")
    found: int | None = None
    for k, entry in enumerate(value):
        where = f"context_management[{k}]"
        if not isinstance(entry, dict) or entry.get("type") != "compaction":
            raise CompactionError(f"{where}.type must be 'compaction'", param=f"{where}.type")
        threshold = entry.get("compact_threshold")
        if threshold is None:
            threshold = default
        if (
            not isinstance(threshold, int)
            or isinstance(threshold, bool)
            or threshold < MIN_COMPACT_THRESHOLD
        ):
            raise CompactionError(
                f"{where}.compact_threshold must be an integer of at least {MIN_COMPACT_THRESHOLD}",
                param=f"{where}.compact_threshold",
            )
        found = threshold if found is None else min(found, threshold)
    return found
