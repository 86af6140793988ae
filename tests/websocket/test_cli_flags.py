# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix serve`` passes its WebSocket flags to the app's settings."""

from __future__ import annotations

import pytest

from trtllm_stream_fix import cli
from trtllm_stream_fix.sim import http_server, server


@pytest.mark.parametrize(
    "flags, enabled, lifetime",
    [
        ([], True, 3600.0),
        (["--no-websocket"], False, 3600.0),
        (["--websocket-lifetime", "90"], True, 90.0),
    ],
)
def test_serve_websocket_flags(monkeypatch, flags, enabled, lifetime):
    seen = {}
    real = server.create_app

    def create_app(*args, **kwargs):
        seen["settings"] = kwargs["websocket"]
        return real(*args, **kwargs)

    monkeypatch.setattr(server, "create_app", create_app)
    monkeypatch.setattr(http_server, "serve_on", lambda sock, *a, **k: sock.close())
    assert cli.main(["serve", "--port", "0", "--log-level", "warning", *flags]) == 0
    assert (seen["settings"].enabled, seen["settings"].lifetime_seconds) == (enabled, lifetime)


def test_a_bad_lifetime_is_a_usage_error(capsys):
    assert cli.main(["serve", "--port", "0", "--websocket-lifetime", "0"]) == 2
    assert "lifetime_seconds must be > 0" in capsys.readouterr().err
