# SPDX-License-Identifier: Apache-2.0
"""Request validation and OpenAI-style error bodies for the local server."""

from __future__ import annotations

import re
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import jsonlimits
from ..core.errors import error_body
from ..core.response import ECHOED_REQUEST_FIELDS, request_echo
from .errors import RequestError
from .validation import validate_echo, validate_input, validate_tools

__all__ = [
    "FAULTS",
    "RequestError",
    "ResponsesRequest",
    "check_metadata",
    "decode_body",
    "echoed_fields",
    "error_body",
    "input_text",
    "parse_request",
    "select_generation",
    "selection",
    "text_pieces",
]

_Model = TypeVar("_Model", bound=BaseModel)
_SEED = re.compile(r"\s*[+-]?[0-9]{1,64}\s*")
#: Bounds of integer request fields (a clear 400 naming the field beyond them).
MAX_TOKENS = 2**31 - 1
MAX_TOP_LOGPROBS = 20
#: OpenAI's bound for ``presence_penalty`` / ``frequency_penalty`` (either sign).
MAX_PENALTY = 2.0
SEED_RANGE = (-(2**63), 2**63 - 1)
#: OpenAI's bounds for ``metadata``.
METADATA_MAX_PAIRS = 16
METADATA_MAX_KEY_CHARS = 64
METADATA_MAX_VALUE_CHARS = 512

FAULTS: tuple[str, ...] = (
    "drop",
    "stall",
    "http503",
    "malformed_json",
    "oversize",
    "invalid_utf8",
    "after_terminal",
    "no_terminal",
)


class ResponsesRequest(BaseModel):
    """The subset of ``POST /v1/responses`` the simulated server honours.

    Unknown fields are accepted and ignored, as an OpenAI-compatible server does.
    Extension fields: ``scenario`` (a named synthetic output), ``seed`` (a random one),
    ``stream_interval`` (tokens per engine response) and ``sim_fault`` (fault injection,
    when the server enables it). ``metadata.scenario`` / ``metadata.seed`` work too.
    """

    model_config = ConfigDict(extra="allow", strict=True)

    model: str = Field(min_length=1)
    input: str | list[dict[str, Any]]
    stream: bool = False
    instructions: str | None = None
    max_output_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    max_tool_calls: int | None = Field(default=None, ge=0, le=MAX_TOKENS)
    top_logprobs: int | None = Field(default=None, ge=0, le=MAX_TOP_LOGPROBS)
    previous_response_id: str | None = None
    store: bool = True
    tools: list[dict[str, Any]] = Field(default_factory=list)
    tool_choice: str | dict[str, Any] = "auto"
    parallel_tool_calls: bool = True
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    presence_penalty: float | None = Field(default=None, ge=-MAX_PENALTY, le=MAX_PENALTY)
    frequency_penalty: float | None = Field(default=None, ge=-MAX_PENALTY, le=MAX_PENALTY)
    reasoning: dict[str, Any] | None = None  # ``effort`` sets the reasoning's length
    text: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    scenario: str | None = None
    seed: int | None = Field(default=None, ge=SEED_RANGE[0], le=SEED_RANGE[1])
    stream_interval: int | None = Field(default=None, ge=1, le=4096)
    sim_fault: Literal[FAULTS] | None = None  # type: ignore[valid-type]


