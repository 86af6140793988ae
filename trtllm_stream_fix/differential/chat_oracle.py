# SPDX-License-Identifier: Apache-2.0
"""The OpenAI SDK's chat stream accumulator, driven offline, as a compatibility oracle.

``ChatCompletionStreamState`` (``openai.lib.streaming.chat``) joins the chunks the way
``client.chat.completions.stream`` does; an error payload is what the SDK's ``Stream``
raises ``APIError`` on. The accumulated completion must also validate as a
``ChatCompletion`` (a repeated ``role`` joins into ``"assistantassistant"``, a missing
finish reason is not a completion).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from openai._models import construct_type
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from ..core.errors import StreamFixError


class SDKRejected(StreamFixError):
    """The SDK (or the ``ChatCompletion`` schema) rejects the stream."""


@dataclass
class SDKResult:
    """What a client of the OpenAI SDK ends up with: a completion or an error message."""

    completion: dict[str, Any] | None = None
    error: str | None = None


def sdk_accumulate_chat(payloads: Iterable[Any]) -> SDKResult:
    """Feed JSON payloads (``"[DONE]"`` for the sentinel) to ``ChatCompletionStreamState``.

    Returns the validated completion as a dict, or the error message the SDK would raise
    ``APIError`` with; raises ``SDKRejected`` when the SDK or the schema rejects the stream.
    """
    state = ChatCompletionStreamState()
    seen = False
    try:
        for payload in payloads:
            if payload == "[DONE]":
                break
            if isinstance(payload, dict) and payload.get("error"):
                error = payload["error"]
                message = error.get("message") if isinstance(error, dict) else None
                if not isinstance(message, str) or not message:
                    raise SDKRejected(f"error payload without a message: {payload!r}")
                return SDKResult(error=message)
            state.handle_chunk(
                cast(ChatCompletionChunk, construct_type(type_=ChatCompletionChunk, value=payload))
            )
            seen = True
        if not seen:
            raise SDKRejected("no chunk")
        snapshot = state.current_completion_snapshot
        if any(choice.finish_reason == "length" for choice in snapshot.choices):
            # ``get_final_completion`` raises ``LengthFinishReasonError`` on any token-limit
            # cut (its policy for parsed output, whatever the server did): take the snapshot.
            final: Any = snapshot
        else:
            final = state.get_final_completion()
        data = final.model_dump(mode="json", exclude_unset=True)
        ChatCompletion.model_validate(data)
    except SDKRejected:
        raise
    except Exception as exc:
        raise SDKRejected(f"{type(exc).__name__}: {exc}") from exc
    return SDKResult(completion=data)


__all__ = ["SDKRejected", "SDKResult", "sdk_accumulate_chat"]
