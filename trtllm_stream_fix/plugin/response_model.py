# SPDX-License-Identifier: Apache-2.0
"""``ResponsesResponse`` whose dump is a complete OpenAI Response (``response-model`` patch).

Upstream's ``ResponsesResponse`` (TensorRT-LLM's own model, ``extra="forbid"``) has no
``error``, ``incomplete_details``, ``completed_at``, ``store``, ``prompt_cache_key``,
``safety_identifier`` ..., so the non-streaming body (``JSONResponse(response.model_dump())``)
and a stored response fetched again lack fields that OpenAI's API always sends.
:class:`CompleteResponsesResponse` subclasses the loaded upstream class, adding the fields it
lacks (``ADDED_FIELDS``, optional): ``from_request``
(which upstream's ``_create_response`` calls on the module global) keeps upstream's values
and adds the request's envelope, built as the streaming processor builds its own
(:func:`~trtllm_stream_fix.serving.processor.request_context`); its serializer writes every field
OpenAI sends, in OpenAI's order (``null`` where unset), then every other key upstream
dumped, output items always under OpenAI's key names (``async``, not the SDK's Python name
``async_``, whether or not the caller dumps ``by_alias``). Upstream's own values win for the
per-response fields (id, status, output, usage, ...) and wherever the envelope has nothing;
no key upstream sends is dropped.

The class is defined at module level (importing this module imports
``tensorrt_llm.serve.responses_utils``), so an instance pickled back from a PostprocWorker is
rebuilt by importing this module, as the streaming processor is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    create_model,
    model_serializer,
)
from tensorrt_llm.serve import responses_utils as _responses_utils

from ..core.response import OPENAI_RESPONSE_FIELDS, echoed_tool, envelope, json_value
from ..defaults import system_clock
from ..serving.processor import request_context
from .marker import mark
from .targets import upstream_class

#: Fields whose value upstream's own response decides (per response, not per request).
UPSTREAM_OWNED = frozenset(("id", "object", "created_at", "status", "output", "usage", "model"))
#: Usage keys OpenAI requires that an older ``ResponseUsage`` (83ab45a5's protocol) does not
#: declare, with the value the stream's terminal usage reports for them.
USAGE_DETAIL_DEFAULTS = {"input_tokens_details": {"cache_write_tokens": 0}}
#: ``incomplete_details.reason`` for upstream's ``incomplete`` status (finish reason length).
INCOMPLETE_REASON = "max_output_tokens"

_Upstream: Any = upstream_class(_responses_utils.ResponsesResponse)
#: OpenAI's fields upstream's model lacks, added as optional fields (so upstream code that
#: sets one, such as ``incomplete_details`` on a length cut, works on every model version).
ADDED_FIELDS = tuple(name for name in OPENAI_RESPONSE_FIELDS if name not in _Upstream.model_fields)
_ADDED: dict[str, Any] = {name: (Any, None) for name in ADDED_FIELDS}
_WithOpenAIFields: Any = create_model(
    "_WithOpenAIFields", __base__=_Upstream, __module__=__name__, **_ADDED
)
mark(_WithOpenAIFields)  # peeled off by targets.upstream_class


def request_fields(
    request: Any, sampling: Any, model_name: str, created_at: Any, status: str | None
) -> dict[str, Any]:
    """Every Response field a request and a final status fix, as plain JSON values."""
    context = request_context(request, sampling, model_name, created_at)
    built = envelope(context, [echoed_tool(t) for t in context.tools])
    values = {k: json_value(v) for k, v in built.items()}
    values["completed_at"] = int(system_clock()) if status == "completed" else None
    if status == "incomplete":
        values["incomplete_details"] = {"reason": INCOMPLETE_REASON}
    if status == "failed":
        values["error"] = {"code": "server_error", "message": "the generation failed"}
    return values


def complete(dumped: Mapping[str, Any], fields: Mapping[str, Any] | None) -> dict[str, Any]:
    """``dumped`` (upstream's dump) with every OpenAI field, in OpenAI's order.

    ``fields`` (:func:`request_fields`) fill what upstream left out or left null; upstream's
    value is kept for :data:`UPSTREAM_OWNED` fields and wherever ``fields`` has none.
    """
    out: dict[str, Any] = dict.fromkeys(OPENAI_RESPONSE_FIELDS)
    out.update(fields or {})
    for key, value in dumped.items():
        if key in UPSTREAM_OWNED or out.get(key) is None:
            out[key] = value
    out["usage"] = complete_usage(out["usage"])
    return out


def complete_usage(usage: Any) -> Any:
    """A dumped ``usage`` with the keys of :data:`USAGE_DETAIL_DEFAULTS` it lacks."""
    if not isinstance(usage, dict):
        return usage
    out = dict(usage)
    for key, defaults in USAGE_DETAIL_DEFAULTS.items():
        details = out.get(key)
        if isinstance(details, dict):
            out[key] = {**details, **{k: v for k, v in defaults.items() if k not in details}}
    return out


class CompleteResponsesResponse(_WithOpenAIFields):
    """Upstream's ``ResponsesResponse`` that dumps as a complete OpenAI Response."""

    __trtllm_stream_fix__: ClassVar[bool] = True
    _fix_fields: dict[str, Any] | None = PrivateAttr(default=None)

    @classmethod
    def from_request(cls, *args: Any, **kwargs: Any) -> Any:
        response = super().from_request(*args, **kwargs)
        named = dict(zip(("request", "sampling_params", "model_name", "created_time"), args))
        named.update(kwargs)
        try:
            response._fix_fields = request_fields(
                named["request"],
                named.get("sampling_params"),
                named.get("model_name") or response.model,
                named.get("created_time") or response.created_at,
                named.get("status"),
            )
        except Exception:  # an unexpected request shape: upstream's fields, nulls for the rest
            response._fix_fields = None
        return response

    @model_serializer(mode="wrap")
    def _fix_complete(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if info.include is not None or info.exclude is not None:
            return dumped  # the caller chose the keys
        out = complete(dumped, self._fix_fields)
        if not info.by_alias and isinstance(out.get("output"), list):
            out["output"] = [_wire_item(item, info) for item in self.output or ()]
        if isinstance(out.get("output"), list):
            out["output"] = [_without_empty_encrypted_content(item) for item in out["output"]]
        if info.exclude_none:
            return {k: v for k, v in out.items() if v is not None}
        return out


def _without_empty_encrypted_content(item: Any) -> Any:
    """A reasoning item without ``encrypted_content: null``: OpenAI sends the key only to a
    request that includes it, with content (as the streamed items, ``core.sse``)."""
    if isinstance(item, dict) and item.get("type") == "reasoning":
        if "encrypted_content" in item and item["encrypted_content"] is None:
            return {k: v for k, v in item.items() if k != "encrypted_content"}
    return item


def _wire_item(item: Any, info: SerializationInfo) -> Any:
    """An output item dumped with OpenAI's key names (``async``, not the SDK's ``async_``).

    A server that dumps without ``by_alias`` (upstream's ``GET /v1/responses/{id}``,
    ``model_dump()``) would otherwise send the SDK's Python field names.
    """
    if not isinstance(item, BaseModel):
        return item
    return item.model_dump(
        mode=info.mode,
        by_alias=True,
        exclude_unset=info.exclude_unset,
        exclude_defaults=info.exclude_defaults,
        exclude_none=info.exclude_none,
    )
