# SPDX-License-Identifier: Apache-2.0
"""Values the current Responses API sends that an older installed ``openai`` schema lacks.

The checker validates every event against the installed ``openai`` types. An older (2.x)
``openai`` does not know some values that servers send today, e.g. ``status: "incomplete"``
on a ``web_search_call`` cut by the token limit. Such an event is validated again with
those values mapped to ones the installed schema knows, and the checker warns instead of
reporting a schema violation.
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Mapping
from typing import Any

from openai.types.responses import ResponseFunctionWebSearch

_WEB_SEARCH_STATUSES = frozenset(
    typing.get_args(ResponseFunctionWebSearch.model_fields["status"].annotation)
)


def _downgrade_item(item: Any, notes: list[str]) -> None:
    if (
        isinstance(item, dict)
        and item.get("type") == "web_search_call"
        and item.get("status") == "incomplete"
        and "incomplete" not in _WEB_SEARCH_STATUSES
    ):
        item["status"] = "failed"
        notes.append("web_search_call status 'incomplete'")


def for_installed_schema(event: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``event`` in the installed schema's terms, and what was mapped."""
    notes: list[str] = []
    mapped = copy.deepcopy(dict(event))
    _downgrade_item(mapped.get("item"), notes)
    response = mapped.get("response")
    if isinstance(response, dict) and isinstance(response.get("output"), list):
        for item in response["output"]:
            _downgrade_item(item, notes)
    return mapped, notes
