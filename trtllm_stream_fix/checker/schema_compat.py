# SPDX-License-Identifier: Apache-2.0
"""Values the current Responses API sends that an older installed ``openai`` schema lacks.

The checker validates every event against the installed ``openai`` types. An older (2.x)
``openai`` does not know some values that servers send today (``core.compat.NEWER_VALUES``,
e.g. ``status: "incomplete"`` on a ``web_search_call`` cut by the token limit). Such an event
is validated again with those values mapped to ones the installed schema knows, and the
checker warns instead of reporting a schema violation.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..core.compat import for_installed_schema as _item_for_installed_schema


def _map_item(item: Any, notes: list[str]) -> Any:
    if not isinstance(item, dict):
        return item
    mapped, note = _item_for_installed_schema(item)
    if note:
        notes.append(note)
    return mapped


def for_installed_schema(event: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``event`` in the installed schema's terms, and what was mapped."""
    notes: list[str] = []
    mapped = copy.deepcopy(dict(event))
    if "item" in mapped:
        mapped["item"] = _map_item(mapped["item"], notes)
    response = mapped.get("response")
    if isinstance(response, dict) and isinstance(response.get("output"), list):
        response["output"] = [_map_item(item, notes) for item in response["output"]]
    return mapped, notes
