# SPDX-License-Identifier: Apache-2.0
"""Run an ASGI app on a free loopback port in a background thread (tests, demo, benchmarks)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from .http_server import HttpImpl, bind, uvicorn_config
from .limits import ServerLimits


@contextmanager
def serve_in_thread(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    log_level: str = "warning",
    startup_timeout: float = 10.0,
    limits: ServerLimits | None = None,
    http: HttpImpl = "auto",
) -> Iterator[str]:
    """``with serve_in_thread(app) as base_url:`` -> ``"http://127.0.0.1:<port>"``.

    The socket is bound before the thread starts (port 0 picks a free one); the server is
    asked to exit and the thread joined when the block ends. Connection limits come from
    ``limits``, else the app's own (``app.state.limits``); ``http`` picks uvicorn's protocol
    (``"auto"``: httptools when installed, else h11).
    """
    sock = bind(host, port)
    bound_port = sock.getsockname()[1]
    config = uvicorn_config(
        app,
        limits,
        http=http,
        log_level=log_level,
        lifespan="off",
        access_log=False,
        timeout_graceful_shutdown=1,
    )
    if hasattr(config, "install_signal_handlers"):
        config.install_signal_handlers = False
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{bound_port}", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the local server did not start")
            time.sleep(0.01)
        yield f"http://{host}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()
