# SPDX-License-Identifier: Apache-2.0
"""``generate: false``: the two events a warm-up turn answers with, no runner involved.

The response (``response.created`` then ``response.completed``, empty output, no usage)
echoes the request's fields as a generated one would; its id is cached on the lane and
usable as ``previous_response_id`` (the turn's input then leads the continuation's).
"""

from __future__ import annotations

import time
from typing import Any

from ..core.context import ResponseContext
from ..core.response import request_echo, response_envelope, typed_tools
from ..core.sse import event_to_dict
from ..defaults import random_id
from .errors import ClientEventError


def _context(body: dict[str, Any], response_id: str, created_at: int) -> ResponseContext:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ClientEventError(
            400,
            "Missing required parameter: 'model'.",
            code="missing_required_parameter",
            param="model",
        )
    return ResponseContext(
        response_id=response_id,
        model=model,
        created_at=created_at,
        tools=list(body.get("tools") or []),
        tool_choice=body.get("tool_choice") or "auto",
        parallel_tool_calls=bool(body.get("parallel_tool_calls", True)),
        instructions=body.get("instructions"),
        max_output_tokens=body.get("max_output_tokens"),
        temperature=body.get("temperature"),
        top_p=body.get("top_p"),
        echo=request_echo(body),
        clock=time.time,
    )


def warmup_events(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The response id and events (``response.created``, ``response.completed``) of a
    ``generate: false`` turn for ``body``; :class:`ClientEventError` (400) for fields the
    response cannot echo."""
    response_id = random_id("resp")
    try:
        context = _context(body, response_id, int(time.time()))
        tools = typed_tools(context.tools)
        created = response_envelope(context, tools, [], status="in_progress")
        completed = response_envelope(context, tools, [], status="completed")
        snapshots = [event_to_dict(r) for r in (created, completed)]
    except ClientEventError:
        raise
    except Exception as exc:  # a field the Response model refuses
        raise ClientEventError(
            400, f"invalid request: {type(exc).__name__}: {exc}"[:500], code="invalid_value"
        ) from None
    events = [
        {"type": "response.created", "response": snapshots[0], "sequence_number": 0},
        {"type": "response.completed", "response": snapshots[1], "sequence_number": 1},
    ]
    return response_id, events
