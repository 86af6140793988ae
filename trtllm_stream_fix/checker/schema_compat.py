# SPDX-License-Identifier: Apache-2.0
"""Values the current Responses API sends that an older installed ``openai`` schema lacks.

The checker validates every event against the installed ``openai`` types. An older (2.x)
``openai`` does not know some values that servers send today (e.g. ``status:
"incomplete"`` on a ``web_search_call`` cut by the token limit). Such an event is validated
again with those values mapped to ones the installed schema knows, and the checker warns
instead of reporting a schema violation. The checker keeps its own table (it does not read
the core's ``core.compat``, which it judges); a test checks that the two agree.
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Mapping
from typing import Any

__all__ = ["NEWER_VALUES", "for_installed_schema", "newer_values"]

#: (item type, field, value the current API sends, stand-in an older openai knows, the
#: openai class whose field lists the known values).
NEWER_VALUE_FACTS = (
    ("web_search_call", "status", "incomplete", "failed", "ResponseFunctionWebSearch"),
)

NEWER_VALUES: dict[tuple[str, str, str], str] | None = None


def newer_values() -> dict[tuple[str, str, str], str]:
    """(item type, field, newer value) -> stand-in, for the values this openai lacks."""
    global NEWER_VALUES
    if NEWER_VALUES is None:
        from openai.types import responses

        found = {}
        for item_type, name, newer, older, class_name in NEWER_VALUE_FACTS:
            field = getattr(responses, class_name).model_fields[name]
            if newer not in typing.get_args(field.annotation):
                found[item_type, name, newer] = older
        NEWER_VALUES = found
    return NEWER_VALUES


def _map_item(item: Any, notes: list[str]) -> Any:
    if not isinstance(item, dict):
        return item
    for (item_type, name, newer), older in newer_values().items():
        if item.get("type") == item_type and item.get(name) == newer:
            notes.append(f"{item_type} {name} {newer!r}")
            return {**item, name: older}
    return item


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
