# SPDX-License-Identifier: Apache-2.0
"""Upstream's ``ConversationHistoryStore`` interface over :mod:`trtllm_stream_fix.store`.

Upstream keeps 16 responses and 32 conversations per process (least recently used), so
under load ``previous_response_id`` and ``GET /v1/responses/{id}`` answer 404 for turns a
client just made, and replicas never see each other's responses. This class keeps upstream's
methods and signatures (unknown keywords accepted) and stores through ``open_store()``:
``TRTLLM_STREAM_FIX_STORE`` unset, the in-process store (10,000 records, 256 MiB); set to
``redis://HOST:PORT/DB``, Redis, shared by every replica.

A record is the response as upstream dumps it and the conversation up to it (Harmony
``Message`` objects as their dicts, chat messages as they are). The messages a request
stores before its response exists (``store_messages``) wait in this process, bounded, until
``store_response`` writes the record. A store that fails raises
:class:`~trtllm_stream_fix.store.StoreError`; upstream's POST handler turns that into its
error response, the ``store-errors`` patch answers it on the other routes
(``store_errors.py``; see docs/operators.md).

No recorded upstream line resolves ``item_reference`` input items. :func:`request_preprocess`
wraps upstream's ``request_preprocess`` (which turns the request's input into the prompt):
each reference is replaced by the stored output item it names before upstream reads the
input; an unknown id raises
:class:`~trtllm_stream_fix.store.UnknownItemReference`, which upstream's handler
answers as a 400 with OpenAI's message. So do an input that expands past
:data:`~trtllm_stream_fix.store.references.DEFAULT_MAX_EXPANDED_BYTES` of JSON
(``ExpandedInputTooLarge``: a small request naming large stored items; upstream has no bound
of its own) and an item id the previous response's output already holds, or twice in the
input (``DuplicateItem``, OpenAI's duplicate-item 400).
"""

from __future__ import annotations

import importlib
import inspect
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..store import ResponseStore, open_store
from ..store.references import DEFAULT_MAX_EXPANDED_BYTES, resolve_item_references
from .marker import is_ours, mark
from .upstream_names import OPENAI_SERVER, RESPONSES_UTILS

PENDING_LIMIT = 10_000  # conversations of requests still generating, per process
_HARMONY = "harmony"
_CHAT = "chat"


def _encode(messages: Sequence[Any]) -> list[dict[str, Any]]:
    out = []
    for msg in messages:
        if isinstance(msg, Mapping):
            out.append({_CHAT: dict(msg)})
        else:  # an openai_harmony Message
            out.append({_HARMONY: msg.to_dict()})
    return out


def _decode(stored: Sequence[Mapping[str, Any]]) -> list[Any]:
    if any(_HARMONY in m for m in stored):
        from openai_harmony import Message
    return [Message.from_dict(m[_HARMONY]) if _HARMONY in m else m[_CHAT] for m in stored]


def _stored_response_model() -> Any:
    """The ResponsesResponse class upstream's responses_utils uses now (maybe patched)."""
    return importlib.import_module(RESPONSES_UTILS).ResponsesResponse


def _validate(stored: Mapping[str, Any]) -> Any:
    """The stored dump as the model again. A model that forbids extras (upstream's) is given
    only the keys it declares; the response model's serializer then writes the others as
    they were stored (the SDK's newer optional fields, say). One that allows extras gets them
    back as they were dumped."""
    model = _stored_response_model()
    if model.model_config.get("extra") == "allow":  # extras were dumped as such: keep them
        return model.model_validate(dict(stored))
    names = {f.alias or n for n, f in model.model_fields.items()} | set(model.model_fields)
    response = model.model_validate({k: v for k, v in stored.items() if k in names})
    if "_fix_fields" in getattr(model, "__private_attributes__", {}):
        response._fix_fields = dict(stored)  # serialized as it was first sent
    return response


class StoredConversationHistoryStore:
    """``ConversationHistoryStore`` backed by a :class:`ResponseStore` (see module doc)."""

    def __init__(
        self,
        resp_capacity: int = 16,
        max_conversations: int = 32,
        store: ResponseStore | None = None,
        **_: Any,
    ) -> None:
        # upstream's capacities are not used: the store's own bounds apply
        self.response_capacity = resp_capacity
        self.max_conversations = max_conversations
        self.store = store or open_store()
        self._pending: OrderedDict[str, list[Any]] = OrderedDict()

    async def load_response(self, resp_id: str, **_: Any) -> Any:
        stored = await self.store.get(resp_id)
        return None if stored is None else _validate(stored)

    async def store_response(
        self,
        resp: Any,
        resp_msgs: Sequence[Any] | None = None,
        prev_resp_id: str | None = None,
        **_: Any,
    ) -> None:
        before = self._pending.pop(resp.id, None)
        if before is None:
            before = await self.get_conversation_history(prev_resp_id) if prev_resp_id else []
        messages = [*before, *(resp_msgs or ())]
        await self.store.put(resp.model_dump(mode="json"), _encode(messages))

    async def pop_response(self, resp_id: str | None = None, **_: Any) -> bool:
        if resp_id is None:  # upstream pops its oldest response: no such order here
            return False
        self._pending.pop(resp_id, None)
        return await self.store.delete(resp_id)

    async def store_messages(
        self, resp_id: str, msgs: Sequence[Any], prev_resp_id: str | None = None, **_: Any
    ) -> None:
        """``msgs`` is the whole conversation up to the request (upstream's contract)."""
        self._pending[resp_id] = list(msgs)
        self._pending.move_to_end(resp_id)
        while len(self._pending) > PENDING_LIMIT:
            self._pending.popitem(last=False)

    async def get_conversation_history(self, resp_id: str, **_: Any) -> list[Any]:
        if resp_id in self._pending:
            return list(self._pending[resp_id])
        stored = await self.store.history(resp_id)
        return _decode(stored) if stored else []


