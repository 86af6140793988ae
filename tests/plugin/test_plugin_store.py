# SPDX-License-Identifier: Apache-2.0
"""The ``store`` patch group against the TensorRT-LLM stand-in: upstream's
``ConversationHistoryStore`` replaced by one over ``trtllm_stream_fix.store`` (install,
refuse, uninstall, doctor judging upstream's class), Harmony conversations round-tripped,
Redis shared and Redis down (GET / DELETE answered as OpenAI errors), ``item_reference``
input items resolved from the store."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "standin"))
import plugin_harness

plugin_harness.use_standin()
uninstalled = plugin_harness.uninstalled

from openai_harmony import Message, Role
from tensorrt_llm.serve import openai_server, responses_utils
from tensorrt_llm.serve.openai_protocol import ResponsesRequest

from trtllm_stream_fix.plugin import installer as install_mod
from trtllm_stream_fix.plugin import registry
from trtllm_stream_fix.plugin.conversation_store import StoredConversationHistoryStore
from trtllm_stream_fix.plugin.doctor import doctor_report
from trtllm_stream_fix.plugin.installer import install, uninstall
from trtllm_stream_fix.sim.model import named_output
from trtllm_stream_fix.store import MemoryStore, StoreError, open_store
from trtllm_stream_fix.testing.redis_server import RedisServer, missing

pytestmark = pytest.mark.cpu_only

STORE = "tensorrt_llm.serve.responses_utils.ConversationHistoryStore"


@pytest.fixture(autouse=True)
def clean(uninstalled):
    yield


def _response(resp_id: str):
    return responses_utils.ResponsesResponse.model_validate(
        {
            "id": resp_id,
            "object": "response",
            "created_at": 0,
            "model": "m",
            "status": "completed",
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )


async def _two_turns(store, first: str = "resp_1", second: str = "resp_2") -> list:
    """Upstream's call order for two turns: messages before generation, then the response."""
    user1 = Message.from_role_and_content(Role.USER, "hi")
    answer1 = Message.from_role_and_content(Role.ASSISTANT, "hello").with_channel("final")
    await store.store_messages(first, [user1], None)
    await store.store_response(_response(first), [answer1], None)
    before = await store.get_conversation_history(first)
    user2 = Message.from_role_and_content(Role.USER, "again")
    await store.store_messages(second, [*before, user2], first)
    answer2 = Message.from_role_and_content(Role.ASSISTANT, "sure").with_channel("final")
    await store.store_response(_response(second), [answer2], first)
    return [user1, answer1, user2, answer2]


def test_install_replaces_the_store_in_both_bindings_and_uninstall_restores_them():
    original = responses_utils.ConversationHistoryStore
    report = install()
    assert {o.target: o.status for o in report.outcomes}[STORE] == "patched"
    assert responses_utils.ConversationHistoryStore is StoredConversationHistoryStore
    assert openai_server.ConversationHistoryStore is StoredConversationHistoryStore
    assert install_mod.group_states()["store"] == "installed"
    uninstall()
    assert responses_utils.ConversationHistoryStore is original
    assert openai_server.ConversationHistoryStore is original


def test_a_store_of_another_shape_is_refused_and_the_rest_installs(monkeypatch, caplog):
    original = responses_utils.ConversationHistoryStore

    class Changed(original):
        async def load_response(self, resp_id, include_deleted):  # a new required parameter
            raise AssertionError("never called")

    monkeypatch.setattr(responses_utils, "ConversationHistoryStore", Changed)
    monkeypatch.setattr(openai_server, "ConversationHistoryStore", Changed)
    with caplog.at_level(logging.WARNING, logger="trtllm_stream_fix.plugin"):
        report = install()
    statuses = {o.target: o.status for o in report.outcomes}
    assert statuses.pop(STORE) == "refused"
    assert "ConversationHistoryStore.load_response" in install_mod.last_refusals()["store"]
    assert openai_server.ConversationHistoryStore is Changed
    assert install_mod.is_active() and install_mod.group_states()["responses"] == "installed"


