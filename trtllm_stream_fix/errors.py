# SPDX-License-Identifier: Apache-2.0
"""Every error this package raises derives from ``StreamFixError``.

The core's errors (``core.errors``: lifecycle, Harmony stream, chat generation, encoding)
are imported here; the tools' errors (checker, simulated server, upstream-pr, plugin
installer) live in their modules and are imported by name on first use
(``trtllm_stream_fix.errors.SSEProtocolError`` imports ``checker.sse_reader``). Importing
this module loads neither ``openai`` nor ``openai_harmony``.
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
    VocabPackageMissingError,
    VocabUnavailableError,
)

#: The tools' errors: name -> the module that defines it (imported on first use).
ELSEWHERE: dict[str, str] = {
    "ConversionError": "upstream_pr.convert",
    "EditError": "upstream_pr.edits",
    "FingerprintError": "plugin.fingerprint",
    "HarnessUnavailableError": "upstream_pr.harness",
    "InjectedDisconnect": "sim.faults",
    "InvalidTransition": "checker.triton",
    "JSONLimitError": "jsonlimits",
    "ProtocolRequiredError": "checker.client",
    "RequestError": "sim.errors",
    "SDKRejected": "differential.chat_oracle",
    "SSEDecodeError": "checker.sse_reader",
    "SSELimitError": "checker.sse_reader",
    "SSEProtocolError": "checker.sse_reader",
    "SourceTreeError": "upstream_pr.changeset",
    "StoreError": "store.base",
    "StoreUnavailable": "store.base",
    "StreamFixInstallError": "plugin.installer",
    "TritonProtocolError": "checker.triton",
    "TurnError": "core.turn",
    "TurnRequestError": "sim.turns",
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
    "VocabPackageMissingError",
    "VocabUnavailableError",
]
