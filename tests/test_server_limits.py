# SPDX-License-Identifier: Apache-2.0
"""A server that bad input cannot stop: bounded, off-loop tokenising, JSON errors for every
bad request, validated tools and input items, a deadline for request heads."""

from __future__ import annotations

import json
import random
import socket
import threading
from typing import Any

import httpx
import pytest

from trtllm_stream_fix import encoding as encoding_module
from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
from trtllm_stream_fix.sim.limits import PIECE_CHARS, ServerLimits, count_prompt_tokens, pieces

MODEL = "gpt-oss-20b"


def _post(url: str, body: Any, **kw: Any) -> httpx.Response:
    content = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return httpx.post(
        f"{url}/v1/responses",
        content=content,
        headers={"content-type": "application/json"},
        timeout=30,
        **kw,
    )


def _assert_openai_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"] and "Traceback" not in error["message"]
    return error


def _nested_object(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


@pytest.fixture(scope="module")
def base_url():
    with serve_in_thread(create_app(EngineConfig(stream_interval=20))) as url:
        yield url


@pytest.mark.parametrize(
    ("name", "body", "param"),
    [
        ("json nested 1000 deep", '{"model": "x", "input": ' + "[" * 1000 + "]" * 1000 + "}", None),
        (
            "5000-digit integer",
            '{"model": "gpt-oss-20b", "input": "hi", "max_output_tokens": ' + "9" * 5000 + "}",
            None,
        ),
        (
            "input text not a string",
            {
                "model": MODEL,
                "input": [{"role": "user", "content": [{"type": "input_text", "text": 5}]}],
            },
            "input[0].content[0].text",
        ),
        (
            "streamed, tool schema nested 300 deep",
            '{"model": "gpt-oss-20b", "input": "hi", "stream": true, "tools": [{"type": '
            '"function", "name": "f", "parameters": ' + _nested_object(300) + "}]}",
            None,
        ),
        (
            "tool name not a string",
            {"model": MODEL, "input": "hi", "tools": [{"type": "function", "name": 5}]},
            "tools[0].name",
        ),
        (
            "tool name with spaces",
            {"model": MODEL, "input": "hi", "tools": [{"type": "function", "name": "get weather"}]},
            "tools[0].name",
        ),
        (
            "tool parameters not an object",
            {
                "model": MODEL,
                "input": "hi",
                "tools": [{"type": "function", "name": "f", "parameters": [1]}],
            },
            "tools[0].parameters",
        ),
        (
            "unknown tool type",
            {"model": MODEL, "input": "hi", "tools": [{"type": "teleport"}]},
            "tools[0].type",
        ),
        (
            "duplicate function names",
            {"model": MODEL, "input": "hi", "tools": [{"type": "function", "name": "f"}] * 2},
            "tools[1].name",
        ),
        (
            "function_call_output without call_id",
            {"model": MODEL, "input": [{"type": "function_call_output", "output": "42"}]},
            "input[0].call_id",
        ),
        (
            "unknown input item type",
            {"model": MODEL, "input": [{"type": "teleport"}]},
            "input[0].type",
        ),
        (
            "message with a bad role",
            {"model": MODEL, "input": [{"role": "robot", "content": "hi"}]},
            "input[0].role",
        ),
    ],
)
def test_every_bad_request_is_a_400_with_an_openai_error(base_url, name, body, param):
    error = _assert_openai_error(_post(base_url, body), 400)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param, error


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/chat/completions"])
@pytest.mark.parametrize("seed", ["abc", "7.5", "", "9" * 5000])
def test_a_metadata_seed_that_is_not_an_integer_is_named(base_url, path, seed):
    body = {"model": MODEL, "metadata": {"seed": seed}}
    body |= (
        {"input": "hi"}
        if path == "/v1/responses"
        else {"messages": [{"role": "user", "content": "hi"}]}
    )
    response = httpx.post(f"{base_url}{path}", json=body, timeout=30)
    error = _assert_openai_error(response, 400)
    assert error["param"] == "metadata.seed", error
    assert "integer" in error["message"]


def test_a_metadata_seed_that_is_an_integer_selects_the_generation(base_url):
    def answer(metadata: dict[str, str]) -> list[Any]:
        body = {"model": MODEL, "input": "hi", "metadata": metadata}
        return httpx.post(f"{base_url}/v1/responses", json=body, timeout=30).json()["output"]

    def text(output: list[Any]) -> list[Any]:
        return [[p.get("text") for p in item.get("content") or ()] for item in output]

    assert text(answer({"seed": "12"})) == text(answer({"seed": " 12"}))
    assert any(text(answer({"seed": str(s)})) != text(answer({"seed": "12"})) for s in range(5))


def test_valid_tools_and_input_items_are_still_served(base_url):
    body = {
        "model": MODEL,
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "weather?"}]},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        ],
        "tools": [
            {"type": "function", "name": "get_weather", "parameters": {"type": "object"}},
            {"type": "web_search_preview"},
        ],
    }
    response = _post(base_url, body)
    assert response.status_code == 200, response.text
    assert [t["type"] for t in response.json()["tools"]] == ["function", "web_search_preview"]


