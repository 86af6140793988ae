# SPDX-License-Identifier: Apache-2.0
"""Special token ids of the gpt-oss Harmony encoding (o200k_harmony)."""

from __future__ import annotations

ENDOFTEXT = 199999
RETURN = 200002  # ends the final answer; a stop token of the request, trimmed upstream
CONSTRAIN = 200003
CHANNEL = 200005
START = 200006
END = 200007  # ends any other message
MESSAGE = 200008  # ends a header
CALL = 200012  # ends a tool call; a stop token of the request, trimmed upstream

STOP_TOKENS = frozenset((END, RETURN, CALL))

# Their text forms that give away Harmony markup leaking into streamed text.
MARKUP = (
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|constrain|>",
)
