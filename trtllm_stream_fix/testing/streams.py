# SPDX-License-Identifier: Apache-2.0
"""Run a token list through the event machine with explicit engine responses."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.config import DEFAULT_CONFIG, StreamConfig
from ..core.context import ResponseContext
from ..core.machine import ResponsesEventMachine
from ..core.sse import event_to_dict
from ..defaults import new_context

MakeStream = Callable[[str, ResponseContext, StreamConfig, Any], Any]


def event_machine(impl: str, context: ResponseContext, config: StreamConfig, encoding: Any) -> Any:
    """The ``ResponsesEventMachine`` (the only ``impl`` here is ``"ours"``)."""
    if impl != "ours":
        raise ValueError(f"only the event machine runs here, not {impl!r}")
    return ResponsesEventMachine(context, config=config, encoding=encoding)


def run(
    impl: str,
    responses: Sequence[Sequence[int]],
    finish_reason: str = "stop",
    *,
    encoding: Any = None,
    config: StreamConfig = DEFAULT_CONFIG,
    make: MakeStream = event_machine,
) -> list[dict[str, Any]]:
    """Events (as dicts) for ``responses``, the last one finished with ``finish_reason``.

    ``make`` builds the stream ``impl`` names (with its ``start`` and ``feed``).
    """
    context = new_context(response_id="resp_test", created_at=0.0)
    stream = make(impl, context, config, encoding)
    events = list(stream.start())
    for i, diff in enumerate(responses):
        last = i == len(responses) - 1
        events += stream.feed(
            list(diff), finished=last, finish_reason=finish_reason if last else None
        )
    return [event_to_dict(e) for e in events]


def split(tokens: Sequence[int], size: int) -> list[list[int]]:
    """``tokens`` as engine responses of ``size`` tokens (one empty response if none)."""
    return [list(tokens[i : i + size]) for i in range(0, len(tokens), size)] or [[]]


def of_type(events: list[dict[str, Any]], suffix: str) -> list[dict[str, Any]]:
    """The events whose type ends with ``suffix``."""
    return [e for e in events if e["type"].endswith(suffix)]


def text_by_item(events: list[dict[str, Any]]) -> dict[str, str]:
    """The joined deltas of each item id."""
    out: dict[str, str] = {}
    for e in events:
        if e["type"].endswith(".delta"):
            out[e["item_id"]] = out.get(e["item_id"], "") + e["delta"]
    return out
