# SPDX-License-Identifier: Apache-2.0
"""The OpenAI SDK's own stream accumulator, driven offline, as a compatibility oracle."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from openai._types import omit
from openai.lib.streaming.responses import ResponseStreamState, _responses
from openai.types.responses import Response, ResponseStreamEvent

from ..core.compat import construct_type

_SOURCE = inspect.getsource(_responses)
REJECTS_UNFINISHED_ITEMS = "unfinished output items" in _SOURCE
"""Whether this openai's accumulator refuses ``response.completed`` with an item still open
(openai 3.x; 2.x accepts it, so there only our strict checker catches that)."""
REJECTS_DUPLICATE_INDEX = "Duplicate response output index" in _SOURCE
"""Whether it refuses a second item at the same ``output_index`` (openai 3.x)."""


def sdk_accumulate(events: Iterable[dict[str, Any]]) -> Response | None:
    """Feed ``events`` to ``ResponseStreamState.handle_event`` as the client does.

    Returns the SDK's completed response (None without ``response.completed``); raises
    whatever the SDK raises on a stream it rejects.
    """
    state = ResponseStreamState(text_format=omit, input_tools=omit)
    for event in events:
        state.handle_event(construct_type(type_=ResponseStreamEvent, value=event))
    return state._completed_response
