# SPDX-License-Identifier: Apache-2.0
"""The OpenAI SDK's own stream accumulator, driven offline, as a compatibility oracle."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from openai._models import construct_type
from openai._types import omit
from openai.lib.streaming.responses import ResponseStreamState
from openai.types.responses import Response, ResponseStreamEvent


def sdk_accumulate(events: Iterable[dict[str, Any]]) -> Response | None:
    """Feed ``events`` to ``ResponseStreamState.handle_event`` as the client does.

    Returns the SDK's completed response (None without ``response.completed``); raises
    whatever the SDK raises on a stream it rejects.
    """
    state = ResponseStreamState(text_format=omit, input_tools=omit)
    for event in events:
        state.handle_event(construct_type(type_=ResponseStreamEvent, value=event))
    return state._completed_response
