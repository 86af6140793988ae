# SPDX-License-Identifier: Apache-2.0
"""Harmony Responses streaming for ``ResponsesStreamingProcessor``, token by token.

``ResponsesStreamingProcessor`` keeps one ``HarmonyResponsesStream`` per request and delegates
its Harmony path to it: every engine response's ``token_ids_diff`` goes to the
``ResponsesEventMachine`` with the finished flag and the finish reason, so the events do not
depend on how many tokens each engine response carries (``stream_interval``, accepted draft
tokens). The stream's final response reuses the streamed item ids; a streamed response is
stored like a non-streaming one (response and Harmony messages) when storage is enabled, so
``previous_response_id`` works after a streamed turn.

Also here: the non-streaming output built with the same message-to-item mapping as the
stream, and the Harmony channel of assistant items sent back as input.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import numbers
import os
import typing
from collections.abc import Callable, Sequence
from typing import Any

from openai.types.responses import Response
from pydantic import BaseModel, TypeAdapter

from ..core.config import StreamConfig
from ..core.context import ResponseContext
from ..core.events import TERMINAL_TYPES
from ..core.machine import ResponsesEventMachine
from ..core.nonstreaming import build_response
from ..core.response import ECHOED_REQUEST_FIELDS, request_echo
from ..core.sse import format_sse
from ..defaults import edge_defaults, new_context, system_clock
from .disaggregated import context_counts
from .upstream import UpstreamProcessor

logger = logging.getLogger(__name__)

INITIAL_EVENTS = 2  # response.created + response.in_progress
PHASE_CHANNELS = {"commentary": "commentary", "final_answer": "final"}
_ECHOED = (*ECHOED_REQUEST_FIELDS, "reasoning", "text")


def _plain(value: Any) -> Any:
    """A JSON-ready copy of a request field (pydantic models dumped by alias, every key kept)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def request_context(
    request: Any,
    sampling: Any,
    model_name: str,
    created_at: Any,
    clock: Callable[[], float] = system_clock,
) -> ResponseContext:
    """The ``ResponseContext`` of one ``ResponsesRequest`` and its sampling params.

    The streamed and the non-streaming Response both echo the request from it; ``clock``
    gives their ``completed_at``.
    """
    return ResponseContext(
        response_id=request.request_id,
        model=model_name,
        created_at=int(created_at),
        tools=_plain(list(getattr(request, "tools", None) or [])),
        tool_choice=_plain(getattr(request, "tool_choice", "auto")),
        parallel_tool_calls=bool(getattr(request, "parallel_tool_calls", True)),
        instructions=getattr(request, "instructions", None),
        max_output_tokens=getattr(request, "max_output_tokens", None),
        temperature=getattr(sampling, "temperature", None),
        top_p=getattr(sampling, "top_p", None),
        echo=request_echo({k: _plain(getattr(request, k, None)) for k in _ECHOED}),
        clock=clock,
    )


def _response_context(processor: UpstreamProcessor) -> ResponseContext:
    return request_context(
        processor.request,
        processor.sampling_params,
        processor.model_name,
        processor.response_creation_time,
    )


