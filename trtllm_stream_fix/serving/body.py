# SPDX-License-Identifier: Apache-2.0
"""The non-streaming body: output items built as the stream's final response, and messages.

``harmony_output_content`` maps a whole generation with the stream's own machine, so the
non-streaming output equals the streamed final response; ``harmony_output_messages`` parses
the output tokens for the conversation history.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from ..core.config import StreamConfig
from ..core.nonstreaming import build_response
from ..defaults import edge_defaults, new_context

logger = logging.getLogger(__name__)


def environment_config() -> StreamConfig:
    """The switches of this process's environment (``StreamConfig.from_env``)."""
    return StreamConfig.from_env(os.environ)


def harmony_output_messages(
    token_ids: Sequence[int], parse_messages: Callable[[list[int]], list[Any]]
) -> list[Any]:
    """The Harmony messages of the output tokens (conversation history); [] if unparsable."""
    try:
        return list(parse_messages(list(token_ids)))
    except Exception as exc:  # the output items say what was parsed
        logger.debug("output tokens not parsable as Harmony messages: %s", exc)
        return []


def harmony_output_content(
    token_ids: Sequence[int],
    finish_reason: str | None,
    parse_messages: Callable[[list[int]], list[Any]],
    config: StreamConfig | None = None,
) -> tuple[list[Any], list[Any]]:
    """Non-streaming output items (as the stream's final response) and the Harmony messages.

    ``parse_messages`` parses the output tokens for the conversation history; ``config``
    defaults to the environment's, as the stream's does.
    """
    token_ids = list(token_ids)
    response = build_response(
        new_context(),
        token_ids,
        finish_reason or "stop",
        config=environment_config() if config is None else config,
        **edge_defaults(),
    )
    return list(response.output), harmony_output_messages(token_ids, parse_messages)
