# SPDX-License-Identifier: Apache-2.0
"""Broken streams from the local server's fault injection, each with its own outcome."""

from __future__ import annotations

import asyncio

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
