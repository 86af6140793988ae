# SPDX-License-Identifier: Apache-2.0
"""The stream's usage as upstream counts and stores it.

``with_engine_input`` sets the engine's prompt counts on the terminal event's usage;
``server_usage`` converts that usage to the server response model's own type.
"""

from __future__ import annotations

import numbers
import typing
from typing import Any

from pydantic import BaseModel, TypeAdapter

from .disaggregated import context_counts


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
