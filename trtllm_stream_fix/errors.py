# SPDX-License-Identifier: Apache-2.0
"""Every error this package raises derives from ``StreamFixError``.

The core's errors (``core.errors``: lifecycle, Harmony stream, chat generation, turn,
encoding) are re-exported here, with the shared JSON bounds' ``JSONLimitError``. Each other
package keeps its errors in its own ``errors`` module, its hierarchy in that docstring,
re-exported from the package root: ``checker``, ``compaction``, ``plugin``, ``sim``,
``store``, ``upstream_pr``, ``websocket``. ``differential.chat_oracle`` keeps its
``SDKRejected``, as ``jsonlimits`` its error, in the module itself: both are copied whole
into TensorRT-LLM's tests by ``upstream-pr``. Importing this module loads neither ``openai``
nor ``openai_harmony``.
"""

from __future__ import annotations

from .core.errors import (
    ChatGenerationError,
    EncodingMismatchError,
    HarmonyStreamError,
    LifecycleError,
    StreamFixError,
    TruncatedHeaderError,
    TurnError,
    VocabPackageMissingError,
    VocabUnavailableError,
)
from .jsonlimits import JSONLimitError

__all__ = [
    "ChatGenerationError",
    "EncodingMismatchError",
    "HarmonyStreamError",
    "JSONLimitError",
    "LifecycleError",
    "StreamFixError",
    "TruncatedHeaderError",
    "TurnError",
    "VocabPackageMissingError",
    "VocabUnavailableError",
]
