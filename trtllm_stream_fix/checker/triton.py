# SPDX-License-Identifier: Apache-2.0
"""Triton decoupled-streaming checker (gRPC ``ModelStreamInfer`` and HTTP ``generate_stream``).

Each request runs a small state machine, ``SENT -> RECEIVING -> FINAL_RECEIVED | FAILED``;
a request completes only on the protocol's final flag (``triton_final_response``), never on
silence. Responses are plain dicts, so the checker works from gRPC stream callbacks as well
as from SSE ``data:`` payloads; several interleaved requests are kept apart by request id.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidTransition, TritonProtocolError
from .findings import Findings, FindingsView

__all__ = [
    "InvalidTransition",
    "RequestInput",
    "RequestState",
    "TritonCheck",
    "TritonProtocolError",
    "TritonRequest",
    "TritonRequestResult",
    "TritonResponse",
    "TritonStreamChecker",
    "parse_triton_response",
]

_META_KEYS = frozenset(
    {
        "model_name",
        "model_version",
        "id",
        "parameters",
        "triton_final_response",
        "error",
        "error_message",
        "outputs",
        "raw_output_contents",
    }
)


class RequestState(enum.Enum):
    """Lifecycle of one streamed request."""

    #: Sent, nothing received yet.
    SENT = "sent"
    #: At least one non-final response received.
    RECEIVING = "receiving"
    #: The response carrying the final flag was received.
    FINAL_RECEIVED = "final_received"
    #: An error response was received.
    FAILED = "failed"


class RequestInput(enum.Enum):
    """What a response means for its request."""

    #: A response without the final flag.
    RESPONSE = "response"
    #: A response with the final flag (with or without outputs).
    FINAL = "final"
    #: An error response.
    ERROR = "error"
    #: A flag-only final response arriving after an error (tolerated, no effect).
    EMPTY_FINAL = "empty_final"


_TRANSITIONS: dict[tuple[RequestState, RequestInput], RequestState] = {
    (RequestState.SENT, RequestInput.RESPONSE): RequestState.RECEIVING,
    (RequestState.SENT, RequestInput.FINAL): RequestState.FINAL_RECEIVED,
    (RequestState.SENT, RequestInput.EMPTY_FINAL): RequestState.FINAL_RECEIVED,
    (RequestState.SENT, RequestInput.ERROR): RequestState.FAILED,
    (RequestState.RECEIVING, RequestInput.RESPONSE): RequestState.RECEIVING,
    (RequestState.RECEIVING, RequestInput.FINAL): RequestState.FINAL_RECEIVED,
    (RequestState.RECEIVING, RequestInput.EMPTY_FINAL): RequestState.FINAL_RECEIVED,
    (RequestState.RECEIVING, RequestInput.ERROR): RequestState.FAILED,
    (RequestState.FAILED, RequestInput.EMPTY_FINAL): RequestState.FAILED,
}


@dataclass(frozen=True)
class TritonResponse:
    """One response, normalised from an HTTP generate event or a gRPC stream response."""

    request_id: str | None
    final: bool
    error: str | None
    #: Output names present in the response.
    outputs: tuple[str, ...]
    text: str | None

    @property
    def empty(self) -> bool:
        """True for a response without outputs (e.g. a flag-only final response)."""
        return not self.outputs

    @property
    def input(self) -> RequestInput:
        """The state-machine input this response represents."""
        if self.error is not None:
            return RequestInput.ERROR
        if self.final:
            return RequestInput.EMPTY_FINAL if self.empty else RequestInput.FINAL
        return RequestInput.RESPONSE


def _flag(value: Any) -> bool:
    if isinstance(value, Mapping):
        value = value.get("bool_param", value.get("boolParam"))
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list) and value and all(isinstance(v, (str, bytes)) for v in value):
        return "".join(_as_text(v) or "" for v in value)
    return None


def parse_triton_response(response: Mapping[str, Any]) -> TritonResponse:
    """Normalise one response dict.

    Accepted shapes: an HTTP generate-extension event (outputs as top-level keys, e.g.
    ``text_output``; ``error`` key for in-band errors); a gRPC ``ModelInferResponse`` as a
    dict (``outputs`` list, ``parameters.triton_final_response`` as a bool or
    ``{"bool_param": bool}``); or a ``ModelStreamInferResponse`` dict with
    ``infer_response`` and ``error_message``.
    """
    error = response.get("error_message") or response.get("error")
    inner = response.get("infer_response")
    body: Mapping[str, Any] = inner if isinstance(inner, Mapping) else response
    if error is None and body is not response:
        error = body.get("error")
    params = body.get("parameters")
    params = params if isinstance(params, Mapping) else {}
    final = _flag(body.get("triton_final_response")) or _flag(params.get("triton_final_response"))
    text: str | None = None
    outputs_list = body.get("outputs")
    if isinstance(outputs_list, list):
        names = []
        for out in outputs_list:
            if not isinstance(out, Mapping):
                continue
            name = str(out.get("name"))
            names.append(name)
            if name == "text_output":
                contents = out.get("contents")
                data = contents.get("bytes_contents") if isinstance(contents, Mapping) else None
                text = _as_text(data if data is not None else out.get("data"))
        outputs = tuple(names)
    else:
        outputs = tuple(k for k in body if k not in _META_KEYS)
        text = _as_text(body.get("text_output"))
    rid = body.get("id")
    return TritonResponse(
        request_id=str(rid) if rid not in (None, "") else None,
        final=final,
        error=None
        if error in (None, "")
        else (error.get("message", str(error)) if isinstance(error, Mapping) else str(error)),
        outputs=outputs,
        text=text,
    )


class TritonRequest:
    """State machine of one request; :meth:`process` raises :class:`InvalidTransition`."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.state = RequestState.SENT
        self.responses = 0
        self.text_parts: list[str] = []
        self.error: str | None = None
        self.final_flag = False
        self.completed_by_end_of_body = False

    def process(self, response: TritonResponse) -> RequestState:
        """Apply one response; an input the current state does not accept raises."""
        new_state = _TRANSITIONS.get((self.state, response.input))
        if new_state is None:
            msg = (
                f"Invalid input {response.input.name} in state {self.state.name} for "
                f"request {self.request_id!r}"
            )
            raise InvalidTransition(msg)
        self.state = new_state
        self.responses += 1
        if response.text:
            self.text_parts.append(response.text)
        if response.error is not None:
            self.error = response.error
        if response.final:
            self.final_flag = True
        return new_state

    def end_of_body(self) -> None:
        """HTTP generate_stream: the body ended cleanly, which follows the final flag."""
        if self.state not in (RequestState.SENT, RequestState.RECEIVING):
            msg = f"Invalid end of body in state {self.state.name} for {self.request_id!r}"
            raise InvalidTransition(msg)
        self.state = RequestState.FINAL_RECEIVED
        self.completed_by_end_of_body = True

    @property
    def done(self) -> bool:
        """True in a final state."""
        return self.state in (RequestState.FINAL_RECEIVED, RequestState.FAILED)


