# SPDX-License-Identifier: Apache-2.0
"""Upstream's own ``openai_server`` on CPU, over HTTP, unpatched and with the plugin.

Runs for every tree of ``TRTLLM_SOURCE_DIRS`` (``os.pathsep``-separated) or
``TRTLLM_SOURCE_DIR`` that has ``tensorrt_llm/serve/openai_server.py``; skips with the reason
otherwise (CI has no TensorRT-LLM sources). Each server is ``realstub.server`` in a fresh
interpreter: upstream's FastAPI app, its real serve modules, a fake gpt-oss engine replaying
synthetic generations as the PyExecutor delivers them, and the fix loaded by its ``.pth``
file (``--plugin on``) or not at all (``--plugin off``).

Contract: unpatched, upstream's streams fail the strict checker at ``stream_interval`` 20
and a streamed turn is not stored (a following ``previous_response_id`` gets 404); with the
plugin every stream passes the strict checker and the SDK, streamed turns are stored and the
two-turn tool conversation completes, at 0 and 2 post-processing workers, and
``trtllm-stream-fix validate`` accepts the plugin's stream and rejects upstream's; an engine
failure after the last response adds nothing after the plugin's terminal event.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trtllm_stream_fix.plugin.realstub.drive_preclass import is_pre_class

pytestmark = pytest.mark.cpu_only

SEEDS = [5, 7, 8, 13]  # empty message, analysis tool call, preamble + answer, tool call


def _trees() -> list:
    many = [p for p in os.environ.get("TRTLLM_SOURCE_DIRS", "").split(os.pathsep) if p]
    one = os.environ.get("TRTLLM_SOURCE_DIR")
    configured = many + ([one] if one and one not in many else [])
    if not configured:
        reason = "TRTLLM_SOURCE_DIR(S) not set: no TensorRT-LLM source tree to serve"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-source")]
    params = []
    for tree in configured:
        server = Path(tree) / "tensorrt_llm" / "serve" / "openai_server.py"
        marks = () if server.is_file() else pytest.mark.skip(reason=f"{tree}: no {server.name}")
        if is_pre_class(tree):  # its server streams through module functions, no processor
            marks = pytest.mark.skip(reason=f"{tree}: a pre-class tree (test_plugin_real_preclass)")
        params.append(pytest.param(tree, marks=marks, id=Path(tree).name))
    return params


@pytest.fixture(scope="module", params=_trees())
def tree(request):
    return request.param


@pytest.fixture(scope="module")
def unpatched(tree):
    from trtllm_stream_fix.plugin.realstub.serve_matrix import running_server

    with running_server(tree, plugin=False, stream_interval=20, draft_tokens=2) as url:
        yield url


@pytest.fixture(scope="module")
def patched(tree):
    from trtllm_stream_fix.plugin.realstub.serve_matrix import running_server

    with running_server(tree, plugin=True, stream_interval=20, draft_tokens=2) as url:
        yield url


def _run(url: str, seeds: list[int], store: bool = True) -> list[dict]:
    import httpx

    from trtllm_stream_fix.plugin.realstub.serve_matrix import streamed

    async def go() -> list[dict]:
        async with httpx.AsyncClient(timeout=120) as http:
            return [await streamed(http, url, seed, store) for seed in seeds]

    return asyncio.run(go())


def test_unpatched_upstream_streams_fail_and_are_not_stored(unpatched):
    runs = _run(unpatched, SEEDS)
    assert not all(r["strict"] for r in runs), [r["problem"] for r in runs]
    assert not any(r["stored"] for r in runs)


def test_plugin_streams_pass_the_strict_checker_and_sdk_and_are_stored(patched):
    runs = _run(patched, SEEDS)
    assert [r["problem"] for r in runs] == [""] * len(SEEDS)
    assert all(r["strict"] and r["sdk"] and r["stored"] for r in runs)


def test_non_streaming_with_the_plugin_is_a_valid_stored_response(patched):
    import httpx

    from trtllm_stream_fix.plugin.realstub.serve_matrix import non_streamed

    async def go() -> list[dict]:
        async with httpx.AsyncClient(timeout=120) as http:
            return [await non_streamed(http, patched, seed, True) for seed in SEEDS]

    runs = asyncio.run(go())
    assert all(r["sdk"] and r["stored"] for r in runs), [r["problem"] for r in runs]


def test_only_the_plugin_sends_complete_responses(unpatched, patched):
    """Issue 9: every event, every non-streaming body and every stored response fetched
    again carries every field of OpenAI's recorded schema, through upstream's own server."""
    import httpx

    from trtllm_stream_fix.plugin.realstub.serve_matrix import non_streamed

    async def go(url: str) -> list[dict]:
        async with httpx.AsyncClient(timeout=120) as http:
            return [await non_streamed(http, url, seed, True) for seed in SEEDS]

    fixed, theirs = asyncio.run(go(patched)), asyncio.run(go(unpatched))
    assert [r["schema"] for r in fixed] == [[]] * len(SEEDS)
    assert [r["stored_schema"] for r in fixed] == [[]] * len(SEEDS)
    assert [r["schema"] for r in _run(patched, SEEDS)] == [[]] * len(SEEDS)
    assert all(r["schema"] for r in theirs)  # upstream's model lacks OpenAI's fields
    assert all(r["schema"] for r in _run(unpatched, SEEDS))


#: Terminal-event fields a stored streamed response must repeat (GET /v1/responses/{id}).
STORED_FIELDS = ("id", "object", "created_at", "status", "output", "usage", "incomplete_details")


def test_stored_streamed_response_is_what_the_client_saw_with_usage(patched):
    """Fetched again, a streamed turn is its terminal event's response (usage not null) with
    the shape of the non-streaming response for the same tokens; the stream, the stored copy
    and the non-streaming body report the same usage (reasoning_tokens included)."""
    import httpx

    from trtllm_stream_fix.plugin.realstub.drive import set_values
    from trtllm_stream_fix.plugin.realstub.serve_matrix import MODEL, stream_response

    async def turn(http, text: str) -> tuple[dict, dict, dict]:
        body = {"model": MODEL, "input": text, "store": True}
        events = await stream_response(http, patched, {**body, "stream": True})
        terminal = events[-1]["response"]
        fetched = await http.get(f"{patched}/v1/responses/{terminal['id']}")
        assert fetched.status_code == 200, fetched.text
        plain = await http.post(f"{patched}/v1/responses", json={**body, "store": False})
        return terminal, fetched.json(), plain.json()

    async def go() -> list[tuple[dict, dict, dict]]:
        async with httpx.AsyncClient(timeout=120) as http:
            texts = ["hi, seed 8", "hi, seed 13", "scenario length_cut"]
            return [await turn(http, text) for text in texts]

    got = asyncio.run(go())
    for terminal, stored, plain in got:
        assert terminal["usage"] is not None
        # null entries aside (upstream's ResponseUsage lacks the SDK's newer optional keys)
        seen = {k: set_values(terminal[k]) for k in STORED_FIELDS}
        assert {k: set_values(stored.get(k)) for k in STORED_FIELDS} == seen
        assert set_values(plain["usage"]) == seen["usage"]
        assert stored.keys() == plain.keys()
    reasoning = [
        terminal["usage"]["output_tokens_details"]["reasoning_tokens"] for terminal, *_ in got
    ]
    assert any(reasoning), reasoning  # the count compared is not zero everywhere


def test_stored_streamed_tool_call_has_openai_key_names(patched):
    """GET /v1/responses/{id} of a streamed turn with a function call (upstream dumps it with
    ``model_dump()``, no ``by_alias``) names every item key, null ones included, as OpenAI
    does and as the terminal event did: ``async``, never the SDK's ``async_``."""
    import httpx

    from trtllm_stream_fix.differential import openai_schema
    from trtllm_stream_fix.plugin.realstub.serve_matrix import MODEL, stream_response

    async def go() -> tuple[dict, dict]:
        async with httpx.AsyncClient(timeout=120) as http:
            body = {"model": MODEL, "input": "hi, seed 13", "store": True, "stream": True}
            terminal = (await stream_response(http, patched, body))[-1]["response"]
            fetched = await http.get(f"{patched}/v1/responses/{terminal['id']}")
            assert fetched.status_code == 200, fetched.text
            return terminal, fetched.json()

    terminal, stored = asyncio.run(go())
    assert any(item["type"] == "function_call" for item in stored["output"])
    unknown = openai_schema.unknown_keys(stored, kinds="item:")
    assert unknown == [], unknown
    assert [sorted(i) for i in stored["output"]] == [sorted(i) for i in terminal["output"]]


