# SPDX-License-Identifier: Apache-2.0
"""What a client sees of a stream, independent of how tokens were batched.

Deltas of one content part that follow each other are joined, ``sequence_number`` is
dropped, and item ids / call ids (random per stream) are replaced by their order of first
appearance, so two streams of the same tokens compare equal whatever the batch sizes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core.events import DELTA_TYPES

_ID_KEYS = frozenset(("id", "item_id", "call_id"))
_VOLATILE_KEYS = frozenset(("sequence_number", "completed_at"))


def _normalise(value: Any, ids: dict[str, str], key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: _normalise(v, ids, k) for k, v in value.items() if k not in _VOLATILE_KEYS}
    if isinstance(value, list):
        return [_normalise(v, ids) for v in value]
    if key in _ID_KEYS and isinstance(value, str) and not value.startswith("resp_"):
        if value not in ids:
            ids[value] = f"<id{len(ids)}>" if value else "<empty>"
        return ids[value]
    return value


def client_visible(events: Iterable[dict[str, Any]], join: bool = True) -> list[dict[str, Any]]:
    """Normalised events: consecutive deltas of one part joined (unless not ``join``), ids
    canonical."""
    ids: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for event in events:
        event = _normalise(event, ids)
        if join and event.get("type") in DELTA_TYPES and out:
            last = out[-1]
            if (
                last.get("type") == event["type"]
                and last.get("item_id") == event.get("item_id")
                and last.get("output_index") == event.get("output_index")
                and last.get("content_index") == event.get("content_index")
            ):
                last["delta"] = last.get("delta", "") + event.get("delta", "")
                continue
        out.append(event)
    return out


def comparable_response(response: dict[str, Any]) -> dict[str, Any]:
    """A response dict with item ids canonical and timestamps dropped, for ``==``.

    Two responses for the same tokens compare equal whether streamed or not.
    """
    return _normalise(response, {})
