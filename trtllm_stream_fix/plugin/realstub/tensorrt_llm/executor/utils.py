# SPDX-License-Identifier: Apache-2.0
"""Stand-in for ``tensorrt_llm.executor.utils``: the context-length error code."""

CONTEXT_LENGTH_EXCEEDED_CODE = "context_length_exceeded"


def is_context_length_exceeded_message(message: str) -> bool:
    return "context length" in str(message).lower()
