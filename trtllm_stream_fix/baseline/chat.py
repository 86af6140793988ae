# SPDX-License-Identifier: Apache-2.0
"""Upstream-equivalent chat baseline: the older TensorRT-LLM line's Harmony chat path.

OUR OWN re-implementation, written from a reading of ``handle_streaming_response`` /
``HarmonyStreamState.process_token_batch`` / ``harmony_output_to_openai`` in
``tensorrt_llm/serve/harmony_adapter.py`` (38134b13). It contains no upstream code and exists
to show the defects; do not serve traffic with it. Per engine response, like upstream:

- a response that is not done: tokens go to the parser one by one; each token's
  ``last_content_delta`` becomes its own chunk, routed by the parser's channel: analysis →
  ``reasoning`` (also a tool call's arguments on the analysis channel), commentary with a
  ``functions.`` recipient → a tool-call delta (id and name on the call's first delta),
  other commentary → ``content`` wrapped in ``<|channel|>commentary<|message|>`` …
  ``<|end|>``, final → ``content``. A Harmony error drops the whole batch's deltas. The
  ``role`` chunk is sent again with every such response;
- the "repeated message" guard: once analysis and final were both seen among more than two
  channel runs, a ``finish_reason: "stop"`` chunk and the usage chunk are sent and the
  request is aborted (later responses send nothing);
- the response marked done: its tokens are never parsed; a finish chunk carries the
  engine's finish reason (``"stop"`` after a tool call) and the usage chunk follows, asked
  for or not;
- every chunk gets a fresh ``chatcmpl-`` id (upstream builds ``ChatCompletionStreamResponse``
  without one).

``upstream_chat_completion`` is the non-streaming path: messages parsed from the whole
output, preambles wrapped in markup, function-call arguments kept only on the commentary
channel and only when valid JSON, ``"tool_calls"`` when a call survived.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from openai_harmony import HarmonyError, Role, StreamableParser

from ..core.harmony_tokens import MESSAGE, START

_SWALLOWED = (HarmonyError, UnicodeDecodeError, ValueError)


def _chunk_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def _channel_valid(generated: list[str | None], channel: str | None) -> bool:
    if not generated or generated[-1] != channel:
        generated.append(channel)
    return not ("analysis" in generated and "final" in generated and len(generated) > 2)


def _allowed_tools(tools: Sequence[dict[str, Any]] | None, tool_choice: Any) -> set[str] | None:
    """Tool names a call must use, or None for no filtering (upstream's rule)."""
    if tool_choice == "none":
        return set()
    if tools is None:
        return None
    names = {(t.get("function") or {}).get("name") or t.get("name") or "" for t in tools}
    names.discard("")
    return names


class UpstreamChatBaseline:
    """One request's chat stream as the older upstream line produces it."""

    def __init__(
        self,
        *,
        model: str,
        created: int,
        num_prompt_tokens: int = 0,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        encoding: Any = None,
    ) -> None:
        if encoding is None:
            from ..encoding import load_gpt_oss_encoding

            encoding = load_gpt_oss_encoding()
        self.model, self.created, self.num_prompt_tokens = model, created, num_prompt_tokens
        # handle_streaming_response passes no tools to the parser when tool_choice is "none".
        parser_tools = None if tool_choice == "none" else tools
        self._allowed = _allowed_tools(parser_tools, tool_choice)
        self._parser = StreamableParser(encoding, role=Role.ASSISTANT)
        self._tool_calls: dict[str, dict[str, Any]] = {}
        self._sent_tool_ids: set[str] = set()
        self._generated: list[str | None] = []
        self._state: str | None = None
        self._started = False
        self._has_preamble = False
        self._tokens = 0
        self._aborted = False
        self.finished = False

    def start(self) -> list[Any]:
        return []

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": 0, "delta": delta}
        if finish is not None:
            choice["finish_reason"] = finish
        return {
            "id": _chunk_id(),
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }

    def _usage_chunk(self) -> dict[str, Any]:
        return {
            "id": _chunk_id(),
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": {
                "prompt_tokens": self.num_prompt_tokens,
                "completion_tokens": self._tokens,
                "total_tokens": self.num_prompt_tokens + self._tokens,
            },
        }

    def feed(
        self, token_ids: Sequence[int], *, finished: bool = False, finish_reason: str | None = None
    ) -> list[Any]:
        if self.finished:
            return []
        out: list[Any] = []
        self._tokens += len(token_ids)
        if finished:
            self.finished = True
            if not self._aborted:
                out.append(self._chunk({}, finish_reason))
                out.append(self._usage_chunk())
            out.append("[DONE]")
            return out
        if self._aborted:
            return out
        deltas = self._process(token_ids)
        out.append(self._chunk({"role": "assistant"}))
        for delta in deltas:
            if "should_stop" in delta:
                out.append(self._chunk({}, "stop"))
                out.append(self._usage_chunk())
                self._aborted = True
                return out
            out.append(self._chunk(delta))
        return out

    # -- HarmonyStreamState.process_token_batch ------------------------------------------

    def _process(self, token_ids: Sequence[int]) -> list[dict[str, Any]]:
        parser = self._parser
        deltas: list[dict[str, Any]] = []
        try:
            for token in token_ids:
                prev_channel, prev_recipient = parser.current_channel, parser.current_recipient
                parser.process(token)
                if (
                    prev_channel != parser.current_channel
                    or prev_recipient != parser.current_recipient
                ):
                    if (
                        prev_channel == "commentary"
                        and prev_recipient
                        and "functions." in str(prev_recipient)
                    ):
                        name = str(prev_recipient).split("functions.")[-1]
                        for info in self._tool_calls.values():
                            if info["name"] == name and info["active"]:
                                info["active"] = False
                    if self._state == "commentary_preamble" and self._started:
                        deltas.append({"content": "<|end|>"})
                    self._started = False
                    self._state = None
                if parser.last_content_delta:
                    delta = self._delta(parser)
                    if delta:
                        deltas.append(delta)
        except _SWALLOWED:
            return []  # "Failed to process token batch": the batch's deltas are dropped
        return deltas

    def _delta(self, parser: StreamableParser) -> dict[str, Any] | None:
        text = parser.last_content_delta
        channel, recipient = parser.current_channel, parser.current_recipient
        if not _channel_valid(self._generated, channel):
            return {"should_stop": "Repeated message"}
        if channel == "analysis":
            self._state = "analysis"
            return {"reasoning": text}
        if channel == "commentary":
            if recipient and "functions." in str(recipient):
                name = str(recipient).split("functions.")[-1]
                self._state = "commentary_tool"
                if self._allowed is not None and name not in self._allowed:
                    return None
                call = self._call(name)
                call["arguments"] += text
                first = call["id"] not in self._sent_tool_ids
                self._sent_tool_ids.add(call["id"])
                entry = {
                    "id": call["id"] if first else None,
                    "type": "function",
                    "index": call["index"],
                    "function": {"name": name if first else None, "arguments": text},
                }
                entry = {k: v for k, v in entry.items() if v is not None}
                entry["function"] = {k: v for k, v in entry["function"].items() if v is not None}
                return {"tool_calls": [entry]}
            self._has_preamble = True
            self._state = "commentary_preamble"
            if not self._started:
                self._started = True
                return {"content": f"<|channel|>commentary<|message|>{text}"}
            return {"content": text}
        if channel == "final":
            self._state = "final"
            return {"content": text}
        return None

    def _call(self, name: str) -> dict[str, Any]:
        for info in self._tool_calls.values():
            if info["name"] == name and info["active"]:
                return info
        call_id = f"call_{uuid.uuid4().hex[:8]}"
        info = {
            "id": call_id,
            "name": name,
            "arguments": "",
            "index": len(self._tool_calls),
            "active": True,
        }
        self._tool_calls[call_id] = info
        return info