def test_an_internal_error_is_an_openai_shaped_500(monkeypatch):
    app = create_app(EngineConfig(stream_interval=20))

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("engine exploded")

    monkeypatch.setattr(app.state.engine, "select", broken)
    with serve_in_thread(app) as url:
        error = _assert_openai_error(_post(url, {"model": MODEL, "input": "hi"}), 500)
        assert error["type"] == "server_error" and "exploded" not in error["message"]
        _assert_openai_error(httpx.get(f"{url}/no/such/route"), 404)


def test_input_over_the_character_bound_is_a_413():
    app = create_app(EngineConfig(stream_interval=20), limits=ServerLimits(max_input_chars=1000))
    with serve_in_thread(app) as url:
        error = _assert_openai_error(_post(url, {"model": MODEL, "input": "a" * 5000}), 413)
        assert error["code"] == "input_too_large" and error["param"] == "input"
        assert _post(url, {"model": MODEL, "input": "a" * 900}).status_code == 200


def test_input_over_the_token_bound_is_a_400():
    app = create_app(EngineConfig(stream_interval=20), limits=ServerLimits(max_input_tokens=50))
    with serve_in_thread(app) as url:
        error = _assert_openai_error(_post(url, {"model": MODEL, "input": "word " * 200}), 400)
        assert error["code"] == "context_length_exceeded"


class _GatedEncoding:
    """The real encoding; ``encode`` of a long text waits until the test opens the gate."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.piece_lengths: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def encode(self, text: str, **kw: Any) -> Any:
        self.piece_lengths.append(len(text))
        if len(text) >= 1000:
            self.entered.set()
            self.gate.wait(timeout=30)
        return self._real.encode(text, **kw)


@pytest.fixture
def gated(monkeypatch):
    gated = _GatedEncoding(encoding_module.load_gpt_oss_encoding())
    monkeypatch.setattr(encoding_module, "load_gpt_oss_encoding", lambda: gated)
    return gated


def test_health_answers_while_a_long_input_is_tokenised(gated):
    app = create_app(EngineConfig(stream_interval=20))
    with serve_in_thread(app) as url:
        result: dict[str, Any] = {}
        thread = threading.Thread(
            target=lambda: result.setdefault("r", _post(url, {"model": MODEL, "input": "a" * 5000}))
        )
        thread.start()
        try:
            assert gated.entered.wait(timeout=10), "the request never reached the tokeniser"
            try:
                health = httpx.get(f"{url}/health", timeout=5).status_code
            except httpx.TimeoutException:
                health = None  # the event loop is blocked by tokenising
        finally:
            gated.gate.set()
            thread.join(timeout=30)
        assert health == 200
        assert result["r"].status_code == 200


def test_a_long_single_word_reaches_the_encoder_in_bounded_pieces(gated):
    gated.gate.set()
    app = create_app(EngineConfig(stream_interval=20))
    with serve_in_thread(app) as url:
        assert _post(url, {"model": MODEL, "input": "x" * (5 * PIECE_CHARS + 7)}).status_code == 200
    assert max(gated.piece_lengths) <= PIECE_CHARS


def test_piecewise_count_equals_the_whole_count_for_ordinary_text(encoding):
    rng = random.Random(7)
    words = ["the", "capital", "of", "France", "is", "Paris,", "  ", "largest\n", "city.", "東京"]
    words += ["(note)", "don't", "123456", "\n\n", "   ", "\t", "Ünïcödé"]
    text = " ".join(rng.choice(words) for _ in range(6000))
    assert "".join(pieces(text)) == text
    assert count_prompt_tokens(encoding, text, ServerLimits()) == len(
        encoding.encode(text, allowed_special="all")
    )


def _read_until_closed(sock: socket.socket) -> bytes:
    received = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return received
        received += chunk


def test_a_connection_that_never_finishes_its_headers_is_closed():
    app = create_app(EngineConfig(stream_interval=20), limits=ServerLimits(header_timeout=0.5))
    with serve_in_thread(app) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            try:
                leftover = _read_until_closed(sock)
            except TimeoutError:
                pytest.fail("the server kept a half-sent request head open for 10 s")
            assert leftover == b""
        # Complete requests on a kept-alive connection are unaffected.
        with httpx.Client(base_url=url) as client:
            assert client.get("/health").status_code == 200
            assert client.get("/health").status_code == 200


def test_an_endless_request_head_is_cut_at_the_header_bound():
    app = create_app(EngineConfig(stream_interval=20), limits=ServerLimits(max_header_bytes=4096))
    with serve_in_thread(app) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"y" * 8192)
            try:
                answer = _read_until_closed(sock)
            except TimeoutError:
                pytest.fail("the server buffered an 8 KiB incomplete head and kept waiting")
        assert answer.startswith(b"HTTP/1.1 400")
