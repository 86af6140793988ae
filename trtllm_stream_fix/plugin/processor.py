# SPDX-License-Identifier: Apache-2.0
"""``ResponsesStreamingProcessor`` whose Harmony path is driven by ``ResponsesEventMachine``.

Importing this module imports ``tensorrt_llm.serve.responses_utils`` and subclasses the
processor class found there (upstream's, even if already rebound to this subclass). The
class is defined at module level, so an instance pickled to a PostprocWorker is rebuilt
there by importing this module: the fix travels with the object.

Per-request state (the event machine, which owns the Harmony parser) lives on the instance,
is created in whichever process runs the first ``process_single_output`` and is released
with the terminal event. It is not pickled: upstream pickles the processor when the request
is submitted, before any token is processed.

Upstream's contract is kept on every version line: each frame holds exactly one event (the
egress restamps one ``sequence_number`` per frame), a final-response call returns exactly
one event (the terminal one), and the numbering is 0, 1 for the opening pair and continues
from 2 in whichever process builds the later events, so it is contiguous with or without
egress restamping. A stream the plugin ends early (a Harmony parse error) sends ``error``
at once and holds ``response.failed`` for the final-response call; nothing follows it.
Streamed responses are stored like non-streaming ones (response and Harmony messages) when
storage is enabled, so ``previous_response_id`` works after a streamed turn.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, ClassVar

from tensorrt_llm.serve import responses_utils as _responses_utils

from ..core.config import StreamConfig
from ..core.context import ResponseContext
from ..core.machine import ResponsesEventMachine
from ..core.response import ECHOED_REQUEST_FIELDS, request_echo
from ..core.sse import format_sse
from ..defaults import edge_defaults
from .replacements import harmony_messages
from .targets import upstream_class

logger = logging.getLogger("trtllm_stream_fix.plugin")

TERMINAL_TYPES = frozenset(("response.completed", "response.incomplete", "response.failed"))
INITIAL_EVENTS = 2  # response.created + response.in_progress
_ECHOED = (*ECHOED_REQUEST_FIELDS, "reasoning", "text")

_UpstreamProcessor: Any = upstream_class(_responses_utils.ResponsesStreamingProcessor)


def _plain(value: Any) -> Any:
    """A JSON-ready copy of a request field (pydantic models dumped, every key kept)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class FixedResponsesStreamingProcessor(_UpstreamProcessor):
    """Drop-in processor: same constructor, same methods, correct Harmony events."""

    __trtllm_stream_fix__: ClassVar[bool] = True
    # Upstream-parity switches from TRTLLM_STREAM_FIX_PREAMBLES / _LENGTH_TERMINAL; a bad
    # value fails the patch (fatal under TRTLLM_STREAM_FIX=require).
    stream_config: ClassVar[StreamConfig] = StreamConfig.from_env(os.environ)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fix_machine: ResponsesEventMachine | None = None
        self._fix_terminal: list[Any] = []
        self._fix_closed = False
        self._fix_ended = False  # terminal event decided (held for the final-response call)
        if self.use_harmony:
            self.sequence_number = 0  # ours on every version (993c0eec starts at 2)

    # -- pickling (PostprocWorkers) -----------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_fix_machine"] = None  # holds a Rust parser; rebuilt where it is needed
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_fix_machine", None)
        self.__dict__.setdefault("_fix_terminal", [])
        self.__dict__.setdefault("_fix_closed", False)
        self.__dict__.setdefault("_fix_ended", False)

    # -- upstream interface ---------------------------------------------------------------

    def get_initial_responses(self) -> list[str]:
        if not self.use_harmony:
            return super().get_initial_responses()
        if self._fix_machine is not None or self._fix_closed:
            return []
        return [self._fix_send(event) for event in self._fix_start()]

    def process_single_output(self, res: Any) -> list[str]:
        if not self.use_harmony:
            return super().process_single_output(res)
        if self._fix_closed or self._fix_ended:
            return []  # the terminal event is decided; nothing more goes out before it
        machine = self._fix_machine_for(res)
        output = res.outputs[0]
        done = bool(res._done)
        events = machine.feed(
            list(output.token_ids_diff),
            finished=done,
            finish_reason=output.finish_reason if done else None,
        )
        if machine.finished:
            # The terminal event goes out from get_final_response*, as upstream's does (one
            # event per call); a stream failed early sends its ``error`` now.
            cut = next((i for i, e in enumerate(events) if e.type in TERMINAL_TYPES), len(events))
            events, self._fix_terminal = events[:cut], events[cut:]
            self._fix_ended = True
        return [self._fix_send(event) for event in events]

    def get_final_response_non_store(self, final_res: Any, *args: Any, **kwargs: Any) -> str:
        if not self.use_harmony:
            return super().get_final_response_non_store(final_res, *args, **kwargs)
        frame, response = self._fix_finish(final_res, _num_prompt_tokens(args, kwargs))
        if self._fix_storing(response):
            # Upstream's streaming loop calls only this (sync) method: store on the running
            # loop, before the terminal frame can reach the client.
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                logger.warning("streamed response %s not stored: no event loop", response.id)
            else:
                task = loop.create_task(self._fix_store(response, final_res))
                _PENDING_STORES.add(task)
                task.add_done_callback(_PENDING_STORES.discard)
        return frame

    async def get_final_response(self, final_res: Any, *args: Any, **kwargs: Any) -> str:
        if not self.use_harmony:
            return await super().get_final_response(final_res, *args, **kwargs)
        frame, response = self._fix_finish(final_res, _num_prompt_tokens(args, kwargs))
        if self._fix_storing(response):
            await self._fix_store(response, final_res)
        return frame

    # -- internals ------------------------------------------------------------------------

    def _fix_storing(self, response: Any) -> bool:
        return (
            response is not None
            and bool(self.enable_store)
            and bool(getattr(self.request, "store", True))
            and self.conversation_store is not None
        )

    async def _fix_store(self, response: Any, final_res: Any) -> None:
        """Store the response and its Harmony messages exactly as upstream's
        ``create_response`` does for a non-streaming request."""
        try:
            await self.conversation_store.store_response(
                resp=self._fix_upstream_response(response),
                resp_msgs=harmony_messages(list(final_res.outputs[0].token_ids)),
                prev_resp_id=getattr(self.request, "previous_response_id", None),
            )
        except Exception:
            logger.exception("streamed response %s not stored", response.id)

    def _fix_upstream_response(self, response: Any) -> Any:
        """``response`` as upstream's ``ResponsesResponse`` (what non-streaming stores)."""
        model = getattr(_responses_utils, "ResponsesResponse", None)
        if model is None or not hasattr(model, "from_request"):
            return response
        try:
            return model.from_request(
                request=self.request,
                sampling_params=self.sampling_params,
                model_name=self.model_name,
                created_time=self.response_creation_time,
                output=list(response.output),
                status=response.status,
                usage=None,
            )
        except Exception as exc:
            logger.debug("storing our Response object as is: %s", exc)
            return response

    def _fix_context(self) -> ResponseContext:
        request, sampling = self.request, self.sampling_params
        return ResponseContext(
            response_id=request.request_id,
            model=self.model_name,
            created_at=int(self.response_creation_time),
            tools=_plain(list(getattr(request, "tools", None) or [])),
            tool_choice=_plain(getattr(request, "tool_choice", "auto")),
            parallel_tool_calls=bool(getattr(request, "parallel_tool_calls", True)),
            instructions=getattr(request, "instructions", None),
            max_output_tokens=getattr(request, "max_output_tokens", None),
            temperature=getattr(sampling, "temperature", None),
            top_p=getattr(sampling, "top_p", None),
            echo=request_echo({k: _plain(getattr(request, k, None)) for k in _ECHOED}),
        )

    def _fix_start(self) -> list[Any]:
        self._fix_machine = ResponsesEventMachine(
            self._fix_context(), config=self.stream_config, **edge_defaults()
        )
        return self._fix_machine.start()

    def _fix_machine_for(self, res: Any) -> ResponsesEventMachine:
        if self._fix_machine is None:
            # A fresh copy (PostprocWorker): the frontend's copy sent the initial events.
            self._fix_start()
            self.sequence_number = max(self.sequence_number, INITIAL_EVENTS)
        machine = self._fix_machine
        assert machine is not None
        if not machine.context.num_prompt_tokens:
            machine.context.num_prompt_tokens = len(getattr(res, "prompt_token_ids", None) or ())
        return machine

    def _fix_finish(self, final_res: Any, num_prompt_tokens: int | None) -> tuple[str, Any]:
        """The terminal frame(s) and the final response; releases per-request state."""
        if self._fix_closed:
            return "", None
        machine = self._fix_machine_for(final_res)
        events = self._fix_terminal
        if not machine.finished:  # the done response was never processed here
            output = final_res.outputs[0]
            events = machine.feed([], finished=True, finish_reason=output.finish_reason)
        response = machine.final_response  # stored whatever its status, as non-streaming
        if response is not None and num_prompt_tokens is not None and response.usage:
            response.usage.input_tokens = num_prompt_tokens
            response.usage.total_tokens = num_prompt_tokens + response.usage.output_tokens
        frame = "".join(self._fix_send(event) for event in events)
        self._fix_machine, self._fix_terminal, self._fix_closed = None, [], True
        return frame, response

    def _fix_send(self, event: Any) -> str:
        """Frame ``event`` with this processor's running sequence number (as ``_send_event``)."""
        event.sequence_number = self.sequence_number
        self.sequence_number += 1
        return format_sse(event)


_PENDING_STORES: set[Any] = set()  # keeps scheduled store tasks alive until they ran


def _num_prompt_tokens(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    return args[0] if args else kwargs.get("num_prompt_tokens")