def test_harmony_conversation_round_trips_and_delete_forgets_it():
    store = StoredConversationHistoryStore(store=MemoryStore())

    async def run():
        expected = await _two_turns(store)
        history = await store.get_conversation_history("resp_2")
        loaded = await store.load_response("resp_2")
        deleted = await store.pop_response("resp_2")
        return expected, history, loaded, deleted, await store.load_response("resp_2")

    expected, history, loaded, deleted, gone = asyncio.run(run())
    assert [m.to_dict() for m in history] == [m.to_dict() for m in expected]
    assert loaded.id == "resp_2" and deleted and gone is None


def test_more_conversations_than_upstream_keeps_are_all_continued():
    """Upstream keeps 16 responses: the 17th conversation back is forgotten there."""

    async def run(store):
        for n in range(40):
            await _two_turns(store, f"resp_a{n}", f"resp_b{n}")
        return [await store.load_response(f"resp_b{n}") is not None for n in range(40)]

    assert all(asyncio.run(run(StoredConversationHistoryStore(store=MemoryStore()))))
    upstream_like = asyncio.run(run(responses_utils.ConversationHistoryStore()))
    assert all(upstream_like)  # the stand-in keeps everything: the figure is upstream's


def test_two_servers_share_conversations_through_redis(redis_server):
    url = f"{redis_server.url}?prefix=plugin-store-test:"
    first, second = (StoredConversationHistoryStore(store=open_store(url)) for _ in range(2))

    async def run():
        await _two_turns(first, "resp_r1", "resp_r2")
        history = await second.get_conversation_history("resp_r2")
        loaded = await second.load_response("resp_r2")
        deleted = await second.pop_response("resp_r2")
        gone = await first.load_response("resp_r2")
        for s in (first, second):
            await s.store.close()
        return history, loaded, deleted, gone

    history, loaded, deleted, gone = asyncio.run(run())
    assert [m.content[0].text for m in history] == ["hi", "hello", "again", "sure"]
    assert loaded.id == "resp_r2" and deleted and gone is None


def test_redis_down_raises_a_store_error_naming_the_store():
    store = StoredConversationHistoryStore(store=open_store("redis://127.0.0.1:1/0?timeout=0.5"))

    async def run():
        try:
            await store.load_response("resp_x")
        finally:
            await store.store.close()

    with pytest.raises(StoreError, match="unavailable"):
        asyncio.run(run())


def test_env_selects_the_backend(monkeypatch):
    monkeypatch.setenv("TRTLLM_STREAM_FIX_STORE", "memory://?capacity=3")
    assert StoredConversationHistoryStore().store.capacity == 3
    monkeypatch.delenv("TRTLLM_STREAM_FIX_STORE")
    assert StoredConversationHistoryStore().store.capacity == 10_000


def test_a_response_of_the_patched_model_loads_again():
    """With the response-model group, the stored dump carries every OpenAI field (null where
    unset): loading it must not trip the model's forbidden extras."""
    install()
    store = StoredConversationHistoryStore(store=MemoryStore())

    async def run():
        await _two_turns(store)
        return await store.load_response("resp_2")

    loaded = asyncio.run(run())
    assert loaded.id == "resp_2"
    assert isinstance(loaded, responses_utils.ResponsesResponse)


@pytest.mark.parametrize("extra", ["allow", "forbid"])
def test_a_loaded_response_dumps_every_key_it_was_stored_with(extra, monkeypatch):
    """A stored dump holds keys the model does not declare (the SDK's newer optional fields,
    null): fetched again, the response dumps them as the client first received them, whether
    the model allows extras (the stand-in's) or forbids them (upstream's)."""
    from pydantic import ConfigDict

    from trtllm_stream_fix.plugin import conversation_store

    install()
    patched = responses_utils.ResponsesResponse

    class Strict(patched):  # upstream's OpenAIBaseModel forbids extras
        model_config = ConfigDict(extra=extra)

    monkeypatch.setattr(conversation_store, "_stored_response_model", lambda: Strict)
    store = StoredConversationHistoryStore(store=MemoryStore())

    async def run():
        await _two_turns(store)
        stored = await store.store.get("resp_2")
        stored = {**stored, "moderation": None, "conversation": None}
        await store.store.put(stored, await store.store.history("resp_2"))
        return stored, await store.load_response("resp_2")

    stored, loaded = asyncio.run(run())
    assert loaded.model_dump(mode="json") == stored


