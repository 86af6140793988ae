# SPDX-License-Identifier: Apache-2.0
"""Compaction on the simulated server: ``POST /v1/responses/compact`` and the create hooks.

:class:`SimCompaction` serves the endpoint and gives ``POST /v1/responses`` its compaction
steps: :meth:`~SimCompaction.plan` (expand ``compaction`` input items, take a final
``compaction_trigger`` off, read ``context_management``), :meth:`~SimCompaction.trigger_chunks`
/ :meth:`~SimCompaction.trigger_body` (a trigger turn) and :meth:`~SimCompaction.manage` (a
turn whose rendered input passes ``compact_threshold``). The summary is written by the
simulated engine (``sim.compaction_model``), streamed as any turn's tokens.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi.responses import JSONResponse, Response

from ..compaction.blob import KEY_ENV, BlobCodec, load_key
from ..compaction.compactor import Compaction, Compactor
from ..compaction.errors import CompactionError
from ..compaction.prompt import RenderedPrompt
from ..compaction.requests import MIN_COMPACT_THRESHOLD, CompactRequest, compact_threshold
from ..compaction.stream import CompactedTurnStream, TriggerStream
from ..compaction.window import TRIGGER, Item, as_items, expand, split_trigger
from ..core.context import ResponseContext
from ..core.sse import format_sse, model_to_json
from ..defaults import random_id
from ..store import ResponseStore, StoreError, UnknownItemReference
from ..store.references import resolve_item_references
from .compaction_model import summary_output
from .conversations import Conversation, calls_of, previous_messages
from .engine import Generation, SimulatedEngine
from .errors import RequestError
from .protocol import decode_body
from .validation import validate_input

logger = logging.getLogger(__name__)
Put = Callable[[str, Conversation], Awaitable[None]]


@dataclass(frozen=True)
class CreatePlan:
    """What compaction changes about a create: its input (compaction items expanded, the
    trigger taken off), whether it is a trigger turn, and its ``compact_threshold``."""

    input: str | list[Item]
    trigger: bool
    threshold: int | None


@dataclass(frozen=True)
class Managed:
    """A turn after ``context_management``: the conversation to store, what the model
    reads, and the compaction done (None: the input stayed under the threshold)."""

    conversation: Conversation
    model_input: str | list[Item]
    compaction: Compaction | None

    def wrap(self, machine: Any) -> Any:
        """The turn's event machine, with the compaction item first when there is one."""
        if self.compaction is None:
            return machine
        return CompactedTurnStream(machine, self.compaction.item, self.compaction.usage)

    def response(self, response: Any) -> Any:
        """A non-streaming Response, with the compaction item first when there is one."""
        return self.wrap(None).response(response) if self.compaction is not None else response


def _request_error(exc: CompactionError) -> RequestError:
    type_ = "server_error" if exc.status >= 500 else "invalid_request_error"
    return RequestError(exc.status, str(exc), param=exc.param, code=exc.code, type_=type_)


