# SPDX-License-Identifier: Apache-2.0
"""OpenAI-shaped JSON for the 400s uvicorn answers before a request reaches the app.

uvicorn's protocols answer a request they cannot parse (a negative or malformed
``Content-Length``, a bad request line, a head over the size bound) with a ``text/plain``
400 of their own and close the connection; the app never sees the request. The mixin writes
the same answer as an OpenAI error body instead.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.errors import error_body


def bad_request_bytes(message: str, default_headers: list[tuple[bytes, bytes]]) -> bytes:
    """A complete ``400`` HTTP response with an OpenAI error body; the connection closes."""
    body = json.dumps(error_body(message, code="invalid_http_request")).encode()
    head = [b"HTTP/1.1 400 Bad Request\r\n"]
    head += [name + b": " + value + b"\r\n" for name, value in default_headers]
    head += [
        b"content-type: application/json\r\n",
        b"content-length: " + str(len(body)).encode() + b"\r\n",
        b"connection: close\r\n\r\n",
    ]
    return b"".join(head) + body


class JSONBadRequest:
    """Mixin for a uvicorn protocol: its own 400 answers are OpenAI-shaped JSON."""

    transport: Any
    server_state: Any

    def send_400_response(self, msg: str) -> None:
        self.transport.write(bad_request_bytes(msg, self.server_state.default_headers))
        self.transport.close()