# -- handle_non_streaming_response / harmony_output_to_openai ----------------------------------


def _strip_incomplete(tokens: list[int]) -> list[int]:
    """Drop a trailing message whose header never reached ``<|message|>``."""
    while tokens:
        try:
            last = len(tokens) - 1 - tokens[::-1].index(START)
        except ValueError:
            break
        if MESSAGE in tokens[last + 1 :]:
            break
        tokens = tokens[:last]
    return tokens


def _text(message: Any) -> str:
    return "".join(getattr(part, "text", str(part)) for part in message.content)


def upstream_chat_completion(
    token_ids: Sequence[int],
    finish_reason: str | None,
    *,
    model: str,
    created: int,
    num_prompt_tokens: int = 0,
    tools: Sequence[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    encoding: Any = None,
) -> dict[str, Any]:
    """The older line's non-streaming ``chat.completion`` for a whole output (as a dict)."""
    if encoding is None:
        from ..encoding import load_gpt_oss_encoding

        encoding = load_gpt_oss_encoding()
    tokens = list(token_ids)
    parser_tools = None if tool_choice == "none" else tools
    allowed = _allowed_tools(parser_tools, tool_choice)
    try:
        messages = encoding.parse_messages_from_completion_tokens(
            _strip_incomplete(tokens), role=Role.ASSISTANT
        )
        message = _map_messages(messages, allowed)
    except Exception:
        message = {"role": "assistant", "content": encoding.decode(tokens)}
    reason = "tool_calls" if message.get("tool_calls") else finish_reason
    return {
        "id": _chunk_id(),
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": {
            "prompt_tokens": num_prompt_tokens,
            "completion_tokens": len(tokens),
            "total_tokens": num_prompt_tokens + len(tokens),
        },
    }


