# SPDX-License-Identifier: Apache-2.0
"""Stand-in of ``tensorrt_llm.serve.harmony_adapter`` (the Responses-facing API).

One ``HarmonyStreamState`` per stream request id in a per-process singleton adapter; a
token batch is fed to the parser in one call and the parser's cumulative messages are
returned. Parse errors are logged and swallowed (an empty list is returned).
"""

from __future__ import annotations

import logging
from typing import Any

from openai_harmony import HarmonyError, Message, Role, StreamableParser

logger = logging.getLogger("tensorrt_llm")

RETURN_TOKEN = 200002
CALL_TOKEN = 200012


def _load_encoding():
    # Offline vocabulary (upstream calls load_harmony_encoding(HARMONY_GPT_OSS)).
    from trtllm_stream_fix.encoding import load_gpt_oss_encoding

    return load_gpt_oss_encoding()


class HarmonyStreamState:
    def __init__(self, request_id: str, encoding, available_tools=None, tool_choice=None):
        self.request_id = request_id
        self.encoding = encoding
        self.parser = StreamableParser(encoding, role=Role.ASSISTANT)
        self.available_tools = available_tools
        self.tool_choice = tool_choice
        self.tokens_processed = 0

    def get_parser(self) -> StreamableParser:
        return self.parser

    def process_token_batch_to_messages(self, tokens: list[int]) -> list[Message]:
        for token in tokens:
            self.parser.process(token)
            self.tokens_processed += 1
        return self.parser.messages


class HarmonyAdapter:
    def __init__(self) -> None:
        self.encoding = _load_encoding()
        self._stream_states: dict[str, HarmonyStreamState] = {}

    def get_stop_tokens(self) -> list[int]:
        return [RETURN_TOKEN, CALL_TOKEN]

    def get_stream_state(self, request_id: str) -> HarmonyStreamState | None:
        return self._stream_states.get(request_id)

    def create_stream_state(
        self, request_id: str, available_tools=None, tool_choice=None
    ) -> HarmonyStreamState:
        if request_id in self._stream_states:
            logger.warning("Stream state for %s already exists; replacing it", request_id)
        state = HarmonyStreamState(request_id, self.encoding, available_tools, tool_choice)
        self._stream_states[request_id] = state
        return state

    def cleanup_stream_state(self, request_id: str) -> None:
        self._stream_states.pop(request_id, None)

    def stateful_stream_harmony_tokens_to_openai_messages(
        self,
        request_id: str,
        tokens: list[int],
        available_tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
    ) -> list[Message]:
        state = self._stream_states.get(request_id)
        if state is None:
            state = self.create_stream_state(request_id, available_tools, tool_choice)
        try:
            return state.process_token_batch_to_messages(tokens)
        except (HarmonyError, UnicodeDecodeError, ValueError):
            logger.error(
                "Streaming: Failed to process token batch of %d tokens for request %s",
                len(tokens),
                request_id,
            )
            return []


_SERVE_HARMONY_ADAPTER: HarmonyAdapter | None = None


def get_harmony_adapter() -> HarmonyAdapter:
    global _SERVE_HARMONY_ADAPTER
    if _SERVE_HARMONY_ADAPTER is None:
        _SERVE_HARMONY_ADAPTER = HarmonyAdapter()
    return _SERVE_HARMONY_ADAPTER
