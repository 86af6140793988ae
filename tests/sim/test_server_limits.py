# SPDX-License-Identifier: Apache-2.0
"""A server that bad input cannot stop: bounded, off-loop tokenising, JSON errors for every
bad request, validated tools and input items, a deadline for request heads."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import threading
from typing import Any

import httpx
import openai
import pytest

from trtllm_stream_fix import encoding as encoding_module
from trtllm_stream_fix.checker.client import stream_chat, stream_responses
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


HTTP_IMPLS = ("httptools", "h11")  # uvicorn's protocols: the default when installed, the fallback


@pytest.fixture(scope="module", params=HTTP_IMPLS)
def base_url(request):
    with serve_in_thread(create_app(EngineConfig(stream_interval=20)), http=request.param) as url:
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
@pytest.mark.parametrize("seed", ["abc", "7.5", "", "9" * 500])
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


def _head_deadline_passes(sock: socket.socket) -> None:
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    try:
        leftover = _read_until_closed(sock)
    except TimeoutError:
        pytest.fail("the server kept a half-sent request head open for 10 s")
    assert leftover == b""


@pytest.mark.parametrize("http", HTTP_IMPLS)
def test_a_connection_that_never_finishes_its_headers_is_closed(http):
    app = create_app(EngineConfig(stream_interval=20), limits=ServerLimits(header_timeout=0.5))
    with serve_in_thread(app, http=http) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            _head_deadline_passes(sock)
        # Complete requests on a kept-alive connection are unaffected.
        with httpx.Client(base_url=url) as client:
            assert client.get("/health").status_code == 200
            assert client.get("/health").status_code == 200


@pytest.mark.parametrize("http", HTTP_IMPLS)
def test_the_head_deadline_is_armed_again_after_each_response(http):
    app = create_app(EngineConfig(stream_interval=20), limits=ServerLimits(header_timeout=0.5))
    with serve_in_thread(app, http=http) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += sock.recv(4096)
            head, body = answer.split(b"\r\n\r\n", 1)
            assert head.startswith(b"HTTP/1.1 200")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            while len(body) < length:
                body += sock.recv(4096)
            _head_deadline_passes(sock)


@pytest.mark.parametrize("http", HTTP_IMPLS)
@pytest.mark.parametrize("pieces", [1, 16])
def test_an_endless_request_head_is_cut_at_the_header_bound(http, pieces):
    app = create_app(EngineConfig(stream_interval=20), limits=ServerLimits(max_header_bytes=4096))
    with serve_in_thread(app, http=http) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ")
            try:
                for _ in range(pieces):
                    sock.sendall(b"y" * (8192 // pieces))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered and closed before the last piece
            try:
                answer = _read_until_closed(sock)
            except TimeoutError:
                pytest.fail("the server buffered an 8 KiB incomplete head and kept waiting")
            except ConnectionResetError:
                # The server answered 400 and closed while pieces were still arriving: the
                # kernel's reset can discard the answer before it is read (seen under load).
                assert pieces > 1
                return
        assert answer.startswith(b"HTTP/1.1 400")


def test_auto_picks_httptools_when_installed_and_h11_otherwise(monkeypatch):
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from trtllm_stream_fix.sim import http_server

    assert issubclass(http_server.limited_protocol(1.0), HttpToolsProtocol)
    monkeypatch.setattr(http_server, "httptools_available", lambda: False)
    fallback = http_server.limited_protocol(1.0)
    assert issubclass(fallback, H11Protocol) and fallback.head_timeout == 1.0
    with pytest.raises(ValueError, match="unknown HTTP implementation"):
        http_server.limited_protocol(1.0, "h2")  # type: ignore[arg-type]


# -- integers, strings, metadata, conversation state -------------------------------------

_CHAT = "/v1/chat/completions"


def _post_raw(url: str, path: str, raw: bytes) -> httpx.Response:
    return httpx.post(
        f"{url}{path}", content=raw, headers={"content-type": "application/json"}, timeout=30
    )


@pytest.mark.parametrize(
    ("path", "param", "value"),
    [
        ("/v1/responses", "max_output_tokens", 99999999999999999999),
        ("/v1/responses", "max_output_tokens", 2**63),
        ("/v1/responses", "top_logprobs", 2**70),
        ("/v1/responses", "top_logprobs", 21),
        ("/v1/responses", "max_tool_calls", 2**64),
        ("/v1/responses", "seed", 2**64),
        (_CHAT, "max_tokens", 99999999999999999999),
        (_CHAT, "max_completion_tokens", 2**64),
        (_CHAT, "seed", -(2**64)),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_an_integer_out_of_range_is_a_400_naming_it(base_url, path, param, value, stream):
    body: dict[str, Any] = {"model": MODEL, "stream": stream, param: value}
    body |= {"input": "hi"} if path != _CHAT else {"messages": [{"role": "user", "content": "hi"}]}
    error = _assert_openai_error(_post_raw(base_url, path, json.dumps(body).encode()), 400)
    assert error["param"] == param, error
    assert error["code"] == "invalid_value", error


def test_an_integer_beyond_64_bits_anywhere_is_a_400_with_its_path(base_url):
    body = {"model": MODEL, "input": "hi", "prompt": {"id": "p", "variables": {"n": 2**80}}}
    error = _assert_openai_error(_post(base_url, body), 400)
    assert error["param"] == "prompt.variables.n", error


def test_model_to_json_never_turns_integers_into_floats():
    from trtllm_stream_fix.core.response import response_envelope
    from trtllm_stream_fix.core.sse import model_to_json
    from trtllm_stream_fix.defaults import new_context

    context = new_context(created_at=1796122733, clock=lambda: 1796122734, max_output_tokens=2**70)
    response = response_envelope(context, [], [], status="completed")
    decoded = json.loads(model_to_json(response))
    assert decoded["created_at"] == 1796122733 and isinstance(decoded["created_at"], int)
    assert decoded["completed_at"] == 1796122734 and isinstance(decoded["completed_at"], int)
    assert decoded["max_output_tokens"] == 2**70
    response.instructions = "lone \ud800 surrogate"  # never sent: still valid JSON text
    assert json.loads(model_to_json(response))["instructions"] == "lone \ud800 surrogate"


_LONE = "@lone@"  # replaced by a lone surrogate's JSON escape in the request text
_HI = [{"role": "user", "content": "hi"}]


def _surrogate_cases() -> list[tuple[str, str, str]]:
    """``(endpoint, JSON body with a lone surrogate escape, param)``."""
    fn = {"type": "function", "name": "f"}
    deep = {"type": "object", "properties": {"a": {"description": _LONE}}}
    part = {"type": "input_text", "text": _LONE}
    responses = [
        ({"input": _LONE}, "input"),
        ({"instructions": _LONE}, "instructions"),
        ({"input": [{"role": "user", "content": [part]}]}, "input[0].content[0].text"),
        ({"tools": [{**fn, "description": _LONE}]}, "tools[0].description"),
        ({"tools": [{**fn, "parameters": deep}]}, "tools[0].parameters.properties.a.description"),
        ({"tools": [{**fn, "name": _LONE}]}, "tools[0].name"),
        ({"metadata": {"k": _LONE}}, "metadata.k"),
        ({"metadata": {_LONE: "v"}}, "metadata"),
        ({"user": _LONE}, "user"),
        ({"prompt_cache_key": _LONE}, "prompt_cache_key"),
    ]
    chat = [
        ({"messages": [{"role": "user", "content": _LONE}]}, "messages[0].content"),
        (
            {"tools": [{"type": "function", "function": {"name": "f", "description": _LONE}}]},
            "tools[0].function.description",
        ),
        ({"user": _LONE}, "user"),
    ]

    def raw(fields: dict[str, Any], base: dict[str, Any]) -> str:
        return json.dumps({"model": MODEL, **base, **fields}).replace(_LONE, "\\ud800xyz")

    return [("/v1/responses", raw(f, {"input": "hi"}), p) for f, p in responses] + [
        (_CHAT, raw(f, {"messages": _HI}), p) for f, p in chat
    ]


@pytest.mark.parametrize(("path", "raw", "param"), _surrogate_cases(), ids=lambda v: str(v)[:40])
@pytest.mark.parametrize("stream", [False, True])
def test_a_lone_surrogate_in_any_string_is_a_400_naming_it(base_url, path, raw, param, stream):
    if stream:
        raw = raw[:-1] + ', "stream": true}'
    error = _assert_openai_error(_post_raw(base_url, path, raw.encode()), 400)
    assert error["param"] == param, error
    assert error["code"] == "invalid_value", error
    assert "surrogate" in error["message"] and "codec" not in error["message"], error


def test_a_nul_character_is_text_and_served_on_both_endpoints(base_url):
    # OpenAI serves a JSON-escaped NUL (no public record shows a 400 for one; the 400s
    # reported for control characters were SDKs sending invalid JSON: docs/simulated-server.md).
    responses = {"model": MODEL, "input": [{"role": "user", "content": "a\u0000b"}]}
    responses["instructions"] = "x\u0000y"
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "a\u0000b"}]}

    async def run():
        async with httpx.AsyncClient(timeout=10) as client:
            return await asyncio.gather(
                stream_responses(
                    client, f"{base_url}/v1/responses", responses, idle_timeout=5, deadline=20
                ),
                stream_chat(client, f"{base_url}{_CHAT}", chat, idle_timeout=5, deadline=20),
            )

    for record in asyncio.run(run()):
        assert record.ok, (record.outcome, record.violations)
    answer = httpx.post(f"{base_url}/v1/responses", json=responses, timeout=10)
    assert answer.status_code == 200 and answer.json()["instructions"] == "x\u0000y"
    assert httpx.post(f"{base_url}{_CHAT}", json=chat, timeout=10).status_code == 200
    sdk = openai.OpenAI(base_url=f"{base_url}/v1", api_key="x", max_retries=0)
    with sdk.responses.stream(**responses) as stream:
        final = stream.get_final_response()
    assert final.status == "completed" and final.instructions == "x\u0000y"
    # An unescaped NUL is not JSON (RFC 8259 section 7): OpenAI's answer is its
    # "could not parse the JSON body" 400 with param null, ours a 400 invalid_json.
    raw = json.dumps(chat).replace("\\u0000", "\x00").encode()
    error = _assert_openai_error(_post_raw(base_url, _CHAT, raw), 400)
    assert error["param"] is None and error["code"] == "invalid_json", error


@pytest.mark.parametrize(
    ("metadata", "param", "code"),
    [
        ({f"k{i}": "v" for i in range(17)}, "metadata", "object_above_max_properties"),
        ({"k" * 65: "v"}, "metadata", "string_above_max_length"),
        ({"k": "v" * 513}, "metadata.k", "string_above_max_length"),
    ],
)
@pytest.mark.parametrize("path", ["/v1/responses", _CHAT])
def test_metadata_beyond_openai_bounds_is_a_400(base_url, metadata, param, code, path):
    body: dict[str, Any] = {"model": MODEL, "metadata": metadata}
    body |= {"input": "hi"} if path != _CHAT else {"messages": [{"role": "user", "content": "hi"}]}
    error = _assert_openai_error(_post_raw(base_url, path, json.dumps(body).encode()), 400)
    assert (error["param"], error["code"]) == (param, code), error


def test_metadata_at_openai_bounds_is_served(base_url):
    metadata = {f"{i:02d}" + "k" * 62: "v" * 512 for i in range(16)}
    assert _post(base_url, {"model": MODEL, "input": "hi", "metadata": metadata}).status_code == 200


@pytest.mark.parametrize("stream", [False, True])
def test_an_unknown_previous_response_id_is_openais_400(base_url, stream):
    body = {"model": MODEL, "input": "hi", "previous_response_id": "resp_nope", "stream": stream}
    error = _assert_openai_error(_post(base_url, body), 400)
    assert error == {
        "message": "Previous response with id 'resp_nope' not found.",
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": "previous_response_not_found",
    }


def _response_id(url: str, body: dict[str, Any]) -> str:
    if not body.get("stream"):
        response = _post(url, body)
        assert response.status_code == 200, response.text
        return response.json()["id"]
    with httpx.stream("POST", f"{url}/v1/responses", json=body, timeout=30) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: ") and '"response.completed"' in line:
                return json.loads(line[6:])["response"]["id"]
    raise AssertionError("no response.completed")


@pytest.mark.parametrize("stream", [False, True])
def test_a_stored_response_continues_and_an_unstored_one_is_not_found(base_url, stream):
    first = _response_id(base_url, {"model": MODEL, "input": "hi", "stream": stream})
    follow = {"model": MODEL, "input": "and then?", "previous_response_id": first}
    assert _post(base_url, follow).status_code == 200
    unstored = _response_id(base_url, {"model": MODEL, "input": "hi", "store": False})
    error = _assert_openai_error(_post(base_url, {**follow, "previous_response_id": unstored}), 400)
    assert error["code"] == "previous_response_not_found"


TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}


def test_a_function_call_output_without_its_call_is_openais_400(base_url):
    body = {
        "model": MODEL,
        "input": [{"type": "function_call_output", "call_id": "nope", "output": "x"}],
    }
    error = _assert_openai_error(_post(base_url, body), 400)
    assert error["message"] == "No tool call found for function call output with call_id nope."
    assert error["param"] == "input"


def test_a_function_call_output_answers_a_call_of_the_previous_response(base_url):
    first = _post(
        base_url,
        {"model": MODEL, "input": "weather?", "tools": [TOOL], "tool_choice": "required"},
    ).json()
    call = next(item for item in first["output"] if item["type"] == "function_call")
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
    body = {"model": MODEL, "input": [output], "tools": [TOOL], "previous_response_id": first["id"]}
    answer = _post(base_url, body)
    assert answer.status_code == 200, answer.text
    texts = [p["text"] for i in answer.json()["output"] for p in i.get("content") or ()]
    assert any("get_weather returned sunny" in t for t in texts), texts
    # Without the previous response, the same output names no call of the conversation.
    body.pop("previous_response_id")
    assert _assert_openai_error(_post(base_url, body), 400)["param"] == "input"
