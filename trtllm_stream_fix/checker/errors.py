# SPDX-License-Identifier: Apache-2.0
"""The checkers' errors.

Hierarchy::

    StreamFixError
    ├── SSEProtocolError (ValueError): not a valid or acceptable event stream
    │   ├── SSEDecodeError: not UTF-8
    │   └── SSELimitError: a line, event or stream over its limit
    ├── TritonProtocolError (ValueError): a Triton stream broke decoupled streaming
    │   └── InvalidTransition: an input in a state that does not accept it
    └── ProtocolRequiredError (ValueError): a raw SSE body without its protocol
"""

from __future__ import annotations

from trtllm_stream_fix.errors import StreamFixError


class TritonProtocolError(StreamFixError, ValueError):
    """A Triton stream broke the decoupled-streaming protocol."""


class InvalidTransition(TritonProtocolError):
    """An input arrived in a state that does not accept it."""


class SSEProtocolError(StreamFixError, ValueError):
    """The byte stream is not a valid (or acceptable) event stream."""


class SSEDecodeError(SSEProtocolError):
    """The byte stream is not valid UTF-8."""


class SSELimitError(SSEProtocolError):
    """A line, an event or the whole stream exceeds its configured size limit."""


class ProtocolRequiredError(StreamFixError, ValueError):
    """A raw SSE body was given without its protocol."""
