# SPDX-License-Identifier: Apache-2.0
"""Stream through the real OpenAI SDK over HTTP and report what it accepted."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any

from ..core.events import TERMINAL_TYPES


@dataclass
class SDKResult:
    """What the OpenAI SDK made of one request (both streaming entry points)."""

    ok: bool
    #: Event types seen through ``responses.create(stream=True)``.
    event_types: list[str] = field(default_factory=list)
    terminal: str | None = None
    #: What went wrong, in words: the exception raised by either entry point, the SDK
    #: statement that raised it and the last event the SDK accepted.
    error: str | None = None
    #: Output texts of ``get_final_response()`` (completed streams only).
    final_texts: list[str] | None = None


def make_client(base_url: str, timeout: float = 30.0) -> Any:
    """An ``openai.OpenAI`` client for ``base_url`` (no retries, dummy key)."""
    from openai import OpenAI

    return OpenAI(base_url=f"{base_url}/v1", api_key="x", max_retries=0, timeout=timeout)


def _texts(response: Any) -> list[str]:
    texts: list[str] = []
    for item in response.output:
        if item.type == "function_call":
            texts.append(item.arguments)
        else:
            texts.extend(getattr(part, "text", "") for part in item.content or [])
    return texts


def sdk_stream(client: Any, request: dict[str, Any]) -> SDKResult:
    """Stream ``request`` with ``responses.create(stream=True)`` then ``responses.stream()``.

    ``request`` holds ``model`` and ``input`` plus optional ``max_output_tokens``; other keys
    travel as ``extra_body``. ``get_final_response()`` is called only for a completed stream.
    """
    known = {k: request[k] for k in ("model", "input", "max_output_tokens") if k in request}
    extra = {k: v for k, v in request.items() if k not in known and k != "stream"}
    result = SDKResult(ok=False)
    stage, seen = "responses.create(stream=True)", result.event_types
    try:
        stream = client.responses.create(stream=True, extra_body=extra, **known)
        for event in stream:
            seen.append(event.type)
        terminals = [t for t in result.event_types if t in TERMINAL_TYPES]
        result.terminal = terminals[-1].removeprefix("response.") if terminals else None
        stage, seen = "responses.stream()", []
        with client.responses.stream(extra_body=extra, **known) as helper:
            for event in helper:
                seen.append(event.type)
            if result.terminal == "completed":
                stage = "get_final_response()"
                result.final_texts = _texts(helper.get_final_response())
    except Exception as exc:
        result.error = f"{stage}: {describe_failure(exc, seen)}"
        return result
    result.ok = result.terminal is not None
    if not result.ok:
        result.error = "no terminal event"
    return result


def describe_failure(exc: BaseException, accepted: list[str]) -> str:
    """``exc`` in words: type, message, the statement that raised it, where in the stream.

    The SDK's accumulator fails with bare ``assert`` statements, so the message alone is
    often empty; the failing source line says what it expected.
    """
    message = str(exc).strip()
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    frames = traceback.extract_tb(exc.__traceback__)
    if frames and frames[-1].line:
        frame = frames[-1]
        where = frame.filename.replace("\\", "/").rsplit("/site-packages/", 1)[-1]
        text += f" at `{frame.line}` ({where}:{frame.lineno})"
    if accepted:
        text += f"; the SDK accepted {len(accepted)} events, the last {accepted[-1]}"
    else:
        text += "; before the SDK accepted any event"
    return text