def test_doctor_judges_upstreams_store_not_the_installed_one(monkeypatch):
    """Once installed, the store's targets are judged by the original the installer saved:
    every one matches a recorded line (``ok``), none reads as drift of our class."""
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))  # doctor registers its hook
    install()
    report = doctor_report(spawn=False)
    store_targets = {
        t.dotted for g in ("store",) for p in registry.patches(g) for t in p.all_checks
    }
    statuses = {
        c.target.dotted: c.status for c in report.checks if c.target.dotted in store_targets
    }
    assert responses_utils.ConversationHistoryStore is StoredConversationHistoryStore
    assert len(statuses) == len(store_targets)
    assert set(statuses.values()) == {"ok"}, statuses


def _recording(output, prompts: list):
    """A stand-in engine replaying ``output`` that keeps each prompt it is given."""
    engine = plugin_harness.engine_for(output, 20)

    async def recording(prompt, sampling_params):
        prompts.append(prompt)
        async for res in engine(prompt, sampling_params):
            yield res

    return recording


def test_item_references_stand_for_the_stored_output_items():
    """Turn 2 names turn 1's stored output items by id: its prompt holds them; an id the
    store does not hold is OpenAI's message."""
    install()
    prompts: list = []
    server = openai_server.OpenAIServer(_recording(named_output("reasoning_answer"), prompts))
    question = "What is the capital of France?"

    async def run():
        first = (await server.openai_responses(ResponsesRequest(input=question))).model_dump()
        references = [{"type": "item_reference", "id": item["id"]} for item in first["output"]]
        follow_up = {"role": "user", "content": "And of Italy?"}
        second = [{"role": "user", "content": question}, *references, follow_up]
        await server.openai_responses(ResponsesRequest(input=second, store=True))
        unknown = [{"type": "item_reference", "id": "msg_nope"}]
        try:
            await server.openai_responses(ResponsesRequest(input=unknown, store=True))
        except Exception as exc:  # upstream's handler answers it as a 400 with this message
            return first, exc
        return first, None

    first, error = asyncio.run(run())
    assert [item["type"] for item in first["output"]] == ["reasoning", "message"]
    prompt = responses_utils._get_encoding().decode(prompts[1])
    # (Harmony renders no reasoning of a turn that ended with a final answer)
    assert prompt.count("The capital of France is Paris.") == 1
    assert prompt.index(question) < prompt.index("Paris.") < prompt.index("And of Italy?")
    assert type(error).__name__ == "UnknownItemReference"
    assert str(error).startswith("Item with id 'msg_nope' not found.")