class HarmonyResponsesStream:
    """The Harmony event machine of one streamed Responses request.

    The methods take the owning ``ResponsesStreamingProcessor`` (its request, its running
    ``sequence_number``). Every frame holds one event and a final-response call returns one
    event, the terminal one; numbering is 0, 1 for the opening pair and continues from 2 in
    whichever process builds the later events. A stream that fails early (malformed Harmony)
    sends ``error`` at once and holds ``response.failed`` for the final-response call. The
    machine holds a Rust parser and is not pickled: the copy a post-processing worker
    receives builds its own on the first engine response. Per-request state is released with
    the terminal event.

    Args:
        parse_messages: parses output tokens into Harmony messages (conversation history).
        response_model: the server's response model (``ResponsesResponse``); a stored streamed
            response is built with its ``from_request``, as a non-streaming one is.
        config: behaviour switches, or a function (picklable) returning them, called where
            the machine is built: a post-processing worker's environment applies in the
            worker. Default: ``StreamConfig.from_env(os.environ)`` there.
    """

    def __init__(
        self,
        parse_messages: Callable[[list[int]], list[Any]],
        response_model: Any = None,
        config: StreamConfig | Callable[[], StreamConfig] | None = None,
    ) -> None:
        self._config = environment_config if config is None else config
        self._parse_messages = parse_messages
        self._response_model = response_model
        self._machine: ResponsesEventMachine | None = None
        self._terminal: list[Any] = []
        self._ended = False  # the terminal event is decided (held for the final call)
        self._closed = False
        self._feed = None

    #: The machine's ``feed`` once it has taken a first engine response here and until the
    #: terminal event: ``process_output``'s path for every engine response but the last.
    _feed: Callable[..., list[Any]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_machine"] = state["_feed"] = None
        return state

    def initial_responses(self, processor: UpstreamProcessor) -> list[str]:
        """``response.created`` and ``response.in_progress`` as SSE frames (once)."""
        if self._machine is not None or self._closed:
            return []
        processor.sequence_number = 0
        events = self._start(processor)
        processor.sequence_number += len(events)
        return self._frames(events)

    def process_output(self, processor: UpstreamProcessor, res: Any) -> list[str]:
        """The SSE frames for one engine response (the terminal event is held back)."""
        feed = self._feed
        if feed is None or res._done:
            return self._process_first_or_last(processor, res)
        # Every engine response but the first and the last (stream_interval 1: one per token).
        machine = self._machine
        assert machine is not None  # built with _feed
        machine.sequence_number = processor.sequence_number  # the machine numbers on from it
        events = feed(res.outputs[0].token_ids_diff)
        processor.sequence_number = machine.sequence_number
        if len(events) == 1:  # one delta (stream_interval 1): _frames inlined
            return [format_sse(events[0])]  # alone, never terminal: a failure is error + failed
        if not events:
            return []
        if events[-1].type in TERMINAL_TYPES:  # failed mid-stream: error + response.failed
            return self._hold_terminal(events)
        return self._frames(events)

    def _process_first_or_last(self, processor: UpstreamProcessor, res: Any) -> list[str]:
        if self._closed or self._ended:
            return []  # the terminal event is decided: nothing goes out before it
        machine = self._machine_for(processor, res)
        output = res.outputs[0]
        done = bool(res._done)
        machine.sequence_number = processor.sequence_number
        events = machine.feed(
            list(output.token_ids_diff),
            finished=done,
            finish_reason=output.finish_reason if done else None,
        )
        processor.sequence_number = machine.sequence_number
        if machine.finished:
            return self._hold_terminal(events)
        self._feed = machine.feed
        return self._frames(events)

    def _hold_terminal(self, events: list[Any]) -> list[str]:
        """Frames for ``events`` up to the terminal one, which waits for the final call."""
        cut = next((i for i, e in enumerate(events) if e.type in TERMINAL_TYPES), len(events))
        events, self._terminal = events[:cut], events[cut:]
        self._ended, self._feed = True, None
        return self._frames(events)

    @staticmethod
    def _frames(events: list[Any]) -> list[str]:
        """One SSE frame per event, as the machine numbered it.

        The machine owns the numbering: before each ``feed`` it is handed the processor's
        ``sequence_number`` and numbers on from it; the processor's count is read back after.
        """
        return [format_sse(event) for event in events]

    def final_response(
        self, processor: UpstreamProcessor, final_res: Any, num_prompt_tokens: int | None = None
    ) -> tuple[str, Response | None]:
        """The terminal SSE frame and the final response (stored whatever its status).

        Releases the per-request state.
        """
        if self._closed:
            return "", None
        machine = self._machine_for(processor, final_res)
        events = self._terminal
        if not machine.finished:  # the last engine response was not processed here
            output = final_res.outputs[0]
            machine.sequence_number = processor.sequence_number
            events = machine.feed([], finished=True, finish_reason=output.finish_reason)
            processor.sequence_number = machine.sequence_number
        response = machine.final_response
        if response is not None and response.usage:
            with_engine_input(response.usage, final_res, num_prompt_tokens)
        frame = "".join(self._frames(events))
        self._machine, self._terminal, self._closed, self._feed = None, [], True, None
        return frame, response

    async def store(
        self, processor: UpstreamProcessor, response: Response | None, final_res: Any
    ) -> None:
        """Store a streamed response and its Harmony messages as a non-streaming one is."""
        if response is None or not self._storing(processor, response):
            return
        try:
            await processor.conversation_store.store_response(
                resp=self._server_response(processor, response),
                resp_msgs=harmony_output_messages(
                    final_res.outputs[0].token_ids, self._parse_messages
                ),
                prev_resp_id=getattr(processor.request, "previous_response_id", None),
            )
        except Exception:  # storing must never break the stream
            logger.exception("streamed response %s not stored", response.id)

    def store_soon(
        self, processor: UpstreamProcessor, response: Response | None, final_res: Any
    ) -> None:
        """``store`` from a synchronous caller on the event loop (the streaming loop's)."""
        if response is None or not self._storing(processor, response):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            logger.warning("streamed response %s not stored: no event loop", response.id)
            return
        task = loop.create_task(self.store(processor, response, final_res))
        _PENDING_STORES.add(task)
        task.add_done_callback(_PENDING_STORES.discard)

    def _server_response(self, processor: UpstreamProcessor, response: Response) -> Any:
        return server_response(self._response_model, processor, response)

    @staticmethod
    def _storing(processor: UpstreamProcessor, response: Response | None) -> bool:
        return (
            response is not None
            and bool(processor.enable_store)
            and bool(getattr(processor.request, "store", True))
            and processor.conversation_store is not None
        )

    def _start(self, processor: UpstreamProcessor) -> list[Any]:
        self._machine = ResponsesEventMachine(
            _response_context(processor),
            config=self._current_config(),
            first_sequence_number=processor.sequence_number,
            **edge_defaults(),
        )
        return self._machine.start()

    def _current_config(self) -> StreamConfig:
        config = self._config
        return config if isinstance(config, StreamConfig) else config()

    def _machine_for(self, processor: UpstreamProcessor, res: Any) -> ResponsesEventMachine:
        if self._machine is None:
            # A copy in a post-processing worker: the server's copy sent the initial events.
            self._start(processor)
            processor.sequence_number = max(processor.sequence_number, INITIAL_EVENTS)
        machine = self._machine
        assert machine is not None
        if not machine.context.num_prompt_tokens:
            machine.context.num_prompt_tokens = len(getattr(res, "prompt_token_ids", None) or ())
        return machine


_PENDING_STORES: set[asyncio.Task[None]] = set()  # keeps scheduled stores alive until done


def server_response(model: Any, processor: UpstreamProcessor, response: Response) -> Any:
    """``response`` as the server's response model (what non-streaming stores).

    Built with the model's ``from_request`` from the request, sampling params, model name
    and creation time the ``processor`` holds; our ``Response`` itself when the model is
    absent or refuses it.
    """
    if model is None or not hasattr(model, "from_request"):
        return response
    try:
        return model.from_request(
            request=processor.request,
            sampling_params=processor.sampling_params,
            model_name=processor.model_name,
            created_time=processor.response_creation_time,
            output=list(response.output),
            status=response.status,
            usage=server_usage(model, response.usage),
        )
    except Exception as exc:  # storing must never break the stream
        logger.debug("storing the streamed Response as is: %s", exc)
        return response


def with_engine_input(usage: Any, final_res: Any, num_prompt_tokens: int | None) -> None:
    """Set the engine's prompt counts on the stream's ``usage``.

    The prompt tokens when given, and the prompt tokens the engine reports as cached
    (``final_res.cached_tokens``, as upstream's own usage reads it). On a disaggregated
    generation worker both come from the context worker's usage the hand-off carries (the
    outputs' ``disaggregated_params.ctx_usage``), as upstream's usage takes them.
    """
    context = context_counts(getattr(final_res, "outputs", None))
    if context is not None:
        num_prompt_tokens = context.prompt_tokens
    if num_prompt_tokens is not None:
        usage.input_tokens = num_prompt_tokens
        usage.total_tokens = num_prompt_tokens + usage.output_tokens
    if context is not None:
        usage.input_tokens_details.cached_tokens = context.cached_tokens
        return
    cached = getattr(final_res, "cached_tokens", None)
    if isinstance(cached, numbers.Integral) and int(cached) > 0:
        usage.input_tokens_details.cached_tokens = int(cached)


def server_usage(model: Any, usage: Any) -> Any:
    """``usage`` (the terminal event's) as the type of ``model``'s ``usage`` field.

    Upstream's ``from_request`` takes its own ``ResponseUsage`` (``extra="forbid"``): keys it
    does not declare are left out, so the stored usage is what its non-streaming path builds.
    """
    if usage is None:
        return None
    field = getattr(model, "model_fields", {}).get("usage")
    data = usage.model_dump(mode="json") if hasattr(usage, "model_dump") else dict(usage)
    if field is None:
        return data
    return TypeAdapter(field.annotation).validate_python(_declared(field.annotation, data))


def _declared(annotation: Any, data: Any) -> Any:
    """``data`` with only the keys the pydantic model in ``annotation`` declares, nested."""
    if not isinstance(data, dict):
        return data
    models = [a for a in (annotation, *typing.get_args(annotation)) if _is_model(a)]
    if not models:
        return data
    fields = models[0].model_fields
    return {k: _declared(fields[k].annotation, v) for k, v in data.items() if k in fields}


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def environment_config() -> StreamConfig:
    """The switches of this process's environment (``StreamConfig.from_env``)."""
    return StreamConfig.from_env(os.environ)


def harmony_output_messages(
    token_ids: Sequence[int], parse_messages: Callable[[list[int]], list[Any]]
) -> list[Any]:
    """The Harmony messages of the output tokens (conversation history); [] if unparsable."""
    try:
        return list(parse_messages(list(token_ids)))
    except Exception as exc:  # the output items say what was parsed
        logger.debug("output tokens not parsable as Harmony messages: %s", exc)
        return []


def harmony_output_content(
    token_ids: Sequence[int],
    finish_reason: str | None,
    parse_messages: Callable[[list[int]], list[Any]],
    config: StreamConfig | None = None,
) -> tuple[list[Any], list[Any]]:
    """Non-streaming output items (as the stream's final response) and the Harmony messages.

    ``parse_messages`` parses the output tokens for the conversation history; ``config``
    defaults to the environment's, as the stream's does.
    """
    token_ids = list(token_ids)
    response = build_response(
        new_context(),
        token_ids,
        finish_reason or "stop",
        config=environment_config() if config is None else config,
        **edge_defaults(),
    )
    return list(response.output), harmony_output_messages(token_ids, parse_messages)


def item_channel(input_msg: Any) -> str | None:
    """The Harmony channel an input item we streamed belongs on.

    A ``reasoning`` item is the analysis channel; an assistant ``message`` item is the
    channel of its phase (``commentary`` for a preamble, ``final`` for an answer).
    """
    item = input_msg if isinstance(input_msg, dict) else getattr(input_msg, "__dict__", {})
    kind = item.get("type", "message")
    if kind == "reasoning":
        return "analysis"
    if kind != "message" or item.get("role") != "assistant":
        return None
    return PHASE_CHANNELS.get(item.get("phase") or "")


def with_phase_channel(parse: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a Responses input parser so assistant items render on their phase's channel."""

    @functools.wraps(parse)
    def parse_with_channel(input_msg: Any, *args: Any, **kwargs: Any) -> Any:
        message = parse(input_msg, *args, **kwargs)
        channel = item_channel(input_msg)
        if message is not None and channel and getattr(message, "channel", None) is None:
            message = message.with_channel(channel)
        return message

    return parse_with_channel
