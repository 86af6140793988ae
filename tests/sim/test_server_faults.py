# SPDX-License-Identifier: Apache-2.0
"""Broken streams from the local server's fault injection, each with its own outcome."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from typing import Any

import httpx
import pytest

from trtllm_stream_fix.checker.client import stream_responses
from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread


@pytest.fixture(scope="module")
def base_url():
    app = create_app(EngineConfig(stream_interval=4), allow_faults=True)
    with serve_in_thread(app, log_level="critical") as url:
        yield url


def _stream(base_url: str, fault: str | None, idle_timeout: float = 5.0):
    body = {"model": "gpt-oss-20b", "input": "x", "scenario": "reasoning_answer"}
    if fault:
        body["sim_fault"] = fault

    async def run():
        async with httpx.AsyncClient(timeout=10) as client:
            return await stream_responses(
                client, f"{base_url}/v1/responses", body, idle_timeout=idle_timeout, deadline=30
            )

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("fault", "outcome"),
    [
        (None, "ok"),
        ("drop", "eof_before_terminal"),
        ("no_terminal", "eof_before_terminal"),
        ("http503", "http_error"),
        ("malformed_json", "malformed_json"),
        ("oversize", "malformed_sse"),
        ("invalid_utf8", "malformed_sse"),
        ("after_terminal", "event_after_terminal"),
    ],
)
def test_fault_gives_its_outcome(base_url, fault, outcome):
    record = _stream(base_url, fault)
    assert record.outcome == outcome, (record.detail, record.violations)
    assert record.ok is (fault is None)


def test_dropped_connection_is_reported_as_a_transport_break(base_url):
    dropped = _stream(base_url, "drop")
    clean_eof = _stream(base_url, "no_terminal")
    assert "RemoteProtocolError" in dropped.detail or "ReadError" in dropped.detail
    assert "Error" not in clean_eof.detail
    assert dropped.events and clean_eof.events


def test_http503_keeps_the_error_body(base_url):
    record = _stream(base_url, "http503")
    assert record.http_status == 503
    assert "overloaded" in record.http_body


def test_decode_and_size_faults_are_told_apart(base_url):
    assert "SSEDecodeError" in _stream(base_url, "invalid_utf8").detail
    assert "SSELimitError" in _stream(base_url, "oversize").detail


def test_stalled_server_times_out_and_frees_the_stream(base_url):
    record = _stream(base_url, "stall", idle_timeout=0.5)
    assert record.outcome == "idle_timeout"
    assert record.events  # the stream started before it stalled
    for _ in range(100):
        if httpx.get(f"{base_url}/health").json()["active_streams"] == 0:
            break
        asyncio.run(asyncio.sleep(0.05))
    assert httpx.get(f"{base_url}/health").json()["active_streams"] == 0


class _Records(logging.Handler):
    """Every log record of the server (its own loggers and uvicorn's)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def wait_for(self, predicate: Any, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(predicate(r) for r in list(self.records)):
                return True
            time.sleep(0.02)
        return False


@pytest.fixture
def logged_server():
    records = _Records()
    app = create_app(EngineConfig(stream_interval=1, tokens_per_second=200))
    with serve_in_thread(app, log_level="info") as url:
        loggers = [logging.getLogger(), logging.getLogger("uvicorn")]
        for logger in loggers:
            logger.addHandler(records)
        previous = logging.getLogger("trtllm_stream_fix").level
        logging.getLogger("trtllm_stream_fix").setLevel(logging.INFO)
        try:
            yield url, records
        finally:
            logging.getLogger("trtllm_stream_fix").setLevel(previous)
            for logger in loggers:
                logger.removeHandler(records)


def _tracebacks(records: _Records) -> list[str]:
    return [
        f"{r.name}: {r.getMessage()}"
        for r in records.records
        if r.exc_info or "Traceback" in r.getMessage()
    ]


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def test_a_client_that_leaves_mid_body_is_one_log_line(logged_server):
    url, records = logged_server
    with _connect(url) as sock:
        sock.sendall(
            b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n"
            b'Content-Type: application/json\r\n\r\n{"model":"gpt-oss-20b","input"'
        )
    seen = records.wait_for(lambda r: "disconnect" in r.getMessage() or r.exc_info)
    assert seen, [r.getMessage() for r in records.records]
    assert httpx.get(f"{url}/health", timeout=10).status_code == 200
    assert _tracebacks(records) == []
    lines = [r for r in records.records if "disconnect" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno <= logging.INFO, lines


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/chat/completions"])
def test_a_client_that_leaves_mid_stream_logs_no_traceback(logged_server, path):
    url, records = logged_server
    body = {"model": "gpt-oss-20b", "stream": True, "scenario": "reasoning_answer"}
    turn = {"role": "user", "content": "x"}
    body |= {"input": "x"} if path == "/v1/responses" else {"messages": [turn]}
    raw = json.dumps(body).encode()
    with _connect(url) as sock:
        sock.sendall(
            b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
            b"Content-Type: application/json\r\n\r\n%s" % (path.encode(), len(raw), raw)
        )
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    # The stream's state is released once the server notices the client left.
    deadline = time.monotonic() + 10
    while httpx.get(f"{url}/health", timeout=10).json()["active_streams"] and (
        time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert httpx.get(f"{url}/health", timeout=10).json()["active_streams"] == 0
    assert _tracebacks(records) == []