async def resolve_request_items(
    request: Any,
    conversation_store: Any,
    prev_response: Any = None,
    *,
    max_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
) -> None:
    """Replace the ``item_reference`` items of ``request.input`` by the output items the
    plugin's store holds, through the request model's own input validation (as if the client
    had sent the items), within ``max_bytes`` of expanded input; an id of
    ``prev_response``'s output is a duplicate. Nothing happens with another store."""
    if not isinstance(conversation_store, StoredConversationHistoryStore):
        return
    resolved = await resolve_item_references(
        conversation_store.store,
        request.input,
        max_bytes=max_bytes,
        known_ids=_output_ids(prev_response),
    )
    if resolved is request.input:
        return
    validator = getattr(type(request), "__pydantic_validator__", None)
    if validator is None:
        request.input = resolved
    else:
        validator.validate_assignment(request, "input", resolved)


def _output_ids(response: Any) -> set[str]:
    """The ids of ``response``'s output items (a model or its dump; none for None)."""
    output = response.get("output") if isinstance(response, Mapping) else None
    if output is None:
        output = getattr(response, "output", None) or ()
    ids = (i.get("id") if isinstance(i, Mapping) else getattr(i, "id", None) for i in output)
    return {i for i in ids if isinstance(i, str) and i}


def request_preprocess(original: Callable[..., Any]) -> Callable[..., Any]:
    """Upstream's ``request_preprocess`` after :func:`resolve_request_items` (same
    parameters, bound by name)."""
    signature = inspect.signature(original)

    async def request_preprocess(*args: Any, **kwargs: Any) -> Any:
        call = signature.bind(*args, **kwargs).arguments
        await resolve_request_items(
            call["request"], call["conversation_store"], call.get("prev_response")
        )
        return await original(*args, **kwargs)

    return mark(request_preprocess, original)


_PROBE_RESPONSE = {
    "id": "resp_trtllm_stream_fix_probe",
    "object": "response",
    "created_at": 0,
    "model": "probe",
    "status": "completed",
    "output": [
        {
            "id": "msg_trtllm_stream_fix_probe",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hello", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    # required by upstream's ResponsesResponse
    "temperature": 1.0,
    "top_p": 1.0,
    "background": False,
    "service_tier": "auto",
    "top_logprobs": 0,
    "truncation": "disabled",
}


async def check_round_trip() -> dict[str, Any]:
    """The self-test's probe: openai_server's binding stores, continues, loads and deletes
    one two-turn conversation through the configured store; an ``item_reference`` to its
    output item resolves; openai_server's app answers a store failure (the import hook
    installs once openai_server has loaded: so does the probe)."""
    from ..store import StoreError
    from .installer import install
    from .store_errors import store_error_response

    server = importlib.import_module(OPENAI_SERVER)
    install(mode="on")
    store = server.ConversationHistoryStore()
    name = getattr(getattr(store, "store", None), "name", type(store).__name__)
    checks = [
        (
            "openai_server binds the plugin's store",
            isinstance(store, StoredConversationHistoryStore),
        ),
        (
            "openai_server resolves item references",
            is_ours(server.responses_api_request_preprocess),
        ),
    ]
    if "FastAPI" in vars(server):  # a server module without an app has nothing to answer
        handlers = server.FastAPI().exception_handlers
        checks.append(
            (
                "openai_server's app answers store failures",
                handlers.get(StoreError) is store_error_response,
            )
        )
    if checks[0][1]:
        try:
            resp = _stored_response_model().model_validate(_PROBE_RESPONSE)
            user = {"role": "user", "content": "hi"}
            answer = {"role": "assistant", "content": "hello"}
            await store.store_messages(resp.id, [user], None)
            await store.store_response(resp, [answer], None)
            loaded = await store.load_response(resp.id)
            checks.append(
                ("response loaded as stored", loaded is not None and loaded.id == resp.id)
            )
            history = await store.get_conversation_history(resp.id)
            checks.append(("conversation kept", history == [user, answer]))
            item = _PROBE_RESPONSE["output"][0]  # type: ignore[index]
            request = _ProbeRequest([{"type": "item_reference", "id": item["id"]}])
            await resolve_request_items(request, store)
            resolved = request.input[0]
            checks.append(("item reference resolved", resolved.get("id") == item["id"]))
            checks.append(("deleted", await store.pop_response(resp.id)))
            checks.append(("gone after delete", await store.load_response(resp.id) is None))
        except Exception as exc:  # the probe reports, never raises
            checks.append((f"store raised {type(exc).__name__}: {exc}", False))
    examples = [what for what, ok in checks if not ok]
    passed = len(checks) - len(examples)
    return {"store": name, "checks": len(checks), "passed": passed, "examples": examples}


class _ProbeRequest:
    """A request with only an input (no model: the input is set as resolved)."""

    def __init__(self, request_input: list[Any]) -> None:
        self.input = request_input
