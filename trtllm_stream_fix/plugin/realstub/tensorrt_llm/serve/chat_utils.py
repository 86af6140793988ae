# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.serve.chat_utils`` (chat templates, tool-call ids of the chat
endpoint); none of it runs for Harmony Responses streams."""

from __future__ import annotations

from typing import Any


def parse_chat_messages_coroutines(messages: Any, model_config: Any) -> Any:
    raise NotImplementedError("chat templates are not on the Harmony Responses path")


def resolve_top_level_model_type(model_config: Any) -> str:
    raise NotImplementedError("chat templates are not on the Harmony Responses path")


def make_tool_call_id(id_type: str = "random", func_name: Any = None, idx: Any = None) -> str:
    raise NotImplementedError("chat tool calls are not on the Harmony Responses path")


def load_chat_template(chat_template: Any) -> Any:
    """Harmony models render their prompt with the Harmony encoding, not a chat template."""
    if chat_template is not None:
        raise NotImplementedError("chat templates are not on the Harmony path")
    return None
