# SPDX-License-Identifier: Apache-2.0
"""Harmony Responses streaming for ``ResponsesStreamingProcessor``, token by token.

``ResponsesStreamingProcessor`` keeps one ``HarmonyResponsesStream`` per request and delegates
its Harmony path to it: every engine response's ``token_ids_diff`` goes to the
``ResponsesEventMachine`` with the finished flag and the finish reason, so the events do not
depend on how many tokens each engine response carries (``stream_interval``, accepted draft
tokens). The stream's final response reuses the streamed item ids; a streamed response is
stored like a non-streaming one (response and Harmony messages) when storage is enabled, so
``previous_response_id`` works after a streamed turn.

The stream's life is named states (``StreamState``) moved by a table (``TRANSITIONS``), as in
``core.turn``. Its other jobs have their own modules, re-exported here for the callers that
reach them through this one: storing (``storing``), the non-streaming body (``body``), usage
conversion (``usage``) and the channel of input items (``input_channels``).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from typing import Any

from openai.types.responses import Response

from ..core.config import StreamConfig
from ..core.context import ResponseContext
from ..core.events import TERMINAL_TYPES
from ..core.machine import ResponsesEventMachine
from ..core.response import ECHOED_REQUEST_FIELDS, request_echo
from ..core.sse import format_sse
from ..defaults import edge_defaults, system_clock
from .body import environment_config, harmony_output_content, harmony_output_messages
from .input_channels import PHASE_CHANNELS, item_channel, with_phase_channel
from .storing import server_response
from .storing import store as store_response
from .storing import store_soon as store_response_soon
from .upstream import UpstreamProcessor
from .usage import server_usage, with_engine_input

logger = logging.getLogger(__name__)

INITIAL_EVENTS = 2  # response.created + response.in_progress
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


class StreamState(enum.Enum):
    """Where one request's stream is, in this process's copy of it."""

    #: Nothing sent from this copy and no machine (a post-processing worker's copy starts
    #: here, and a pickled copy returns here: the machine is not pickled).
    NEW = "new"
    #: ``response.created`` and ``response.in_progress`` went out; no engine response yet.
    STARTED = "started"
    #: Engine responses go straight to the machine's ``feed`` (the per-token path).
    STREAMING = "streaming"
    #: The terminal event is decided and held for the final-response call; nothing else goes
    #: out.
    ENDED = "ended"
    #: The final response went out; the per-request state is released.
    CLOSED = "closed"


class StreamInput(enum.Enum):
    """What happens to a stream: the processor's calls and the machine's end."""

    #: ``initial_responses``: the opening pair.
    START = "start"
    #: ``process_output`` with an engine response the machine did not end on.
    OUTPUT = "output"
    #: The machine emitted the terminal event (the last engine response, or a failure).
    TERMINAL = "terminal"
    #: ``final_response``: the terminal frame and the final response.
    FINAL = "final"


_S, _I = StreamState, StreamInput
#: ``(state, input) -> next state``; an input missing for a state sends nothing and leaves
#: the state as it is (a second ``initial_responses``, anything after the final response,
#: engine responses after the terminal event).
TRANSITIONS: dict[tuple[StreamState, StreamInput], StreamState] = {
    (_S.NEW, _I.START): _S.STARTED,
    (_S.NEW, _I.OUTPUT): _S.STREAMING,
    (_S.STARTED, _I.OUTPUT): _S.STREAMING,
    (_S.STREAMING, _I.OUTPUT): _S.STREAMING,
    **{(state, _I.TERMINAL): _S.ENDED for state in (_S.NEW, _S.STARTED, _S.STREAMING)},
    **{(state, _I.FINAL): _S.CLOSED for state in StreamState if state is not _S.CLOSED},
}
#: After a pickle the copy has no machine: a started or streaming stream starts again.
_UNPICKLED = {_S.STARTED: _S.NEW, _S.STREAMING: _S.NEW}


class HarmonyResponsesStream:
    """The Harmony event machine of one streamed Responses request.

    The methods take the owning ``ResponsesStreamingProcessor`` (its request, its running
    ``sequence_number``). Every frame holds one event and a final-response call returns one
    event, the terminal one; numbering is 0, 1 for the opening pair and continues from 2 in
    whichever process builds the later events. A stream that fails early (malformed Harmony)
    sends ``error`` at once and holds ``response.failed`` for the final-response call. The
    machine holds a Rust parser and is not pickled: the copy a post-processing worker
    receives builds its own on the first engine response. Per-request state is released with
    the terminal event. Its life is ``state`` (``StreamState``), moved by ``TRANSITIONS``.

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
        self.state = StreamState.NEW
        self._machine: ResponsesEventMachine | None = None
        self._terminal: list[Any] = []  # the held terminal event (ENDED)
        self._feed = None

    #: The machine's ``feed`` in STREAMING (None in every other state): ``process_output``'s
    #: path for every engine response but the last.
    _feed: Callable[..., list[Any]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_machine"] = state["_feed"] = None
        state["state"] = _UNPICKLED.get(self.state, self.state)
        return state

    def _move(self, event: StreamInput) -> None:
        self.state = TRANSITIONS[self.state, event]

    def initial_responses(self, processor: UpstreamProcessor) -> list[str]:
        """``response.created`` and ``response.in_progress`` as SSE frames (once)."""
        if (self.state, StreamInput.START) not in TRANSITIONS:
            return []
        processor.sequence_number = 0
        events = self._start(processor)
        processor.sequence_number += len(events)
        self._move(StreamInput.START)
        return self._frames(events)

    def process_output(self, processor: UpstreamProcessor, res: Any) -> list[str]:
        """The SSE frames for one engine response (the terminal event is held back)."""
        feed = self._feed
        if feed is None or res._done:
            return self._process_first_or_last(processor, res)
        # STREAMING, and not the last engine response (stream_interval 1: one per token).
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
        if (self.state, StreamInput.OUTPUT) not in TRANSITIONS:
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
        self._move(StreamInput.OUTPUT)
        self._feed = machine.feed
        return self._frames(events)

    def _hold_terminal(self, events: list[Any]) -> list[str]:
        """Frames for ``events`` up to the terminal one, which waits for the final call."""
        cut = next((i for i, e in enumerate(events) if e.type in TERMINAL_TYPES), len(events))
        events, self._terminal = events[:cut], events[cut:]
        self._move(StreamInput.TERMINAL)
        self._feed = None
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
        if (self.state, StreamInput.FINAL) not in TRANSITIONS:
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
        self._move(StreamInput.FINAL)
        self._machine, self._terminal, self._feed = None, [], None
        return frame, response

    async def store(
        self, processor: UpstreamProcessor, response: Response | None, final_res: Any
    ) -> None:
        """Store a streamed response and its Harmony messages as a non-streaming one is."""
        await store_response(
            processor, response, final_res, self._response_model, self._parse_messages
        )

    def store_soon(
        self, processor: UpstreamProcessor, response: Response | None, final_res: Any
    ) -> None:
        """``store`` from a synchronous caller on the event loop (the streaming loop's)."""
        store_response_soon(
            processor, response, final_res, self._response_model, self._parse_messages
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


__all__ = [
    "INITIAL_EVENTS",
    "PHASE_CHANNELS",
    "TRANSITIONS",
    "HarmonyResponsesStream",
    "StreamInput",
    "StreamState",
    "environment_config",
    "harmony_output_content",
    "harmony_output_messages",
    "item_channel",
    "request_context",
    "server_response",
    "server_usage",
    "with_engine_input",
    "with_phase_channel",
]
