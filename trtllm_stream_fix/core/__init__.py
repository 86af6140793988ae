# SPDX-License-Identifier: Apache-2.0
"""The sans-IO core: Harmony driver, Responses event machine, items, events, SSE framing.

Nothing here touches the file system, the environment, the clock or random ids on its own:
the encoding, the clock and the id factory are handed in, and the edges supply defaults.
Its errors are in :mod:`.errors` (hierarchy there), re-exported here.
"""

from .errors import (
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

__all__ = [
    "ChatGenerationError",
    "EncodingMismatchError",
    "HarmonyStreamError",
    "LifecycleError",
    "StreamFixError",
    "TruncatedHeaderError",
    "TurnError",
    "VocabPackageMissingError",
    "VocabUnavailableError",
]