def test_redis_down_get_and_delete_answer_openai_errors_and_the_turns_stay(tmp_path, monkeypatch):
    """Redis killed after a stored turn: GET and DELETE on the server's app answer 503
    ``store_unavailable`` (no traceback), the server serves ``store: false``, and once Redis
    is back (append-only file) the turn is read as it was and deleted."""
    import httpx

    reason = missing()
    if reason:
        pytest.skip(reason)
    with RedisServer(tmp_path / "redis", persistent=True) as redis_server:
        monkeypatch.setenv("TRTLLM_STREAM_FIX_STORE", f"{redis_server.url}?timeout=0.5")
        install()
        server = openai_server.OpenAIServer(
            plugin_harness.engine_for(named_output("reasoning_answer"), 20)
        )

        async def run() -> dict:
            out: dict = {}
            transport = httpx.ASGITransport(app=server.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://standin") as http:
                first = await server.openai_responses(ResponsesRequest(input="hi", store=True))
                path = f"/v1/responses/{first.id}"
                out["before"] = (await http.get(path)).json()
                redis_server.kill()
                out["down"] = [await http.get(path), await http.delete(path)]
                unstored = ResponsesRequest(input="hi", store=False)
                out["unstored"] = (await server.openai_responses(unstored)).status
                redis_server.start()
                out["after"] = (await http.get(path)).json()
                out["deleted"] = (await http.delete(path)).json()["deleted"]
                out["gone"] = (await http.get(path)).status_code
            await server.conversation_store.store.close()
            return out

        out = asyncio.run(run())
    for answer in out["down"]:
        assert answer.status_code == 503, answer.text
        error = answer.json()["error"]
        assert error["type"] == "server_error" and error["code"] == "store_unavailable"
        assert error["message"].startswith(f"response store {redis_server.url} is unavailable")
        assert error["param"] is None and "Traceback" not in answer.text
    assert out["unstored"] == "completed"
    assert out["after"] == out["before"] and out["before"]["output"]
    assert out["deleted"] is True and out["gone"] == 404


def _big_call(n: int, chars: int = 270_000) -> dict:
    return {
        "id": f"fc_big{n}",
        "type": "function_call",
        "status": "completed",
        "call_id": f"call_big{n}",
        "name": "big",
        "arguments": '{"blob": "' + "A" * chars + '"}',
    }


def test_item_references_expand_within_a_bound_and_nothing_is_generated():
    """A small request naming five stored 270 KB function calls expands past the plugin's
    bound (1 MiB of JSON): OpenAI's 400 message, raised before upstream reads the input."""
    from trtllm_stream_fix.store.references import DEFAULT_MAX_EXPANDED_BYTES

    install()
    prompts: list = []
    server = openai_server.OpenAIServer(_recording(named_output("reasoning_answer"), prompts))
    stored = {"id": "resp_big", "object": "response", "output": [_big_call(n) for n in range(5)]}
    references = [{"type": "item_reference", "id": f"fc_big{n}"} for n in range(5)]

    async def run():
        await server.conversation_store.store.put(stored, [])
        try:
            await server.openai_responses(ResponsesRequest(input=references, store=True))
        except Exception as exc:  # upstream's handler answers it as a 400 with this message
            return exc
        return None

    error = asyncio.run(run())
    assert type(error).__name__ == "ExpandedInputTooLarge", error
    assert (error.status, error.param) == (400, "input")
    assert f"more than {DEFAULT_MAX_EXPANDED_BYTES} bytes" in str(error)
    assert prompts == []


def test_an_item_of_the_previous_response_referenced_again_is_openais_duplicate_400():
    install()
    prompts: list = []
    server = openai_server.OpenAIServer(_recording(named_output("reasoning_answer"), prompts))

    async def run():
        first = await server.openai_responses(ResponsesRequest(input="hi", store=True))
        item = first.model_dump()["output"][-1]["id"]
        again = ResponsesRequest(
            input=[{"type": "item_reference", "id": item}],
            previous_response_id=first.id,
            store=True,
        )
        try:
            await server.openai_responses(again)
        except Exception as exc:
            return item, exc
        return item, None

    item, error = asyncio.run(run())
    assert type(error).__name__ == "DuplicateItem", error
    assert str(error) == (
        f"Duplicate item found with id {item}. Remove duplicate items from your input and try "
        "again."
    )
    assert len(prompts) == 1  # the first turn only


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_trailing_slash_on_the_apps_response_routes_is_a_404_not_a_redirect(method):
    """Upstream's app (FastAPI, redirect_slashes on) answered ``/v1/responses/{id}/`` with an
    empty 307 to ``/v1/responses/{id}``: a client that follows a DELETE deletes ``{id}``."""
    import httpx

    install()
    server = openai_server.OpenAIServer(
        plugin_harness.engine_for(named_output("reasoning_answer"), 20)
    )
    server.app.add_api_route("/v1/responses", lambda: {}, methods=["POST"])  # as upstream's

    async def run() -> list:
        transport = httpx.ASGITransport(app=server.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://standin") as http:
            first = await server.openai_responses(ResponsesRequest(input="hi", store=True))
            paths = (f"/v1/responses/{first.id}/", f"/v1/responses/{first.id}%2F", "/v1/responses/")
            answers = [await http.request(method, path) for path in paths]
            answers.append((await http.get(f"/v1/responses/{first.id}")).status_code)
            answers.append((await http.get("/v1/nothing/")).status_code)
            return answers

    *slashed, still_there, elsewhere = asyncio.run(run())
    for answer in slashed:
        assert answer.status_code == 404, (answer.status_code, answer.headers.get("location"))
        error = answer.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert error["type"] == "invalid_request_error"
    assert still_there == 200 and elsewhere == 404
