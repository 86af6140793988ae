# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.inputs.utils``: chat templates are for non-Harmony models."""

from __future__ import annotations

from typing import Any


async def async_apply_chat_template(**kwargs: Any) -> Any:
    raise NotImplementedError("chat templates are not on the Harmony Responses path")
