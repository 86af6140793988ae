# SPDX-License-Identifier: Apache-2.0
"""The plugin's errors.

Hierarchy::

    StreamFixError
    ├── StreamFixInstallError (RuntimeError): a patch failed under TRTLLM_STREAM_FIX=require
    ├── FingerprintError (ValueError): no TensorRT-LLM serve folder where one was asked for
    ├── IncompleteStream (RuntimeError): upstream's stream (a WebSocket turn's) ended
    │   without a terminal event
    └── PluginRequestError: a request a plugin route refuses, with its OpenAI-shaped body
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


class PluginRequestError(StreamFixError):
    """A request refused with an OpenAI-shaped body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        kind = "server_error" if status >= 500 else "invalid_request_error"
        self.body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
