# SPDX-License-Identifier: Apache-2.0
"""A stored turn (a response and the messages put with it) and steps run on a store."""

from __future__ import annotations

import asyncio
from typing import Any

from trtllm_stream_fix.store import open_store


def stored_response(n: int, text: str = "hello") -> dict[str, Any]:
    """Response ``resp_<n>``: a reasoning item, a function call and a message saying ``text``."""
    return {
        "id": f"resp_{n}",
        "object": "response",
        "status": "completed",
        "output": [
            {"id": f"rs_{n}", "type": "reasoning", "summary": [], "content": []},
            {"id": f"fc_{n}", "type": "function_call", "call_id": f"call_{n}", "name": "f"},
            {"id": f"msg_{n}", "type": "message", "role": "assistant", "content": [text]},
        ],
    }


def stored_messages(n: int, text: str = "") -> list[dict[str, Any]]:
    """Turn ``n``'s messages: the user's (``text`` appended) then :func:`stored_response`'s."""
    content = f"turn {n} {text}" if text else f"turn {n}"
    return [{"type": "message", "role": "user", "content": content}, *stored_response(n)["output"]]


def run_store(url: str, steps: Any) -> Any:
    """``await steps(store)`` on the store ``url`` opens, closed after."""

    async def main() -> Any:
        store = open_store(url)
        try:
            return await steps(store)
        finally:
            await store.close()

    return asyncio.run(main())
