# SPDX-License-Identifier: Apache-2.0
"""Every error this package raises derives from ``StreamFixError``.

The core's errors (``core.errors``: lifecycle, Harmony stream, chat generation, turn,
encoding) are imported here; each other package keeps its errors in its own ``errors``
module, its hierarchy in that docstring (``checker.errors``, ``sim.errors``,
``plugin.errors``), imported by name on first use (``trtllm_stream_fix.errors.SSEProtocolError``
imports ``checker.errors``). Importing this module loads neither ``openai`` nor
``openai_harmony``.
"""

from __future__ import annotations

import importlib
from typing import Any

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

#: The tools' errors: name -> the module that defines it (imported on first use).
ELSEWHERE: dict[str, str] = {
    "ConversionError": "upstream_pr.convert",
    "EditError": "upstream_pr.edits",
    "FingerprintError": "plugin.errors",
    "HarnessUnavailableError": "upstream_pr.harness",
    "InjectedDisconnect": "sim.errors",
    "InvalidTransition": "checker.errors",
    "JSONLimitError": "jsonlimits",
    "ProtocolRequiredError": "checker.errors",
    "RequestError": "sim.errors",
    "SDKRejected": "differential.chat_oracle",
    "SSEDecodeError": "checker.errors",
    "SSELimitError": "checker.errors",
    "SSEProtocolError": "checker.errors",
    "SourceTreeError": "upstream_pr.changeset",
    "StoreError": "store.base",
    "StoreUnavailable": "store.base",
    "StreamFixInstallError": "plugin.errors",
    "TritonProtocolError": "checker.errors",
    "TurnRequestError": "sim.errors",
    "UnknownItemReference": "store.references",
    "UnknownVersionError": "upstream_pr.detect",
}


def __getattr__(name: str) -> Any:
    module = ELSEWHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"trtllm_stream_fix.{module}"), name)


#: The core's errors; the tools' are in ``ELSEWHERE``.
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
