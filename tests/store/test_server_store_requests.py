# SPDX-License-Identifier: Apache-2.0
"""What a request may make of stored state on the simulated server: the input an
``item_reference`` or ``previous_response_id`` expands to counts against the limits of a
direct input (every item kind, function call arguments and outputs included), checked
before anything is generated or stored and without building the expansion past the bound;
an item the conversation already holds is OpenAI's duplicate-item 400; a stored item of a
type refused as input is refused when referenced; a trailing slash on
``/v1/responses/{id}`` is a 404, never a redirect to ``{id}``."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, ClassVar

import httpx
import pytest

from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
from trtllm_stream_fix.sim.limits import ServerLimits
from trtllm_stream_fix.store import MemoryStore
from trtllm_stream_fix.store.references import (
    DEFAULT_MAX_EXPANDED_BYTES,
    FETCH_CHUNK,
    DuplicateItem,
    ExpandedInputTooLarge,
    resolve_item_references,
)

MODEL = "gpt-oss-20b"
BIG = 270_000  # characters of a large function call's arguments (the issue's figure)


def _post(url: str, body: Any) -> httpx.Response:
    return httpx.post(f"{url}/v1/responses", json=body, timeout=60)


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text[:300]
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    return error


def _call(n: int, chars: int = BIG) -> dict[str, Any]:
    return {
        "id": f"fc_big{n}",
        "type": "function_call",
        "status": "completed",
        "call_id": f"call_big{n}",
        "name": "big",
        "arguments": json.dumps({"blob": "A" * chars}),
    }


def _put(store: MemoryStore, response_id: str, output: list, history: list | None = None):
    """A stored response holding ``output`` (its conversation: ``history`` then it), put
    straight into the store the server reads."""
    response = {"id": response_id, "object": "response", "status": "completed", "output": output}
    before = history if history is not None else [{"role": "user", "content": "hi"}]
    asyncio.run(store.put(response, [*before, *output]))


def _refs(*ids: str) -> list[dict[str, str]]:
    return [{"type": "item_reference", "id": i} for i in ids]


@pytest.fixture(scope="module")
def served():
    store = MemoryStore()
    with serve_in_thread(create_app(EngineConfig(stream_interval=20), store=store)) as url:
        yield url, store


def test_the_issues_reproduction_is_refused_at_once_and_stores_nothing(served):
    """A stored response holding a 270 KB function call, then a 21 KB request naming it 300
    times: it was answered 200 as an 80 MB input. (The record is put straight into the
    store: generating 270 KB through the simulated engine costs a minute on a loaded host;
    the slow tier's variant has the model make it.)"""
    url, store = served
    _put(store, "resp_repro", [_call(7)])
    stored = len(store)
    started = time.monotonic()
    answer = _post(url, {"model": MODEL, "input": _refs(*["fc_big7"] * 300)})
    elapsed = time.monotonic() - started
    error = _error(answer, 400)
    assert error["message"].startswith("Duplicate item found with id fc_big7.")
    assert elapsed < 2 and len(store) == stored


@pytest.mark.slow
def test_the_issues_reproduction_with_the_call_made_by_the_model(served):
    """As the issue ran it: the model makes the 270 KB call (a tool whose argument has that
    default), then 300 references to it."""
    url, store = served
    tool = {
        "type": "function",
        "name": "big",
        "parameters": {
            "type": "object",
            "properties": {"blob": {"type": "string", "default": "A" * BIG}},
            "required": ["blob"],
        },
    }
    first = httpx.post(
        f"{url}/v1/responses",
        json={"model": MODEL, "input": "call big", "tools": [tool]},
        timeout=300,
    ).json()
    call = next(item for item in first["output"] if item["type"] == "function_call")
    assert len(call["arguments"]) > BIG
    stored = len(store)
    answer = _post(url, {"model": MODEL, "input": _refs(*[call["id"]] * 300)})
    error = _error(answer, 400)
    assert error["message"].startswith(f"Duplicate item found with id {call['id']}.")
    assert len(store) == stored


@pytest.mark.parametrize("stream", [False, True])
def test_referenced_function_call_arguments_count_toward_the_character_bound(served, stream):
    url, store = served
    _put(store, "resp_two_big", [_call(1), _call(2)])  # 540 K characters, 540 KB of JSON
    stored = len(store)
    answer = _post(url, {"model": MODEL, "input": _refs("fc_big1", "fc_big2"), "stream": stream})
    error = _error(answer, 413)
    assert (error["code"], error["param"]) == ("input_too_large", "input")
    assert len(store) == stored


def test_the_expanded_input_counts_toward_the_body_bound_before_it_is_read_whole():
    """Characters and tokens unbounded here: the expansion itself stops at the body bound
    (five 270 KB items are 1.35 MB), with at most one chunk of items read."""

    class Counting(MemoryStore):
        asked: ClassVar[list[int]] = []

        async def items(self, item_ids):
            self.asked.append(len(item_ids))
            return await super().items(item_ids)

    store = Counting()
    _put(store, "resp_five_big", [_call(n) for n in range(5)])
    limits = ServerLimits(max_input_chars=10**8, max_input_tokens=10**8)
    with serve_in_thread(create_app(EngineConfig(), limits=limits, store=store)) as url:
        answer = _post(url, {"model": MODEL, "input": _refs(*(f"fc_big{n}" for n in range(5)))})
    error = _error(answer, 413)
    assert (error["code"], error["param"]) == ("input_too_large", "input")
    assert f"more than {DEFAULT_MAX_EXPANDED_BYTES} bytes" in error["message"]
    assert len(store) == 1 and store.asked == [5]


def test_expansion_stops_at_the_bound_without_reading_every_item():
    """Many distinct large items named: the resolver reads one chunk past the bound, not
    all of them (they are never all in memory at once)."""

    class Counting(MemoryStore):
        asked: ClassVar[list[int]] = []

        async def items(self, item_ids):
            self.asked.append(len(item_ids))
            return await super().items(item_ids)

    store = Counting(max_bytes=2**30)
    count = 4 * FETCH_CHUNK
    for n in range(count):
        _put(store, f"resp_{n}", [_call(n, 10_000)])
    references = _refs(*(f"fc_big{n}" for n in range(count)))
    with pytest.raises(ExpandedInputTooLarge) as caught:
        asyncio.run(resolve_item_references(store, references, max_bytes=50_000))
    assert caught.value.status == 400 and caught.value.param == "input"
    assert store.asked == [FETCH_CHUNK]
    within = asyncio.run(resolve_item_references(store, references, max_bytes=10**7))
    assert [item["id"] for item in within] == [f"fc_big{n}" for n in range(count)]
    assert store.asked == [FETCH_CHUNK] * 5


@pytest.mark.parametrize(
    "item",
    [
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "A" * 600_000},
        {"type": "function_call_output", "call_id": "c1", "output": "A" * 600_000},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "A" * 600_000}]},
    ],
    ids=["arguments", "output", "reasoning"],
)
def test_direct_input_of_every_kind_counts_toward_the_character_bound(served, item):
    url, _ = served
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    items = [item] if item["type"] != "function_call_output" else [call, item]
    error = _error(_post(url, {"model": MODEL, "input": items}), 413)
    assert (error["code"], error["param"]) == ("input_too_large", "input")


