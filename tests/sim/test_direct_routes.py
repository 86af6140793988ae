# SPDX-License-Identifier: Apache-2.0
"""Direct routes: served ahead of FastAPI's middleware, errors answered by its handlers."""

from __future__ import annotations

import pytest
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException
from starlette.testclient import TestClient

from trtllm_stream_fix.sim import EngineConfig, create_app
from trtllm_stream_fix.sim.direct_routes import DirectRoutesApp

pytestmark = pytest.mark.cpu_only


def _app(seen: list[str]) -> DirectRoutesApp:
    app = DirectRoutesApp()

    @app.middleware("http")
    async def record(request, call_next):
        seen.append(request.url.path)
        return await call_next(request)

    @app.exception_handler(HTTPException)
    async def http_error(request, exc):
        return JSONResponse({"error": "http", "status": exc.status_code}, exc.status_code)

    @app.exception_handler(Exception)
    async def internal(request, exc):
        return JSONResponse({"error": "internal"}, 500)

    async def echo(request):
        body = await request.body()
        if body == b"boom":
            raise RuntimeError("boom")
        if body == b"teapot":
            raise HTTPException(418)
        return PlainTextResponse(body.decode())

    @app.get("/health")
    async def health():
        return {"ok": True}

    app.add_direct_route("/echo", echo)
    return app


def test_a_direct_route_skips_the_middleware_other_routes_take_it():
    seen: list[str] = []
    with TestClient(_app(seen)) as client:
        assert client.post("/echo", content=b"hi").text == "hi"
        assert client.get("/health").json() == {"ok": True}
    assert seen == ["/health"]


def test_an_escaping_exception_is_answered_by_the_apps_handler_for_its_type():
    with TestClient(_app([]), raise_server_exceptions=False) as client:
        failed = client.post("/echo", content=b"boom")
        assert (failed.status_code, failed.json()) == (500, {"error": "internal"})
        teapot = client.post("/echo", content=b"teapot")
        assert (teapot.status_code, teapot.json()) == (418, {"error": "http", "status": 418})


def test_other_methods_on_a_direct_path_take_the_usual_stack():
    seen: list[str] = []
    with TestClient(_app(seen)) as client:
        answer = client.get("/echo")
    assert answer.status_code == 405 and answer.json() == {"error": "http", "status": 405}
    assert seen == ["/echo"]


def test_the_simulated_server_serves_responses_directly():
    app = create_app(EngineConfig(stream_interval=20))
    assert isinstance(app, DirectRoutesApp)
    assert ("POST", "/v1/responses") in app._direct
    with TestClient(app) as client:
        answer = client.post("/v1/responses", json={"model": "gpt-oss-20b", "input": "hi"})
        assert answer.status_code == 200 and answer.json()["status"] == "completed"
        wrong = client.get("/v1/responses")
        assert wrong.status_code == 405 and wrong.json()["error"]["type"]


def test_the_simulated_server_serves_chat_completions_directly():
    """The chat endpoint takes no middleware either; its streams, its own errors and the
    usual stack's 405 are answered as before."""
    from trtllm_stream_fix.checker import replay_record

    seen: list[str] = []
    app = create_app(EngineConfig(stream_interval=20))

    @app.middleware("http")
    async def record(request, call_next):
        seen.append(request.url.path)
        return await call_next(request)

    assert ("POST", "/v1/chat/completions") in app._direct
    request = {"model": "gpt-oss-20b", "messages": [{"role": "user", "content": "hi"}]}
    with TestClient(app) as client:
        answer = client.post("/v1/chat/completions", json=request)
        assert answer.status_code == 200 and answer.json()["object"] == "chat.completion"
        streamed = client.post(
            "/v1/chat/completions",
            json={**request, "stream": True, "stream_options": {"include_usage": True}},
        )
        assert streamed.headers["content-type"].startswith("text/event-stream")
        record = replay_record(streamed.content, "chat")
        assert record.ok, record.violations
        bad = client.post("/v1/chat/completions", content=b"{", headers={"content-type": "x"})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_json"
        unknown = client.post("/v1/chat/completions", json={**request, "model": "nope"})
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found"
        wrong = client.get("/v1/chat/completions")
        assert wrong.status_code == 405 and wrong.json()["error"]["type"]
    assert seen == ["/v1/chat/completions"]  # only the GET took the middleware