def decode_body(raw: bytes, model: type[_Model], *, max_depth: int = 64) -> _Model:
    """``raw`` decoded and validated as ``model``; raises :class:`RequestError` (400), also
    for JSON nested deeper than ``max_depth``. ``param`` names the first invalid field."""
    beyond_64_bits: list[int] = []

    def parse_int(digits: str) -> int:
        value = int(digits)
        if not jsonlimits.in_int_range(value):
            beyond_64_bits.append(value)
        return value

    try:
        data = jsonlimits.loads(raw, max_depth=max_depth, parse_int=parse_int)
    except jsonlimits.JSONLimitError as exc:
        raise RequestError(400, f"request body: {exc}", code="invalid_json") from None
    if not isinstance(data, dict):
        raise RequestError(400, "request body must be a JSON object", code="invalid_json")
    suspect = beyond_64_bits or jsonlimits.may_hold_surrogates(raw)
    unsendable = jsonlimits.first_unsendable(data) if suspect else None
    if unsendable is not None:
        param = jsonlimits.json_path(unsendable[0]) or None
        raise RequestError(
            400,
            f"invalid request: {param or 'the body'} {unsendable[1]}",
            param=param,
            code="invalid_value",
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        param = str(first["loc"][0]) if first["loc"] else None
        raise RequestError(
            400, f"invalid request: {where}: {first['msg']}", param=param, code="invalid_value"
        ) from None


def parse_request(raw: bytes, *, max_depth: int = 64) -> ResponsesRequest:
    """Decode and validate a request body (tools and input items included); raises
    :class:`RequestError` (400), also for JSON nested deeper than ``max_depth``."""
    request = decode_body(raw, ResponsesRequest, max_depth=max_depth)
    check_metadata(request.metadata)
    validate_tools(request.tools)
    validate_input(request.input)
    validate_echo({**echoed_fields(request), "tool_choice": request.tool_choice})
    return request


_ECHO_SOURCES = (*ECHOED_REQUEST_FIELDS, "reasoning", "text")


def echoed_fields(request: ResponsesRequest) -> dict[str, Any]:
    """The Response fields ``request`` sets beyond ``ResponseContext``'s own
    (:func:`~trtllm_stream_fix.core.response.request_echo`), extension fields included."""
    return request_echo({name: getattr(request, name, None) for name in _ECHO_SOURCES})


def _too_long(what: str, limit: int, length: int) -> RequestError:
    return RequestError(
        400,
        f"Invalid '{what}': string too long. Expected a string with maximum length {limit}, "
        f"but got a string with length {length} instead.",
        param=what,
        code="string_above_max_length",
    )


def check_metadata(metadata: dict[str, str] | None) -> None:
    """Raise :class:`RequestError` (400, OpenAI's wording) for ``metadata`` past OpenAI's
    bounds: at most 16 pairs, keys up to 64 characters, values up to 512."""
    if not metadata:
        return
    if len(metadata) > METADATA_MAX_PAIRS:
        raise RequestError(
            400,
            "Invalid 'metadata': too many properties. Expected an object with at most "
            f"{METADATA_MAX_PAIRS} properties, but got an object with {len(metadata)} "
            "properties instead.",
            param="metadata",
            code="object_above_max_properties",
        )
    for key, value in metadata.items():
        if len(key) > METADATA_MAX_KEY_CHARS:
            raise _too_long("metadata", METADATA_MAX_KEY_CHARS, len(key))
        if len(value) > METADATA_MAX_VALUE_CHARS:
            raise _too_long(f"metadata.{key}", METADATA_MAX_VALUE_CHARS, len(value))


def selection(body: Any) -> tuple[str | None, int | None]:
    """The ``scenario`` and ``seed`` a request chose (extension fields, else ``metadata``).

    ``metadata`` values are strings: a ``metadata.seed`` that is not a decimal integer is a
    :class:`RequestError` (400) naming ``metadata.seed``.
    """
    metadata = body.metadata or {}
    scenario = body.scenario or metadata.get("scenario")
    if body.seed is not None:
        return scenario, body.seed
    seed = metadata.get("seed")
    if seed is None:
        return scenario, None
    if not _SEED.fullmatch(seed):
        raise RequestError(
            400,
            f"metadata.seed must be an integer of at most 64 digits, got {seed[:40]!r}",
            param="metadata.seed",
            code="invalid_value",
        )
    return scenario, int(seed)


def select_generation(engine: Any, body: Any, request_input: Any, **request: Any) -> Any:
    """``engine.select`` for ``body``'s scenario and seed; a request the engine cannot
    follow (unknown scenario, unsatisfiable ``tool_choice``) is a 400 naming the field."""
    scenario, seed = selection(body)
    try:
        return engine.select(request_input, scenario=scenario, seed=seed, **request)
    except ValueError as exc:
        raise RequestError(400, str(exc), param=getattr(exc, "param", "scenario")) from None


def input_text(request_input: str | list[dict[str, Any]]) -> str:
    """The plain text of a request input (used to count prompt tokens)."""
    if isinstance(request_input, str):
        return request_input
    return "\n".join(text_pieces(request_input))


#: The keys of an input item (or chat message) that hold text the prompt renders.
TEXT_KEYS = ("content", "summary", "arguments", "output")


def text_pieces(items: list[dict[str, Any]]) -> list[str]:
    """The text of ``items``, every kind: message content, reasoning summary and content,
    function call arguments and function call outputs (strings, or parts' ``text``)."""
    pieces: list[str] = []
    for item in items:
        for key in TEXT_KEYS:
            value = item.get(key)
            if isinstance(value, str):
                pieces.append(value)
            elif isinstance(value, list):
                pieces.extend(p.get("text") or "" for p in value if isinstance(p, dict))
    return pieces