@dataclass
class TritonRequestResult:
    """Outcome of one request."""

    request_id: str
    state: str
    responses: int
    text: str
    error: str | None
    final_flag: bool
    completed_by_end_of_body: bool


@dataclass
class TritonCheck:
    """Result of checking one Triton stream (one or several requests)."""

    violations: list[str]
    warnings: list[str]
    requests: list[TritonRequestResult]
    responses: int
    rules: list[str] = field(default_factory=list)

    @property
    def terminal(self) -> str | None:
        """``failed`` if a request failed, ``completed`` if all got their final flag."""
        states = {r.state for r in self.requests}
        if RequestState.FAILED.value in states:
            return "failed"
        if self.requests and states == {RequestState.FINAL_RECEIVED.value}:
            return "completed"
        return None

    @property
    def ok(self) -> bool:
        """No violation and every request completed."""
        return not self.violations and self.terminal == "completed"

    def has(self, rule: str) -> bool:
        """True if a violation of ``rule`` was reported."""
        return rule in self.rules


class TritonStreamChecker(FindingsView):
    """Checks a stream of responses for one or more requests.

    ``request_ids``: ids sent on the stream. Responses for other ids are violations unless
    ``accept_unknown`` (then the request is registered on first sight). A response without
    id is attributed to the only pending request; with several pending it is a violation.
    """

    def __init__(self, request_ids: Iterable[str] = (), *, accept_unknown: bool = False) -> None:
        self.requests: dict[str, TritonRequest] = {}
        #: Requests not yet final, in order (kept up to date: O(1) per response).
        self._pending: dict[str, TritonRequest] = {}
        self.accept_unknown = accept_unknown
        self._violations = Findings("violations")
        self._warnings = Findings("warnings")
        self._index = -1
        for rid in request_ids:
            self.expect(rid)

    def expect(self, request_id: str) -> TritonRequest:
        """Register a request that was sent."""
        if request_id in self.requests:
            msg = f"request id {request_id!r} is already in flight"
            raise TritonProtocolError(msg)
        req = TritonRequest(request_id)
        self.requests[request_id] = req
        self._pending[request_id] = req
        return req

    def _violate(self, rule: str, message: str) -> None:
        self._violations.add(rule, f"response {self._index}: [{rule}] {message}")

    @property
    def pending(self) -> list[str]:
        """Ids of requests not yet in a final state."""
        return list(self._pending)

    @property
    def pending_count(self) -> int:
        """How many requests are not yet in a final state."""
        return len(self._pending)

    def _pending_ids(self, shown: int = 3) -> str:
        ids = list(itertools.islice(self._pending, shown))
        more = f" and {len(self._pending) - shown} more" if len(self._pending) > shown else ""
        return f"{ids}{more}"

    def feed(self, response: Mapping[str, Any]) -> TritonResponse | None:
        """Check one response dict; returns the normalised response (None if unusable)."""
        self._index += 1
        if not isinstance(response, Mapping):
            self._violate("schema", "response is not a JSON object")
            return None
        parsed = parse_triton_response(response)
        rid = parsed.request_id
        if rid is None:
            if len(self._pending) == 1:
                rid = next(iter(self._pending))
            elif len(self.requests) == 1:
                rid = next(iter(self.requests))
            else:
                self._violate("request-id", f"response without id, pending {self._pending_ids()}")
                return parsed
        req = self.requests.get(rid)
        if req is None:
            if not self.accept_unknown:
                self._violate("unknown-request", f"response for unknown request {rid!r}")
                return parsed
            req = self.expect(rid)
        try:
            req.process(parsed)
        except InvalidTransition as exc:
            self._violate("after-final", str(exc))
        if req.done:
            self._pending.pop(rid, None)
        return parsed

    def finish(self, *, end_of_body: bool = False) -> TritonCheck:
        """End of stream.

        ``end_of_body``: an HTTP generate_stream body ended cleanly, which Triton does only
        after the final flag (a flag-only final response sends no event).
        """
        for req in self.requests.values():
            if req.done:
                continue
            if end_of_body and len(self.requests) == 1:
                req.end_of_body()
                self._pending.pop(req.request_id, None)
                self._warnings.add(
                    "end-of-body",
                    f"request {req.request_id!r} completed by the end of the "
                    "body (no final flag seen)",
                )
            else:
                self._violations.add(
                    "not-final",
                    f"end of stream: [not-final] request {req.request_id!r} "
                    f"in state {req.state.name}",
                )
        return self.result()

    def result(self) -> TritonCheck:
        """The result so far."""
        return TritonCheck(
            violations=list(self.violations),
            warnings=list(self.warnings),
            requests=[
                TritonRequestResult(
                    request_id=r.request_id,
                    state=r.state.value,
                    responses=r.responses,
                    text="".join(r.text_parts),
                    error=r.error,
                    final_flag=r.final_flag,
                    completed_by_end_of_body=r.completed_by_end_of_body,
                )
                for r in self.requests.values()
            ],
            responses=self._index + 1,
            rules=list(self.rules),
        )
