# SPDX-License-Identifier: Apache-2.0
"""uvicorn set up with the local server's connection limits, on a socket bound first.

uvicorn closes idle keep-alive connections but has no deadline for a request head: a client
that never finishes its headers holds the connection for ever. :func:`limited_protocol`
adds one (``ServerLimits.header_timeout``), armed whenever a connection waits for a request
head, to uvicorn's httptools protocol (used when ``httptools`` is installed, as with
``uvicorn[standard]``; it also gets the head size bound, which uvicorn applies to h11 only)
and to its h11 protocol (the fallback). Both answer the 400s uvicorn sends before a request
reaches the app (a negative ``Content-Length``, a bad request line) as OpenAI-shaped JSON
(:mod:`.bad_request`); the httptools one also streams to HTTP/1.0 clients without chunked
encoding, as h11 does. uvicorn's event loop ``"auto"`` picks ``uvloop``
when installed. Binding before the server starts lets callers report a bad address as an
error and announce the server only once it is listening.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import socket
from typing import Any, Literal

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .bad_request import JSONBadRequest
from .head_deadline import HeadDeadline
from .limits import ServerLimits


class _HeadDeadlineProtocol(JSONBadRequest, HeadDeadline, H11Protocol):
    """h11 protocol that closes a connection whose request head is not complete in time."""

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._cancel_head_deadline()

    def _waiting_for_head(self) -> bool:
        return self.conn.their_state is h11.IDLE


HttpImpl = Literal["auto", "httptools", "h11"]


def httptools_available() -> bool:
    """Whether uvicorn's httptools protocol can be used (``httptools`` is installed)."""
    return importlib.util.find_spec("httptools") is not None


def limited_protocol(
    header_timeout: float,
    http: HttpImpl = "auto",
    max_header_bytes: int = ServerLimits.max_header_bytes,
) -> type[asyncio.Protocol]:
    """uvicorn's httptools (``"auto"`` when installed) or h11 protocol class with a
    ``header_timeout`` (seconds) for each request head; the httptools one also answers a
    head over ``max_header_bytes`` with a 400 (uvicorn bounds h11's head itself)."""
    if http == "httptools" or (http == "auto" and httptools_available()):
        from ._httptools_protocol import HeadDeadlineHttpToolsProtocol

        attrs = {"head_timeout": header_timeout, "max_head_bytes": max_header_bytes}
        return type("HeadDeadlineProtocol", (HeadDeadlineHttpToolsProtocol,), attrs)
    if http not in ("auto", "h11"):
        raise ValueError(f"unknown HTTP implementation {http!r} (auto, httptools, h11)")
    return type("HeadDeadlineProtocol", (_HeadDeadlineProtocol,), {"head_timeout": header_timeout})


def uvicorn_config(
    app: Any, limits: ServerLimits | None = None, *, http: HttpImpl = "auto", **options: Any
) -> uvicorn.Config:
    """A ``uvicorn.Config`` for ``app`` with the connection limits of ``limits``, on the
    ``http`` protocol (``"auto"``: httptools when installed, else h11)."""
    limits = limits or getattr(getattr(app, "state", None), "limits", None) or ServerLimits()
    return uvicorn.Config(
        app,
        http=limited_protocol(limits.header_timeout, http, limits.max_header_bytes),
        h11_max_incomplete_event_size=limits.max_header_bytes,
        timeout_keep_alive=limits.keep_alive_timeout,
        limit_concurrency=limits.max_concurrency,
        **options,
    )


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0 = any free one); OSError if it cannot be."""
    if not 0 <= port <= 65535:
        raise OSError(f"port {port} is outside 0-65535")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise OSError(f"cannot resolve host {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)  # connections queue from now on, before uvicorn serves them
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def serve_on(
    sock: socket.socket, app: Any, limits: ServerLimits | None = None, **options: Any
) -> None:
    """Serve ``app`` on the bound ``sock`` with ``limits`` (see :func:`uvicorn_config`) until
    the server stops; closes ``sock``. The CLI's ``serve`` and the benchmarks' server use it.

    The heap is settled first (:func:`settle_heap`)."""
    server = uvicorn.Server(uvicorn_config(app, limits, **options))
    settle_heap()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def settle_heap() -> None:
    """Put everything allocated so far (the encoding and its token table, the models'
    schemas, the app) out of the garbage collector's reach before serving: collections then
    walk only what requests allocate (about a quarter of the simulated server's CPU at 128
    streams, docs/benchmarks.md)."""
    gc.collect()
    gc.freeze()
