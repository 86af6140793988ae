# SPDX-License-Identifier: Apache-2.0
"""The plugin's errors.

Hierarchy::

    StreamFixError
    ├── StreamFixInstallError (RuntimeError): a patch failed under TRTLLM_STREAM_FIX=require
    ├── FingerprintError (ValueError): no TensorRT-LLM serve folder where one was asked for
    └── IncompleteStream (RuntimeError): upstream's stream (a WebSocket turn's) ended
        without a terminal event
"""

from __future__ import annotations

from ..core.errors import StreamFixError


class StreamFixInstallError(StreamFixError, RuntimeError):
    """A patch could not be applied while ``TRTLLM_STREAM_FIX=require``."""


class FingerprintError(StreamFixError, ValueError):
    """No TensorRT-LLM serve folder where one was asked for."""


class IncompleteStream(StreamFixError, RuntimeError):
    """Upstream's stream ended without a terminal event (the WebSocket session answers a 500
    ``error`` event, so the client's turn ends)."""