def _map_messages(messages: list[Any], allowed: set[str] | None) -> dict[str, Any]:
    analysis, final = "", ""
    preambles: list[str] = []
    calls: list[dict[str, Any]] = []
    generated: list[str | None] = []
    for msg in messages:
        channel = msg.channel
        if not _channel_valid(generated, channel):
            continue
        if channel == "analysis":
            analysis += _text(msg)
        elif channel == "commentary":
            if msg.recipient and msg.recipient != "assistant":
                call = _tool_call(msg)
                if call and _call_allowed(call["function"]["name"], allowed):
                    calls.append(call)
            else:
                preambles.append(_text(msg))
        elif channel in ("final", None):
            final += _text(msg)
    parts = []
    preamble = "\n".join(preambles).strip()
    if preamble:
        parts.append(f"<|channel|>commentary<|message|>{preamble}<|end|>")
    if final.strip():
        parts.append(final.strip())
    combined = "\n".join(parts)
    result: dict[str, Any] = {"role": "assistant"}
    if analysis.strip():
        result["reasoning"] = analysis.strip()
    if calls:
        result["content"] = combined or None
        result["tool_calls"] = calls
    elif preambles:
        result["content"] = combined
        result["tool_calls"] = []
    else:
        result["content"] = combined
    return result


def _tool_call(msg: Any) -> dict[str, Any] | None:
    args = _text(msg)
    content_type = msg.content_type or ""
    if "<|constrain|>json" in content_type:
        try:
            json.loads(args)
        except ValueError:
            return None
        name = str(msg.recipient).split("functions.")[-1]
    elif "code" in content_type:
        name = str(msg.recipient)
    else:
        return None  # "Unsupported message content type for tool call"
    return {
        "id": f"call_{uuid.uuid4().hex[:8]}",
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def _call_allowed(name: str, allowed: set[str] | None) -> bool:
    if name == "python" or "browser" in name or "container" in name:
        return True
    return allowed is None or name in allowed


__all__ = ["UpstreamChatBaseline", "upstream_chat_completion"]
