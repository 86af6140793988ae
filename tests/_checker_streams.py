# SPDX-License-Identifier: Apache-2.0
"""Hand-written, valid event streams for the checker tests (no dependency on the machine)."""

from __future__ import annotations

import copy
import json
from typing import Any

RESPONSE_ID = "resp_0123456789abcdef"
REASONING_ID = "rs_0001"
MESSAGE_ID = "msg_0002"
CALL_ITEM_ID = "fc_0003"
CALL_ID = "call_0003"

REASONING_DELTAS = ["The user ", "wants the ", "weather."]
MESSAGE_DELTAS = ["Let me ", "check ", "Paris."]
ARG_DELTAS = ['{"city"', ': "Paris"}']


def _response(status: str, output: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": 1700000000.0,
        "model": "gpt-oss-20b",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                "strict": False,
            }
        ],
        "status": status,
        "temperature": 1.0,
        "top_p": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
    }
    body.update(extra)
    return body


def _usage(inp: int = 12, out: int = 30) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": 9},
        "total_tokens": inp + out,
    }


def reasoning_item(status: str, text: str) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": REASONING_ID,
        "type": "reasoning",
        "summary": [],
        "status": status,
    }
    item["content"] = [{"type": "reasoning_text", "text": text}] if status != "in_progress" else []
    return item


def message_item(status: str, text: str | None) -> dict[str, Any]:
    content = (
        []
        if text is None
        else [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    )
    return {
        "id": MESSAGE_ID,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": content,
        "phase": "commentary",
    }


def call_item(status: str, arguments: str) -> dict[str, Any]:
    return {
        "id": CALL_ITEM_ID,
        "type": "function_call",
        "call_id": CALL_ID,
        "name": "get_weather",
        "arguments": arguments,
        "status": status,
    }


def _text_part(kind: str, text: str) -> dict[str, Any]:
    if kind == "output_text":
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"type": kind, "text": text}


def _part_events(item_id: str, idx: int, kind: str, deltas: list[str]) -> list[dict[str, Any]]:
    text = "".join(deltas)
    ref = {"item_id": item_id, "output_index": idx, "content_index": 0}
    events = [{"type": "response.content_part.added", **ref, "part": _text_part(kind, "")}]
    for d in deltas:
        delta = {"type": f"response.{kind}.delta", **ref, "delta": d}
        if kind == "output_text":
            delta["logprobs"] = []
        events.append(delta)
    done = {"type": f"response.{kind}.done", **ref, "text": text}
    if kind == "output_text":
        done["logprobs"] = []
    events.append(done)
    events.append({"type": "response.content_part.done", **ref, "part": _text_part(kind, text)})
    return events


def valid_stream(*, terminal: str = "completed") -> list[dict[str, Any]]:
    """Reasoning + commentary message + function_call, then the terminal event.

    ``terminal``: "completed"; "incomplete" (the call is cut, status incomplete, partial
    arguments); "failed" (the call is cut, then error + response.failed).
    """
    r_text = "".join(REASONING_DELTAS)
    m_text = "".join(MESSAGE_DELTAS)
    arg_deltas = ARG_DELTAS if terminal == "completed" else ARG_DELTAS[:1]
    args = "".join(arg_deltas)
    call_status = "completed" if terminal == "completed" else "incomplete"
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response("in_progress", [])},
        {"type": "response.in_progress", "response": _response("in_progress", [])},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": reasoning_item("in_progress", ""),
        },
        *_part_events(REASONING_ID, 0, "reasoning_text", REASONING_DELTAS),
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": reasoning_item("completed", r_text),
        },
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": message_item("in_progress", None),
        },
        *_part_events(MESSAGE_ID, 1, "output_text", MESSAGE_DELTAS),
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": message_item("completed", m_text),
        },
        {
            "type": "response.output_item.added",
            "output_index": 2,
            "item": call_item("in_progress", ""),
        },
        *[
            {
                "type": "response.function_call_arguments.delta",
                "item_id": CALL_ITEM_ID,
                "output_index": 2,
                "delta": d,
            }
            for d in arg_deltas
        ],
        {
            "type": "response.function_call_arguments.done",
            "item_id": CALL_ITEM_ID,
            "output_index": 2,
            "name": "get_weather",  # required by openai 2.x, an extra field in 3.x
            "arguments": args,
        },
        {
            "type": "response.output_item.done",
            "output_index": 2,
            "item": call_item(call_status, args),
        },
    ]
    output = [
        reasoning_item("completed", r_text),
        message_item("completed", m_text),
        call_item(call_status, args),
    ]
    if terminal == "completed":
        events.append(
            {
                "type": "response.completed",
                "response": _response("completed", output, usage=_usage()),
            }
        )
    elif terminal == "incomplete":
        events.append(
            {
                "type": "response.incomplete",
                "response": _response(
                    "incomplete",
                    output,
                    usage=_usage(),
                    incomplete_details={"reason": "max_output_tokens"},
                ),
            }
        )
    else:
        events.append({"type": "error", "code": "server_error", "message": "engine died"})
        events.append(
            {
                "type": "response.failed",
                "response": _response(
                    "failed",
                    output,
                    usage=_usage(),
                    error={"code": "server_error", "message": "engine died"},
                ),
            }
        )
    return renumber(events)


def renumber(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set sequence_number 0, 1, 2, ... (returns new dicts)."""
    out = []
    for i, e in enumerate(events):
        e = copy.deepcopy(e)
        e["sequence_number"] = i
        out.append(e)
    return out


def find(events: list[dict[str, Any]], etype: str, nth: int = 0, **match: Any) -> int:
    """Index of the nth event of ``etype`` whose keys equal ``match``."""
    hits = [
        i
        for i, e in enumerate(events)
        if e["type"] == etype and all(e.get(k) == v for k, v in match.items())
    ]
    return hits[nth]


def to_sse(events: list[dict[str, Any]], *, done: bool = False) -> bytes:
    """Frame events as SSE (``event:`` + ``data:`` lines, blank line)."""
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    if done:
        body += "data: [DONE]\n\n"
    return body.encode()