def test_two_turn_tool_conversation_needs_the_plugin(unpatched, patched):
    from trtllm_stream_fix.plugin.realstub.serve_matrix import two_turns

    before = two_turns(unpatched)
    assert before["turn1_call"] == "get_weather"
    assert "NotFoundError" in before.get("turn2_error", ""), before  # turn 1 was not stored
    after = two_turns(patched)
    assert after["turn1_strict"] and after.get("turn2_strict"), after
    assert after["turn2_status"] == "completed" and after["turn2_text"], after


def test_chat_completions_through_the_real_harmony_path_with_the_plugin(patched):
    import httpx

    from trtllm_stream_fix.plugin.realstub.serve_matrix import chat

    async def go() -> list[dict]:
        async with httpx.AsyncClient(timeout=120) as http:
            return [await chat(http, patched, seed, s) for seed in SEEDS for s in (True, False)]

    runs = asyncio.run(go())
    assert all(r["strict"] and r["sdk"] for r in runs), [r["problem"] for r in runs]


TERMINAL = ("response.completed", "response.incomplete", "response.failed")


@pytest.mark.parametrize(
    ("scenario", "terminal"),
    [
        ("length_cut", "response.incomplete"),
        ("malformed_missing_start", "response.failed"),
        ("short_answer", "response.completed"),
    ],
)
def test_nothing_follows_the_terminal_event_when_the_engine_fails_after_it(
    patched, scenario, terminal
):
    """The engine raises once its last response is out; the server's guard (upstream's wiring
    of ``guard_responses_stream``, bound by name in ``openai_server``) must add nothing."""
    import httpx

    from trtllm_stream_fix.plugin.realstub.serve_matrix import after_terminal

    async def go() -> list:
        async with httpx.AsyncClient(timeout=120) as http:
            return await after_terminal(http, patched, scenario)

    types = asyncio.run(go())
    assert types[-1] == terminal, types
    assert sum(t in TERMINAL for t in types) == 1, types