class SimCompaction:
    """Compaction for one simulated server (its engine, encoding and store)."""

    def __init__(
        self,
        engine: SimulatedEngine,
        encoding: Any,
        store: ResponseStore,
        models: tuple[str, ...],
        put: Put,
        key: bytes | None = None,
        max_prompt_tokens: int | None = None,
    ) -> None:
        self.engine = engine
        self.store = store
        self.models = models
        self.put = put
        if key is None and os.environ.get(KEY_ENV, "").strip():
            key = load_key()  # a value that is not a key stops the server now
        self._key = key
        self._codec: BlobCodec | None = None
        #: A ``context_management`` entry without ``compact_threshold``: 80 % of the window.
        self.default_threshold = max(MIN_COMPACT_THRESHOLD, (max_prompt_tokens or 131_072) * 4 // 5)
        self.encoding = encoding
        self.max_prompt_tokens = max_prompt_tokens
        self._compactor: Compactor | None = None

    @property
    def codec(self) -> BlobCodec:
        """The blob codec, keyed on first use (an unset key's warning only where compaction
        is used)."""
        if self._codec is None:
            self._codec = BlobCodec(self._key if self._key is not None else load_key())
        return self._codec

    @property
    def compactor(self) -> Compactor:
        if self._compactor is None:
            self._compactor = Compactor(
                self.codec, self.encoding, self._generate, max_prompt_tokens=self.max_prompt_tokens
            )
        return self._compactor

    async def _generate(self, prompt: RenderedPrompt) -> AsyncIterator[Any]:
        output = summary_output(prompt.messages)
        async for response in self.engine.stream(Generation(output, output.seed)):
            yield response

    # -- POST /v1/responses/compact ------------------------------------------------------

    async def compact_endpoint(self, raw: bytes, max_depth: int) -> Response:
        """The answer to a ``POST /v1/responses/compact`` body."""
        try:
            body = decode_body(raw, CompactRequest, max_depth=max_depth)
            if body.model not in self.models:
                raise RequestError(
                    404, f"model {body.model!r} not found", param="model", code="model_not_found"
                )
            if body.input is None and body.previous_response_id is None:
                raise RequestError(
                    400, "nothing to compact: give input or previous_response_id", param="input"
                )
            request_input = body.input if body.input is not None else []
            validate_input(request_input)
            if not isinstance(request_input, str):
                for k, item in enumerate(request_input):
                    if item.get("type") == TRIGGER:
                        raise RequestError(
                            400,
                            "compaction_trigger is for POST /v1/responses",
                            param=f"input[{k}].type",
                        )
            items = await self.conversation_items(body.previous_response_id, request_input)
            compaction = await self._compact(body.model, items, body.instructions)
        except RequestError as exc:
            return JSONResponse(exc.body, status_code=exc.status)
        body_out = {
            "id": random_id("resp"),
            "object": "response.compaction",
            "created_at": int(time.time()),
            "output": compaction.window,
            "usage": compaction.usage.model_dump(mode="json"),
        }
        return JSONResponse(body_out)

    async def conversation_items(
        self, previous_response_id: str | None, request_input: Any
    ) -> list[Item]:
        """The stored conversation before ``previous_response_id`` and ``request_input``,
        item references resolved and compaction items expanded."""
        try:
            history = await previous_messages(self.store, previous_response_id)
            request_input = await resolve_item_references(self.store, request_input)
        except StoreError as exc:
            raise RequestError(exc.status, str(exc), type_="server_error", code=exc.code) from None
        except UnknownItemReference as exc:
            raise RequestError(exc.status, str(exc), param=exc.param) from None
        return [*self.expand_history(history), *as_items(self.expand(request_input))]

    def expand(self, request_input: Any) -> Any:
        try:
            return expand(request_input, self.codec)
        except CompactionError as exc:
            raise _request_error(exc) from None

    def expand_history(self, history: Sequence[Mapping[str, Any]]) -> list[Item]:
        try:
            return expand(history, self.codec)  # type: ignore[return-value]
        except CompactionError:
            raise RequestError(
                400,
                "the stored conversation holds a compaction item this server cannot open "
                "(its key changed)",
                param="previous_response_id",
                code="invalid_encrypted_content",
            ) from None

    async def _compact(
        self, model: str, items: Sequence[Item], instructions: str | None
    ) -> Compaction:
        try:
            return await self.compactor.compact(model, items, instructions)
        except CompactionError as exc:
            raise _request_error(exc) from None

    # -- POST /v1/responses ----------------------------------------------------------------

    def plan(self, body: Any) -> CreatePlan:
        """The compaction plan of a create request (400s naming the field)."""
        try:
            request_input, trigger = split_trigger(body.input)
            threshold = compact_threshold(
                (body.model_extra or {}).get("context_management"), self.default_threshold
            )
        except CompactionError as exc:
            raise _request_error(exc) from None
        return CreatePlan(self.expand(request_input), trigger, threshold)

    async def manage(self, body: Any, conversation: Conversation, plan: CreatePlan) -> Managed:
        """Compact first when the turn's rendered input passes ``plan.threshold``."""
        if plan.threshold is None:
            return Managed(conversation, conversation.input, None)
        items = [*self.expand_history(conversation.history), *as_items(conversation.input)]
        try:
            tokens = await self.compactor.prompt_tokens(items, body.instructions)
        except CompactionError as exc:
            raise _request_error(exc) from None
        if tokens <= plan.threshold:
            return Managed(conversation, conversation.input, None)
        compaction = await self._compact(body.model, items, body.instructions)
        kept = Conversation([], compaction.window[:-1], calls_of(compaction.window))
        model_input = expand(compaction.window, self.codec)
        return Managed(kept, model_input, compaction)

    async def trigger_items(self, conversation: Conversation) -> list[Item]:
        return [*self.expand_history(conversation.history), *as_items(conversation.input)]

    async def trigger_chunks(
        self, body: Any, context: ResponseContext, conversation: Conversation
    ) -> AsyncIterator[str]:
        """The SSE chunks of a trigger turn (stored, unless ``store: false``)."""
        stream = TriggerStream(context)
        yield "".join(format_sse(e) for e in stream.start())
        try:
            items = await self.trigger_items(conversation)
            compaction = await self.compactor.compact(body.model, items, body.instructions)
            seq = stream.seq
            events = stream.finish(compaction.item, compaction.usage)
            if body.store:
                try:
                    await self.put(model_to_json(stream.final_response), _window_turn(compaction))
                except StoreError as exc:  # nothing of the item was sent: fail without it
                    stream.seq = seq
                    events = stream.fail(str(exc), exc.code)
            yield "".join(format_sse(e) for e in events)
        except (CompactionError, RequestError, StoreError) as exc:
            code = exc.body["error"]["code"] if isinstance(exc, RequestError) else exc.code
            code = code or "server_error"
            yield "".join(format_sse(e) for e in stream.fail(str(exc), code))
        except Exception as exc:  # the stream still ends with error + response.failed
            logger.exception("compaction of response %s failed", context.response_id)
            message = f"compaction failed: {type(exc).__name__}"
            yield "".join(format_sse(e) for e in stream.fail(message, "server_error"))

    async def trigger_body(
        self, body: Any, context: ResponseContext, conversation: Conversation
    ) -> str:
        """The JSON Response of a non-streaming trigger turn."""
        items = await self.trigger_items(conversation)
        compaction = await self._compact(body.model, items, body.instructions)
        stream = TriggerStream(context)
        stream.start()
        stream.finish(compaction.item, compaction.usage)
        text = model_to_json(stream.final_response)
        if body.store:
            await self.put(text, _window_turn(compaction))
        return text


def _window_turn(compaction: Compaction) -> Conversation:
    """What a trigger turn stores: the window's user messages (its output is the item)."""
    return Conversation([], compaction.window[:-1], {})