def test_the_stored_conversation_counts_toward_the_character_bound(served):
    url, store = served
    history = [{"role": "user", "content": "hi"}, _call(90, 300_000)]
    _put(store, "resp_long_history", [_call(91, 300_000)], history=history)
    stored = len(store)
    answer = _post(
        url, {"model": MODEL, "input": "and?", "previous_response_id": "resp_long_history"}
    )
    error = _error(answer, 413)
    assert (error["code"], error["param"]) == ("input_too_large", "input")
    assert len(store) == stored


def test_the_stored_conversation_counts_toward_the_token_bound():
    store = MemoryStore()
    wordy = {**_call(1), "arguments": json.dumps({"text": "the river runs " * 200})}
    _put(store, "resp_wordy", [wordy])
    limits = ServerLimits(max_input_tokens=200)
    with serve_in_thread(create_app(EngineConfig(), limits=limits, store=store)) as url:
        short = _post(url, {"model": MODEL, "input": "and?", "store": False})
        assert short.status_code == 200, short.text
        for body in (
            {"input": "and?", "previous_response_id": "resp_wordy"},
            {"input": _refs("fc_big1")},
        ):
            error = _error(_post(url, {"model": MODEL, **body}), 400)
            assert (error["code"], error["param"]) == ("context_length_exceeded", "input")


def test_an_item_of_the_previous_response_referenced_again_is_openais_duplicate_400(served):
    url, store = served
    first = _post(url, {"model": MODEL, "input": "hi"}).json()
    item = first["output"][-1]["id"]
    stored = len(store)
    for body in (
        {"input": _refs(item), "previous_response_id": first["id"]},
        {"input": [*_refs(item), {"role": "user", "content": "again"}, *_refs(item)]},
    ):
        error = _error(_post(url, {"model": MODEL, **body}), 400)
        assert error["message"] == (
            f"Duplicate item found with id {item}. Remove duplicate items from your input "
            "and try again."
        )
        assert (error["param"], error["code"]) == ("input", None)
    assert len(store) == stored
    with pytest.raises(DuplicateItem):
        asyncio.run(resolve_item_references(store, _refs(item), known_ids={item}))


def test_a_referenced_item_of_a_type_refused_as_input_is_refused_the_same_way(served):
    url, store = served
    search = {
        "id": "ws_stored",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "weather in Paris"},
    }
    _put(store, "resp_web_search", [search])
    direct = _post(url, {"model": MODEL, "input": [search]})
    referenced = _post(url, {"model": MODEL, "input": _refs("ws_stored")})
    error = _error(referenced, 400)
    assert error == _error(direct, 400)
    assert error["param"] == "input[0].type"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
@pytest.mark.parametrize("suffix", ["/", "%2F", None])
def test_a_trailing_slash_is_a_404_not_a_redirect_to_the_response(served, method, suffix):
    url, _ = served
    first = _post(url, {"model": MODEL, "input": "hi"}).json()
    path = "/v1/responses/" if suffix is None else f"/v1/responses/{first['id']}{suffix}"
    answer = httpx.request(method, f"{url}{path}", timeout=10, follow_redirects=False)
    assert answer.status_code == 404, (answer.status_code, answer.headers.get("location"))
    assert answer.headers["content-type"].startswith("application/json")
    assert set(answer.json()["error"]) == {"message", "type", "param", "code"}
    assert httpx.get(f"{url}/v1/responses/{first['id']}", timeout=10).status_code == 200