def test_upstreams_own_request_checks_run(tree, patched):
    """The serve modules the tree has run for real: with ``responses_web_search.py`` in the
    tree a ``web_search`` tool is refused by upstream's own ``web_search_rejection_reason``
    (no provider here), whose message names ``external_web_access``; the stand-in's does not."""
    import httpx

    body = {"model": "gpt-oss-20b", "input": "hi", "tools": [{"type": "web_search"}]}
    reply = httpx.post(f"{patched}/v1/responses", json=body, timeout=60)
    assert reply.status_code == 400, reply.text
    message = reply.json()["message"]
    assert "'web_search' cannot be honoured" in message, message
    real = (Path(tree) / "tensorrt_llm" / "serve" / "responses_web_search.py").is_file()
    assert ("external_web_access" in message) == real, message


def _validate(url: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "trtllm_stream_fix.cli", "validate", "--url", url]
    command += ["--model", "gpt-oss-20b", "--input", "hi, seed 8", "--json"]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_validate_command_rejects_upstream_and_accepts_the_plugin(unpatched, patched):
    before = _validate(unpatched)
    assert before.returncode == 1, before.stdout + before.stderr
    after = _validate(patched)
    assert after.returncode == 0, after.stdout + after.stderr


@pytest.mark.parametrize("plugin", [False, True], ids=["unpatched", "plugin"])
def test_two_post_processing_workers(tree, plugin):
    from trtllm_stream_fix.plugin.realstub.serve_matrix import running_server

    with running_server(tree, plugin=plugin, stream_interval=20, workers=2) as url:
        runs = _run(url, SEEDS, store=False)
    if plugin:
        assert all(r["strict"] and r["sdk"] for r in runs), [r["problem"] for r in runs]
    else:
        assert not all(r["strict"] for r in runs)


@pytest.mark.slow
def test_matrix(tree):
    """The note's table: every plugin row passes, unpatched streaming at 20 does not."""
    from trtllm_stream_fix.plugin.realstub.serve_matrix import table

    result = table(tree, 6, draft_tokens=2)
    rows = result["rows"]
    for row in rows:
        if row["plugin"]:
            assert row["strict"] == row["sdk"] == row["identical"] == row["n"], row
            assert row["stored"] in (None, row["n"]), row
    unpatched = [r for r in rows if not r["plugin"] and r["mode"] == "streaming"]
    assert any(r["strict"] < r["n"] for r in unpatched)


def test_serve_needs_a_source_tree(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRTLLM_SOURCE_DIR"}
    command = [sys.executable, "-m", "trtllm_stream_fix.cli", "serve", "--engine"]
    for extra in ([], ["--source", str(tmp_path)]):
        result = subprocess.run(
            [*command, "trtllm-source", *extra], capture_output=True, text=True, env=env
        )
        assert result.returncode == 2
        assert "Traceback" not in result.stderr
        assert "source" in result.stderr.splitlines()[-1]


def test_align_protocol_gives_a_request_the_relayed_prompt_method():
    """993c0eec's ``request_preprocess`` calls ``request.relayed_prompt_token_ids()``, which no
    ``openai_protocol`` in the index defines: the harness adds it (the terminal line's
    ``_relayed_prompt_token_ids``), so a client request renders its prompt and an
    orchestrator's relayed int32 buffer is used as is."""
    import base64
    from types import SimpleNamespace

    import numpy as np
    import pydantic

    from trtllm_stream_fix.plugin.realstub.server import align_protocol

    class ResponsesRequest(pydantic.BaseModel):
        input: str
        prompt_token_ids: list[int] | None = None
        prompt_token_ids_b64: str | None = None
        disaggregated_params: dict | None = None
        conversation_params: dict | None = None

    protocol = SimpleNamespace(ResponsesRequest=ResponsesRequest, StartProfileRequest=object)
    assert align_protocol(protocol) == ["ResponsesRequest.relayed_prompt_token_ids()"]
    assert ResponsesRequest(input="hi").relayed_prompt_token_ids() is None
    given = ResponsesRequest(input="hi", prompt_token_ids=[1, 2])
    assert given.relayed_prompt_token_ids() == [1, 2]
    b64 = base64.b64encode(np.asarray([5, 6, 7], dtype=np.int32).tobytes()).decode("ascii")
    relayed = ResponsesRequest(input="hi", prompt_token_ids_b64=b64)
    assert relayed.relayed_prompt_token_ids() == [5, 6, 7]
    assert align_protocol(protocol) == []  # a tree whose protocol has it keeps its own
