# SPDX-License-Identifier: Apache-2.0
"""Storing a streamed response (and its Harmony messages) as a non-streaming one is stored.

``store`` awaits the conversation store; ``store_soon`` schedules it from a synchronous
caller on the running event loop. Storing never breaks the stream: a failure is logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from openai.types.responses import Response

from .body import harmony_output_messages
from .upstream import UpstreamProcessor
from .usage import server_usage

logger = logging.getLogger(__name__)


_PENDING_STORES: set[asyncio.Task[None]] = set()  # keeps scheduled stores alive until done


def server_response(model: Any, processor: UpstreamProcessor, response: Response) -> Any:
    """``response`` as the server's response model (what non-streaming stores).

    Built with the model's ``from_request`` from the request, sampling params, model name
    and creation time the ``processor`` holds; our ``Response`` itself when the model is
    absent or refuses it.
    """
    if model is None or not hasattr(model, "from_request"):
        return response
    try:
        return model.from_request(
            request=processor.request,
            sampling_params=processor.sampling_params,
            model_name=processor.model_name,
            created_time=processor.response_creation_time,
            output=list(response.output),
            status=response.status,
            usage=server_usage(model, response.usage),
        )
    except Exception as exc:  # storing must never break the stream
        logger.debug("storing the streamed Response as is: %s", exc)
        return response


def storing(processor: UpstreamProcessor, response: Response | None) -> bool:
    """Whether ``response`` is stored: storage on, the request's ``store``, a store bound."""
    return (
        response is not None
        and bool(processor.enable_store)
        and bool(getattr(processor.request, "store", True))
        and processor.conversation_store is not None
    )


async def store(
    processor: UpstreamProcessor,
    response: Response | None,
    final_res: Any,
    model: Any,
    parse_messages: Callable[[list[int]], list[Any]],
) -> None:
    """Store a streamed response and its Harmony messages as a non-streaming one is."""
    if response is None or not storing(processor, response):
        return
    try:
        await processor.conversation_store.store_response(
            resp=server_response(model, processor, response),
            resp_msgs=harmony_output_messages(final_res.outputs[0].token_ids, parse_messages),
            prev_resp_id=getattr(processor.request, "previous_response_id", None),
        )
    except Exception:  # storing must never break the stream
        logger.exception("streamed response %s not stored", response.id)


def store_soon(
    processor: UpstreamProcessor,
    response: Response | None,
    final_res: Any,
    model: Any,
    parse_messages: Callable[[list[int]], list[Any]],
) -> None:
    """``store`` from a synchronous caller on the event loop (the streaming loop's)."""
    if response is None or not storing(processor, response):
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        logger.warning("streamed response %s not stored: no event loop", response.id)
        return
    task = loop.create_task(store(processor, response, final_res, model, parse_messages))
    _PENDING_STORES.add(task)
    task.add_done_callback(_PENDING_STORES.discard)
