# SPDX-License-Identifier: Apache-2.0
"""Upstream-equivalent baseline: how TensorRT-LLM main streams gpt-oss Responses today.

This is OUR OWN re-implementation, written from a description of upstream's algorithm
(``_generate_streaming_event_harmony`` and the Harmony final-response builder in
``tensorrt_llm/serve/responses_utils.py``) and checked against events recorded from the
real upstream code. It contains no upstream code. It exists to demonstrate the defects
and to serve as the "before" of the benchmarks; do not use it to serve traffic.

Per engine response, like upstream:

- the whole ``token_ids_diff`` goes to one Harmony parser; a Harmony error is swallowed
  (the completed-message list then reads as empty) and the rest of the batch is skipped;
- only the parser's state after the batch is read: ``last_content_delta`` (the delta of
  the *last* token), ``current_channel`` and ``current_recipient``; if the parser waits
  for ``<|start|>``, the output index is advanced *before* the done events of the last
  completed message are sent;
- every ``item_id`` is ``""``; tool calls and preambles get no events (the index still
  advances); reasoning items get no ``content_part.done``; the open item is never closed;
- on the finished response, ``response.completed`` carries a response re-parsed from all
  tokens fed, with fresh ids; a length cut is still sent as ``response.completed`` with
  status ``incomplete``. When that parse raises (as upstream does after a Harmony error or
  a cut inside a header), the exception propagates from ``feed``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any, cast

from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
    ResponseReasoningTextDeltaEvent,
    ResponseReasoningTextDoneEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
)
from openai.types.responses.response_content_part_added_event import PartReasoningText
from openai.types.responses.response_function_web_search import (
    ActionFind,
    ActionOpenPage,
    ActionSearch,
)
from openai.types.responses.response_reasoning_item import Content as ReasoningContent
from openai_harmony import HarmonyError, Role, StreamableParser, StreamState

from ..core import events as ev
from ..core.context import ResponseContext
from ..core.response import response_envelope, typed_tools, usage

_STATUS = {
    None: "completed",
    "stop": "completed",
    "length": "incomplete",
    "timeout": "failed",
    "cancelled": "cancelled",
}
_SWALLOWED = (HarmonyError, UnicodeDecodeError, ValueError)


def _uid(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _text(text: str) -> ResponseOutputText:
    return ResponseOutputText.model_construct(
        type="output_text", text=text, annotations=[], logprobs=[]
    )


def _reasoning(item_id: str, text: str, status: str | None) -> ResponseReasoningItem:
    content = [ReasoningContent.model_construct(type="reasoning_text", text=text)]
    return ResponseReasoningItem.model_construct(
        id=item_id, type="reasoning", summary=[], content=content, status=status
    )


def _web_search(recipient: str, arguments: str) -> ResponseFunctionWebSearch:
    args = json.loads(arguments)  # upstream lets a JSON error escape
    if recipient == "browser.search":
        action: Any = ActionSearch.model_construct(
            type="search", query=f"cursor:{args.get('query', '')}"
        )
    elif recipient == "browser.open":
        action = ActionOpenPage.model_construct(
            type="open_page", url=f"cursor:{args.get('url', '')}"
        )
    elif recipient == "browser.find":
        action = ActionFind.model_construct(
            type="find", pattern=args["pattern"], url=f"cursor:{args.get('url', '')}"
        )
    else:
        raise ValueError(f"unknown browser action: {recipient}")
    return ResponseFunctionWebSearch.model_construct(
        id=_uid("ws"), type="web_search_call", status="completed", action=action
    )


def final_output_items(messages: Sequence[Any]) -> list[Any]:
    """Upstream's mapping of parsed Harmony messages to final-response items (fresh ids).

    Preambles are dropped; a function call on the analysis channel becomes reasoning
    (the channel is tested before the recipient); unknown channels or recipients raise.
    """
    items: list[Any] = []
    for message in messages:
        if message.author.role != Role.ASSISTANT:
            continue
        recipient, channel = message.recipient, message.channel
        texts = [part.text for part in message.content]
        if recipient is not None and recipient.startswith("browser."):
            if len(texts) != 1:
                raise ValueError("a browser call has exactly one content part")
            items.append(_web_search(recipient, texts[0]))
        elif channel == "analysis":
            items.extend(_reasoning(_uid("rs"), text, None) for text in texts)
        elif channel == "commentary":
            if recipient is None:
                continue
            if recipient.startswith("functions."):
                name = recipient.split(".")[-1]
                items.extend(
                    ResponseFunctionToolCall.model_construct(
                        type="function_call",
                        id=_uid("fc"),
                        call_id=_uid("call"),
                        name=name,
                        arguments=text,
                    )
                    for text in texts
                )
            elif recipient.startswith(("python", "browser")):
                items.extend(_reasoning(_uid("rs"), text, None) for text in texts)
            else:
                raise ValueError(f"unknown recipient: {recipient}")
        elif channel == "final":
            items.append(
                ResponseOutputMessage.model_construct(
                    id=_uid("msg"),
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[
                        ResponseOutputText.model_construct(
                            type="output_text", text=t, annotations=[], logprobs=None
                        )
                        for t in texts
                    ],
                )
            )
        else:
            raise ValueError(f"unknown channel: {channel}")
    return items


class UpstreamBaselineStream:
    """One request streamed the way upstream TensorRT-LLM main does (defects included)."""

    def __init__(
        self,
        context: ResponseContext,
        *,
        encoding: Any = None,
        first_sequence_number: int = 0,
    ) -> None:
        if encoding is None:
            from ..encoding import load_gpt_oss_encoding

            encoding = load_gpt_oss_encoding()
        self.context = context
        self._encoding = encoding
        self._parser = StreamableParser(encoding, Role.ASSISTANT)
        self._tools = typed_tools(context.tools)
        self._tokens: list[int] = []
        self._seq = first_sequence_number
        self._output_index = 0
        self._added_sent = False
        self.harmony_errors = 0
        self.finished = False
        self.final_response: Any = None

    def _next(self) -> int:
        seq = self._seq
        self._seq += 1
        return seq

    def start(self) -> list[Any]:
        """``response.created`` and ``response.in_progress``."""
        snapshot = response_envelope(self.context, self._tools, [], status="in_progress")
        return [
            ev.lifecycle("response.created", snapshot, self._next()),
            ev.lifecycle("response.in_progress", snapshot, self._next()),
        ]

    def _process(self, token_ids: Sequence[int]) -> list[Any]:
        """Feed the whole batch; like upstream's adapter, a Harmony error reads as ``[]``."""
        parser = self._parser
        try:
            for token in token_ids:
                # Upstream's adapter reads the channel and recipient around every token to
                # track transitions; that changes no event here, but it is part of the cost.
                before = (parser.current_channel, parser.current_recipient)
                parser.process(token)
                _ = before != (parser.current_channel, parser.current_recipient)
        except _SWALLOWED:
            self.harmony_errors += 1
            return []
        return parser.messages

    def feed(
        self,
        token_ids: Sequence[int],
        *,
        finished: bool = False,
        finish_reason: str | None = None,
    ) -> list[Any]:
        """Events for one engine response; raises when the final re-parse raises."""
        if self.finished:
            return []
        self._tokens.extend(token_ids)
        messages = self._process(token_ids)
        parser = self._parser
        out: list[Any] = []
        if parser.state == StreamState.EXPECT_START:
            self._output_index += 1
            self._added_sent = False
            if messages:
                self._done_events(messages[-1], out)
        delta = parser.last_content_delta
        if delta and parser.current_recipient is None:
            channel = parser.current_channel
            if channel == "final":
                self._delta_events(True, delta, out)
            elif channel == "analysis":
                self._delta_events(False, delta, out)
        if finished:
            out.append(self._completed(finish_reason))
            self.finished = True
        return out

    # -- event builders -----------------------------------------------------------------

    def _item_event(self, cls: Any, type_: str, index: int, item: Any) -> Any:
        """An ``output_item.added`` / ``.done`` event with the next sequence number."""
        return cls.model_construct(
            type=type_, item=item, output_index=index, sequence_number=self._next()
        )

    def _part_event(self, cls: Any, type_: str, index: int, **fields: Any) -> Any:
        """A content-level event as upstream sends it: ``item_id`` "", content index 0."""
        return cls.model_construct(
            type=type_,
            item_id="",
            output_index=index,
            content_index=0,
            **fields,
            sequence_number=self._next(),
        )

    def _done_events(self, message: Any, out: list[Any]) -> None:
        if message.recipient is not None:
            return  # tool calls: no events
        index = self._output_index  # already advanced: one past the item's added event
        text = message.content[0].text if message.content else ""
        if message.channel == "analysis":
            out.append(
                self._part_event(
                    ResponseReasoningTextDoneEvent, "response.reasoning_text.done", index, text=text
                )
            )
            item: Any = _reasoning("", text, "completed")
        elif message.channel == "final":
            part = ResponseOutputText.model_construct(type="output_text", text=text, annotations=[])
            out.append(
                self._part_event(
                    ResponseTextDoneEvent,
                    "response.output_text.done",
                    index,
                    text=text,
                    logprobs=[],
                )
            )
            out.append(
                self._part_event(
                    ResponseContentPartDoneEvent, "response.content_part.done", index, part=part
                )
            )
            item = ResponseOutputMessage.model_construct(
                id="", type="message", role="assistant", status="completed", content=[part]
            )
        else:
            return  # preamble: no events, the index advanced anyway
        out.append(
            self._item_event(ResponseOutputItemDoneEvent, "response.output_item.done", index, item)
        )

    def _delta_events(self, final: bool, delta: str, out: list[Any]) -> None:
        index = self._output_index
        if not self._added_sent:
            self._added_sent = True
            if final:
                item: Any = ResponseOutputMessage.model_construct(
                    id="", type="message", role="assistant", status="in_progress", content=[]
                )
                part: Any = _text("")
            else:
                item = ResponseReasoningItem.model_construct(
                    id="", type="reasoning", summary=[], status="in_progress"
                )
                part = PartReasoningText.model_construct(type="reasoning_text", text="")
            out.append(
                self._item_event(
                    ResponseOutputItemAddedEvent, "response.output_item.added", index, item
                )
            )
            out.append(
                self._part_event(
                    ResponseContentPartAddedEvent, "response.content_part.added", index, part=part
                )
            )
        if final:
            out.append(
                self._part_event(
                    ResponseTextDeltaEvent,
                    "response.output_text.delta",
                    index,
                    delta=delta,
                    logprobs=[],
                )
            )
        else:
            kind = ResponseReasoningTextDeltaEvent
            out.append(self._part_event(kind, "response.reasoning_text.delta", index, delta=delta))

    def _completed(self, finish_reason: str | None) -> ResponseCompletedEvent:
        """``response.completed`` from a re-parse of every token fed (may raise)."""
        if finish_reason not in _STATUS:
            raise ValueError(f"unhandled finish reason {finish_reason!r}")
        messages = self._encoding.parse_messages_from_completion_tokens(
            self._tokens, role=Role.ASSISTANT
        )
        response = response_envelope(
            self.context,
            self._tools,
            [],
            status=_STATUS[finish_reason],
            usage_=usage(self.context.num_prompt_tokens, len(self._tokens), 0),
        )
        response = response.model_copy(update={"output": final_output_items(messages)})
        self.final_response = response
        event = ev.lifecycle("response.completed", response, self._next())
        return cast(ResponseCompletedEvent, event)  # LIFECYCLE's class for the type


def upstream_nonstreaming(
    context: ResponseContext, token_ids: Sequence[int], finish_reason: str | None, *, encoding: Any
) -> Any:
    """Upstream's non-streaming response: every token re-parsed at once (raises as it does)."""
    stream = UpstreamBaselineStream(context, encoding=encoding)
    stream._tokens = list(token_ids)
    return stream._completed(finish_reason).response
