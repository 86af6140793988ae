# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.conversation_id``: conversation ids route KV-cache
reuse across workers; one CPU process has nothing to route."""

from __future__ import annotations

from typing import Any


def resolve_request_conversation_id(request: Any, headers: Any) -> None:
    return None
