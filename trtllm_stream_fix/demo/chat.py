# SPDX-License-Identifier: Apache-2.0
"""The Chat Completions half of ``trtllm-stream-fix demo``: upstream's older line vs ours.

The demo requests go to ``/v1/chat/completions`` on the two local servers at every interval;
each stream is checked by the strict chat checker and by the OpenAI SDK over HTTP
(``client.chat.completions.create(stream=True)`` joined by ``ChatCompletionStreamState``),
compared with the interval-1 stream, and its characters counted against our non-streaming
answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..differential.chat import chat_visible
from . import MODEL, Judged, judge_everywhere, summarize, summary_table


@dataclass
class ChatStreamResult(Judged):
    """One chat request streamed through one generator at one interval."""

    request: str
    generator: str
    interval: int
    strict_ok: bool
    violations: list[str]
    sdk_ok: bool
    sdk_error: str | None
    delivered_chars: int
    expected_chars: int
    visible: list[Any] = field(repr=False, default_factory=list)
    identical_to_1: bool = True


def _body(label: str, scenario: str, interval: int, max_tokens: int | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": f"demo: {label}"}],
        "scenario": scenario,
        "stream_interval": interval,
    }
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body


def _chars(message: dict[str, Any]) -> int:
    calls = message.get("tool_calls") or []
    return (
        len(message.get("content") or "")
        + len(message.get("reasoning") or "")
        + sum(len(c["function"]["arguments"]) for c in calls)
    )


def _sdk(base_url: str, body: dict[str, Any]) -> tuple[bool, str | None]:
    import openai
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletion

    extra = {k: v for k, v in body.items() if k not in ("model", "messages")}
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="demo", max_retries=0)
    try:
        state = ChatCompletionStreamState()
        stream = client.chat.completions.create(
            model=body["model"], messages=body["messages"], stream=True, extra_body=extra
        )
        for chunk in stream:
            state.handle_chunk(chunk)
        snapshot = state.current_completion_snapshot
        ChatCompletion.model_validate(snapshot.model_dump(mode="json", exclude_unset=True))
        return True, None
    except openai.APIError as exc:
        return False, f"APIError: {exc.message}"
    except Exception as exc:
        return False, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    finally:
        client.close()


async def _streams(base_url: str, bodies: list[dict[str, Any]]) -> list[Any]:
    import httpx

    from ..checker.client import stream_chat

    url = f"{base_url}/v1/chat/completions"
    async with httpx.AsyncClient(timeout=30.0) as client:
        return list(
            await asyncio.gather(
                *(stream_chat(client, url, b, idle_timeout=20.0, deadline=60.0) for b in bodies)
            )
        )


def _payloads(record: Any) -> list[Any]:
    out: list[Any] = []
    for raw in record.events:
        data = raw.get("data")
        if data == "[DONE]":
            out.append("[DONE]")
            continue
        try:
            out.append(json.loads(data))
        except (TypeError, ValueError):
            continue
    return out


def _delivered(payloads: list[Any]) -> int:
    total = 0
    for payload in payloads:
        if not isinstance(payload, dict):
            continue
        for choice in payload.get("choices") or []:
            delta = choice.get("delta") or {}
            total += len(delta.get("content") or "") + len(delta.get("reasoning") or "")
            for call in delta.get("tool_calls") or []:
                total += len((call.get("function") or {}).get("arguments") or "")
    return total


def run_chat_demo(
    intervals: Sequence[int], requests: Sequence[Any], *, max_draft_tokens: int = 0
) -> list[ChatStreamResult]:
    """Stream every demo request over chat through both generators at every interval."""
    import httpx

    expected: dict[tuple[str, int], int] = {}

    def judge(base_url: str, generator: str, interval: int) -> list[ChatStreamResult]:
        bodies = [_body(r.label, r.scenario, interval, r.max_output_tokens) for r in requests]
        records = asyncio.run(_streams(base_url, bodies))
        out = []
        for req, body, record in zip(requests, bodies, records):
            if generator == "ours":
                answer = httpx.post(f"{base_url}/v1/chat/completions", json=body).json()
                message = (answer.get("choices") or [{}])[0].get("message") or {}
                expected[(req.label, interval)] = _chars(message)
            payloads = _payloads(record)
            sdk_ok, sdk_error = _sdk(base_url, body)
            out.append(
                ChatStreamResult(
                    request=req.label,
                    generator=generator,
                    interval=interval,
                    strict_ok=record.ok,
                    violations=list(record.violations),
                    sdk_ok=sdk_ok,
                    sdk_error=sdk_error,
                    delivered_chars=_delivered(payloads),
                    expected_chars=expected[(req.label, interval)],
                    visible=chat_visible(payloads),
                )
            )
        return out

    return judge_everywhere(intervals, max_draft_tokens, judge)


#: One row per generator x interval (the same summary as the Responses demo's).
summarize_chat = summarize


def print_chat_report(results: Sequence[ChatStreamResult]) -> None:
    """Rich table of the chat summary, then one reason per failing upstream interval."""
    from rich.markup import escape

    from ..pipe import console as pipe_console

    console = pipe_console()
    title = "Chat Completions (/v1/chat/completions), same tokens for every interval"
    console.print(summary_table(title, results, min(r.interval for r in results)))
    shown: dict[int, ChatStreamResult] = {}
    for r in results:
        if r.generator != "ours" and not r.ok:
            shown.setdefault(r.interval, r)
    for r in shown.values():
        why = r.violations[0] if r.violations else r.sdk_error or "text lost"
        console.print(f"[dim]upstream chat, {r.request} @ {r.interval}: {escape(why)}[/]")


__all__ = ["ChatStreamResult", "print_chat_report", "run_chat_demo", "summarize_chat"]
