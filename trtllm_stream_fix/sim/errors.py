# SPDX-License-Identifier: Apache-2.0
"""The simulated server's errors (their OpenAI-shaped body is core.errors.error_body).

Hierarchy::

    StreamFixError
    ├── RequestError: a rejected request, its HTTP status and OpenAI-style body
    ├── TurnRequestError (ValueError): a request that cannot be followed (``param``)
    └── InjectedDisconnect: raised in a body to make the server drop the connection
"""

from __future__ import annotations

from ..core.errors import StreamFixError, error_body


class RequestError(StreamFixError):
    """A request the server rejects: HTTP ``status`` with an OpenAI-style body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        type_: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = error_body(message, type_=type_, param=param, code=code)


class InjectedDisconnect(StreamFixError):
    """Raised inside the response body to make the server drop the connection."""


class TurnRequestError(StreamFixError, ValueError):
    """The request cannot be followed (``param`` names the offending field)."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param
