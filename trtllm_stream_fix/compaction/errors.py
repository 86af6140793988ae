# SPDX-License-Identifier: Apache-2.0
"""Compaction's errors: each carries the HTTP status, ``param`` and ``code`` of its answer.

Hierarchy::

    StreamFixError
    ├── CompactionError (ValueError): a compaction request or item refused (400 by default)
    │   └── InvalidCompactionBlob: ``encrypted_content`` not one of this server's blobs
    └── CompactionKeyError (ValueError): the compaction key is not a Fernet key
"""

from __future__ import annotations

from ..core.errors import StreamFixError


class CompactionError(StreamFixError, ValueError):
    """A compaction request or item the server refuses (OpenAI-shaped 400 by default)."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str = "invalid_value",
        status: int = 400,
    ) -> None:
        super().__init__(message)
        self.param = param
        self.code = code
        self.status = status


class InvalidCompactionBlob(CompactionError):
    """An ``encrypted_content`` that is not one of this server's compaction blobs: tampered,
    truncated, too large, sealed with another key, or another provider's (an OpenAI blob)."""

    def __init__(self, param: str, reason: str) -> None:
        super().__init__(
            f"Invalid '{param}': {reason}. Only compaction items produced by this server "
            "(with its current key) can be used as input.",
            param=param,
            code="invalid_encrypted_content",
        )


class CompactionKeyError(StreamFixError, ValueError):
    """``TRTLLM_STREAM_FIX_COMPACTION_KEY`` is not a Fernet key (a configuration error)."""
