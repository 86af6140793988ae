# SPDX-License-Identifier: Apache-2.0
"""Stand-in of ``tensorrt_llm.serve.responses_utils`` (Harmony path of the Responses API).

Shapes follow NVIDIA/TensorRT-LLM@271a1edadcfa14c29b9fe4396b2cbee66b812b05; the code is
this project's own. Reproduced on purpose:

* ``ResponsesStreamingProcessor.process_single_output`` looks up the module-level
  ``_generate_streaming_event_harmony`` at call time and does not pass ``res._done``;
* the Harmony generator feeds the whole ``token_ids_diff`` in one call, then reads
  ``parser.state`` and ``parser.last_content_delta`` (the last token only), never sets an
  item id, and emits nothing for tool calls or preambles;
* the final response re-parses ``outputs[0].token_ids`` and mints fresh ids;
* ``_parse_response_input`` renders assistant ``message`` items without a channel.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import OrderedDict
from copy import copy
from typing import Any

from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseFunctionToolCall,
    ResponseInProgressEvent,
    ResponseOutputItem,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
    ResponseReasoningTextDeltaEvent,
    ResponseReasoningTextDoneEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
    ResponseUsage,
)
from openai.types.responses.response_content_part_added_event import PartReasoningText
from openai.types.responses.response_reasoning_item import Content
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from openai_harmony import (
    Author,
    Conversation,
    DeveloperContent,
    Message,
    Role,
    StreamState,
    SystemContent,
    TextContent,
    ToolDescription,
)

from ..executor import GenerationResult
from ..llmapi import SamplingParams
from .harmony_adapter import HarmonyAdapter, get_harmony_adapter
from .openai_protocol import OpenAIBaseModel, ResponsesRequest, ResponsesResponse

logger = logging.getLogger("tensorrt_llm")

RequestOutput = GenerationResult
_harmony_encoding = None


def _random_uuid() -> str:
    return uuid.uuid4().hex


def _get_encoding():
    global _harmony_encoding
    if _harmony_encoding is None:
        _harmony_encoding = get_harmony_adapter().encoding
    return _harmony_encoding


# ---------------------------------------------------------------------------------------
# Request side: Responses input -> Harmony conversation -> prompt tokens
# ---------------------------------------------------------------------------------------


def _parse_response_input(input_msg, prev_responses) -> Message | None:
    if not isinstance(input_msg, dict):
        input_msg = input_msg.model_dump()
    kind = input_msg.get("type", "message")
    if kind == "message":
        role = input_msg["role"]
        content = input_msg["content"]
        prefix = ""
        if role == "system":
            role, prefix = "developer", "Instructions:\n"
        if isinstance(content, str):
            return Message.from_role_and_content(role, prefix + content)
        if isinstance(content, list):
            parts = [TextContent(text=prefix + part["text"]) for part in content]
            return Message.from_role_and_contents(role, parts)
        logger.warning("Responses API: Invalid input message type")
        return None
    if kind == "function_call_output":
        call = next(
            (
                r
                for r in reversed(prev_responses)
                if isinstance(r, ResponseFunctionToolCall) and r.call_id == input_msg["call_id"]
            ),
            None,
        )
        if call is None:
            raise ValueError(f"No call message found for {input_msg['call_id']}")
        return Message.from_author_and_content(
            Author.new(Role.TOOL, f"functions.{call.name}"), input_msg["output"]
        )
    if kind == "reasoning":
        return Message.from_role_and_content(Role.ASSISTANT, input_msg["content"][0]["text"])
    if kind == "function_call":
        msg = Message.from_role_and_content(Role.ASSISTANT, input_msg["arguments"])
        return (
            msg.with_channel("commentary")
            .with_recipient(f"functions.{input_msg['name']}")
            .with_content_type("json")
        )
    raise ValueError(f"Unknown input type: {kind}")


def _get_system_message(reasoning_effort: str | None = None) -> Message:
    return Message.from_role_and_content(Role.SYSTEM, SystemContent.new())


def _get_developer_message(instructions: str | None = None, tools=None) -> Message:
    content = DeveloperContent.new()
    if instructions is not None:
        content = content.with_instructions(instructions)
    functions = [t for t in tools or [] if t.type == "function"]
    if functions:
        content = content.with_function_tools(
            [
                ToolDescription.new(
                    name=t.name, description=t.description or "", parameters=t.parameters
                )
                for t in functions
            ]
        )
    return Message.from_role_and_content(Role.DEVELOPER, content)


def _construct_harmony_messages(
    request: ResponsesRequest, prev_response, prev_msgs: list[Message] | None = None
) -> list[Message]:
    messages: list[Message] = []
    if prev_response is None:
        messages.append(_get_system_message())
        messages.append(_get_developer_message(request.instructions, request.tools))
    else:
        messages.extend(prev_msgs or [])
    if isinstance(request.input, str):
        messages.append(Message.from_role_and_content(Role.USER, request.input))
        return messages
    prev_outputs = copy(prev_response.output) if prev_response is not None else []
    for input_msg in request.input:
        msg = _parse_response_input(input_msg, prev_outputs)
        if msg is not None:
            messages.append(msg)
        if isinstance(input_msg, dict) and input_msg.get("type") == "function_call":
            prev_outputs.append(ResponseFunctionToolCall(**input_msg))
    return messages


def _render_for_completion(messages: list[Message]) -> list[int]:
    conversation = Conversation.from_messages(messages)
    return _get_encoding().render_conversation_for_completion(conversation, Role.ASSISTANT)


async def _create_input_tokens_harmony(
    request, prev_response, prev_msgs, conversation_store, enable_store
) -> list[int]:
    messages = _construct_harmony_messages(request, prev_response, prev_msgs=prev_msgs)
    if enable_store and request.store:
        kept = [m for m in messages if m.channel != "analysis"]
        await conversation_store.store_messages(
            request.request_id, kept, request.previous_response_id
        )
    return _render_for_completion(messages)


async def request_preprocess(
    request: ResponsesRequest,
    prev_response,
    conversation_store,
    enable_store: bool,
    use_harmony: bool,
    tokenizer=None,
    model_config=None,
    processor=None,
    reasoning_parser: str | None = None,
) -> tuple[list[int], SamplingParams]:
    sampling_params = request.to_sampling_params(
        default_sampling_params={
            "stop_token_ids": get_harmony_adapter().get_stop_tokens() if use_harmony else []
        },
        reasoning_parser=reasoning_parser,
    )
    prev_msgs = []
    if enable_store and request.previous_response_id is not None:
        prev_msgs = await conversation_store.get_conversation_history(request.previous_response_id)
    if not use_harmony:
        raise NotImplementedError("the stand-in renders Harmony prompts only")
    input_tokens = await _create_input_tokens_harmony(
        request, prev_response, prev_msgs, conversation_store, enable_store
    )
    return input_tokens, sampling_params


# ---------------------------------------------------------------------------------------
# Final response (non-streaming and response.completed)
# ---------------------------------------------------------------------------------------


def _parse_output_tokens(tokens: list[int]) -> list[Message]:
    return _get_encoding().parse_messages_from_completion_tokens(tokens, role=Role.ASSISTANT)


def _reasoning_item(text: str) -> ResponseReasoningItem:
    return ResponseReasoningItem(
        id=f"rs_{_random_uuid()}",
        summary=[],
        type="reasoning",
        content=[Content(text=text, type="reasoning_text")],
        status=None,
    )


def _parse_output_message_harmony(message: Message) -> list[ResponseOutputItem]:
    if message.author.role != "assistant":
        return []
    items: list[ResponseOutputItem] = []
    recipient = message.recipient
    if message.channel == "analysis":
        items.extend(_reasoning_item(c.text) for c in message.content)
    elif message.channel == "commentary":
        if recipient is None:
            pass  # preambles are dropped
        elif recipient.startswith("functions."):
            items.extend(
                ResponseFunctionToolCall(
                    arguments=c.text,
                    call_id=f"call_{_random_uuid()}",
                    type="function_call",
                    name=recipient.split(".")[-1],
                    id=f"fc_{_random_uuid()}",
                )
                for c in message.content
            )
        elif recipient.startswith(("python", "browser")):
            items.extend(_reasoning_item(c.text) for c in message.content)
        else:
            raise ValueError(f"Unknown recipient: {recipient}")
    elif message.channel == "final":
        items.append(
            ResponseOutputMessage(
                id=f"msg_{_random_uuid()}",
                role="assistant",
                status="completed",
                type="message",
                content=[
                    ResponseOutputText(
                        text=c.text, annotations=[], type="output_text", logprobs=None
                    )
                    for c in message.content
                ],
            )
        )
    else:
        raise ValueError(f"Unknown channel: {message.channel}")
    return items


def finish_reason_mapping(finish_reason: str) -> str:
    mapping = {
        "stop": "completed",
        "length": "incomplete",
        "timeout": "failed",
        "cancelled": "cancelled",
        "not_finished": "incomplete",
    }
    if finish_reason not in mapping:
        raise RuntimeError(f"Unhandled finish reason {finish_reason!r} in finish_reason_mapping")
    return mapping[finish_reason]


def _create_output_content_harmony(
    final_res: RequestOutput,
) -> tuple[list[ResponseOutputItem], list[Message]]:
    output_messages = _parse_output_tokens(final_res.outputs[0].token_ids)
    output_content: list[ResponseOutputItem] = []
    for msg in output_messages:
        output_content.extend(_parse_output_message_harmony(msg))
    return output_content, output_messages


def _create_usage(
    final_res, num_prompt_tokens: int | None = None, tokenizer=None, reasoning_texts=None
) -> ResponseUsage | None:
    if num_prompt_tokens is None:
        prompt = getattr(final_res, "prompt_token_ids", None)
        if prompt is None:
            return None
        num_prompt_tokens = len(prompt)
    output_tokens = sum(len(o.token_ids) for o in final_res.outputs)
    cached_tokens = getattr(final_res, "cached_tokens", None) or 0  # as upstream
    # Disaggregated serving: the context worker's usage, relayed with the hand-off, decides
    # the prompt and cached tokens (the generation worker received the prompt as KV cache).
    ctx_prompt_tokens, ctx_cached_tokens = _ctx_usage_tokens(final_res.outputs)
    if ctx_prompt_tokens is not None:
        num_prompt_tokens, cached_tokens = ctx_prompt_tokens, ctx_cached_tokens
    return ResponseUsage(
        input_tokens=num_prompt_tokens,
        input_tokens_details=InputTokensDetails(cached_tokens=cached_tokens, cache_write_tokens=0),
        output_tokens=output_tokens,
        output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        total_tokens=num_prompt_tokens + output_tokens,
    )


def _ctx_usage_tokens(outputs) -> tuple[int | None, int]:
    """``get_usage_tokens_from_ctx`` of the first output's ``disaggregated_params.ctx_usage``
    (a ``UsageInfo`` dict here)."""
    for output in outputs:
        ctx_usage = getattr(getattr(output, "disaggregated_params", None), "ctx_usage", None)
        if ctx_usage is not None:
            details = ctx_usage.get("prompt_tokens_details") or {}
            return ctx_usage["prompt_tokens"], details.get("cached_tokens") or 0
    return None, 0


def _create_response(
    final_res,
    use_harmony: bool,
    request: ResponsesRequest,
    model_name: str,
    response_creation_time: int,
    sampling_params: SamplingParams,
    reasoning_parser=None,
    tool_parser=None,
    num_prompt_tokens=None,
    streamed_tool_call_ids=None,
    streamed_item_ids=None,
    tokenizer=None,
):
    if not use_harmony:
        text = final_res.outputs[0].text
        output_content = (
            [
                ResponseOutputMessage(
                    id=f"msg_{_random_uuid()}",
                    role="assistant",
                    status="completed",
                    type="message",
                    content=[
                        ResponseOutputText(
                            text=text, annotations=[], type="output_text", logprobs=None
                        )
                    ],
                )
            ]
            if text
            else []
        )
        output_messages = []
    else:
        output_content, output_messages = _create_output_content_harmony(final_res)
    response = ResponsesResponse.from_request(
        request=request,
        sampling_params=sampling_params,
        model_name=model_name,
        created_time=response_creation_time,
        output=output_content,
        status=finish_reason_mapping(final_res.outputs[0].finish_reason),
        usage=_create_usage(final_res, num_prompt_tokens, tokenizer=tokenizer),
    )
    return response, output_messages


async def create_response(
    request,
    sampling_params,
    model_name,
    conversation_store,
    generator=None,
    generation_result=None,
    enable_store=False,
    use_harmony=True,
    create_time=None,
    reasoning_parser=None,
    tool_parser=None,
    num_prompt_tokens=None,
    streamed_tool_call_ids=None,
    streamed_item_ids=None,
    tokenizer=None,
) -> ResponsesResponse:
    final_res = generation_result if generation_result is not None else await generator
    if final_res is None:
        raise RuntimeError("No output generated or provided")
    response, output_messages = _create_response(
        final_res,
        use_harmony,
        request,
        model_name,
        create_time if create_time is not None else int(time.time()),
        sampling_params,
        num_prompt_tokens=num_prompt_tokens,
        tokenizer=tokenizer,
    )
    if enable_store and request.store:
        await conversation_store.store_response(
            resp=response, resp_msgs=output_messages, prev_resp_id=request.previous_response_id
        )
    return response


def create_response_non_store(
    generation_result,
    request,
    sampling_params,
    model_name,
    use_harmony=True,
    create_time=None,
    reasoning_parser=None,
    tool_parser=None,
    num_prompt_tokens=None,
    streamed_tool_call_ids=None,
    streamed_item_ids=None,
    tokenizer=None,
) -> ResponsesResponse:
    response, _ = _create_response(
        generation_result,
        use_harmony,
        request,
        model_name,
        create_time if create_time is not None else int(time.time()),
        sampling_params,
        num_prompt_tokens=num_prompt_tokens,
        tokenizer=tokenizer,
    )
    return response


class ConversationHistoryStore:
    """Keeps responses and Harmony conversations by id (no eviction in the stand-in)."""

    def __init__(self, resp_capacity: int = 16, max_conversations: int = 32) -> None:
        self.responses: OrderedDict[str, Any] = OrderedDict()
        self.conversations: dict[str, list] = {}
        self.response_to_conversation: dict[str, str] = {}

    async def load_response(self, resp_id: str):
        return self.responses.get(resp_id)

    async def store_response(self, resp, resp_msgs=None, prev_resp_id=None) -> None:
        self.responses[resp.id] = resp
        conversation_id = (
            self.response_to_conversation.get(resp.id)
            or self.response_to_conversation.get(prev_resp_id or "")
            or _random_uuid()
        )
        self.conversations.setdefault(conversation_id, []).extend(resp_msgs or [])
        self.response_to_conversation[resp.id] = conversation_id

    async def store_messages(self, resp_id: str, msgs, prev_resp_id) -> None:
        conversation_id = self.response_to_conversation.get(prev_resp_id or "") or _random_uuid()
        self.conversations[conversation_id] = list(msgs)
        self.response_to_conversation[resp_id] = conversation_id

    async def get_conversation_history(self, resp_id: str):
        conversation_id = self.response_to_conversation.get(resp_id)
        return list(self.conversations.get(conversation_id, [])) if conversation_id else []

    async def pop_response(self, resp_id: str | None = None) -> bool:
        return self.responses.pop(resp_id, None) is not None


# ---------------------------------------------------------------------------------------
# Streaming
# ---------------------------------------------------------------------------------------


class ResponsesStreamingStateTracker:
    current_content_index: int = 0
    current_output_index: int = 0
    current_item_id: str = ""
    sent_output_item_added: bool = False
    text_sent: bool = False
    text_buffer: str = ""

    def __init__(self) -> None:
        self.emitted_tool_call_ids: list[tuple[str, str]] = []
        self.emitted_item_ids: list[tuple[str, str]] = []


class ResponsesStreamingEventsHelper:
    """Event factories stamped with the tracker's current index and item id."""

    def __init__(self) -> None:
        self.state_tracker = ResponsesStreamingStateTracker()

    def output_index_increment(self) -> None:
        self.state_tracker.current_output_index += 1

    @property
    def item_id(self) -> str:
        return self.state_tracker.current_item_id

    @item_id.setter
    def item_id(self, value: str) -> None:
        self.state_tracker.current_item_id = value

    @property
    def is_output_item_added_sent(self) -> bool:
        return self.state_tracker.sent_output_item_added

    @is_output_item_added_sent.setter
    def is_output_item_added_sent(self, value: bool) -> None:
        self.state_tracker.sent_output_item_added = value

    @property
    def emitted_tool_call_ids(self) -> list[tuple[str, str]]:
        return self.state_tracker.emitted_tool_call_ids

    @property
    def emitted_item_ids(self) -> list[tuple[str, str]]:
        return self.state_tracker.emitted_item_ids

    def _stamp(self) -> dict[str, Any]:
        t = self.state_tracker
        return {"sequence_number": -1, "output_index": t.current_output_index}

    def _stamp_part(self) -> dict[str, Any]:
        t = self.state_tracker
        return {
            **self._stamp(),
            "item_id": t.current_item_id,
            "content_index": t.current_content_index,
        }

    def get_response_created_event(self, response) -> ResponseCreatedEvent:
        return ResponseCreatedEvent(type="response.created", sequence_number=-1, response=response)

    def get_response_in_progress_event(self, response) -> ResponseInProgressEvent:
        return ResponseInProgressEvent(
            type="response.in_progress", sequence_number=-1, response=response
        )

    def get_output_item_added_event(self, item) -> ResponseOutputItemAddedEvent:
        return ResponseOutputItemAddedEvent(
            type="response.output_item.added", item=item, **self._stamp()
        )

    def get_output_item_done_event(self, item) -> ResponseOutputItemDoneEvent:
        return ResponseOutputItemDoneEvent(
            type="response.output_item.done", item=item, **self._stamp()
        )

    def get_content_part_added_event(self, part) -> ResponseContentPartAddedEvent:
        return ResponseContentPartAddedEvent(
            type="response.content_part.added", part=part, **self._stamp_part()
        )

    def get_content_part_done_event(self, part) -> ResponseContentPartDoneEvent:
        return ResponseContentPartDoneEvent(
            type="response.content_part.done", part=part, **self._stamp_part()
        )

    def get_text_delta_event(self, delta: str, logprobs) -> ResponseTextDeltaEvent:
        return ResponseTextDeltaEvent(
            type="response.output_text.delta", delta=delta, logprobs=logprobs, **self._stamp_part()
        )

    def get_text_done_event(self, text: str, logprobs) -> ResponseTextDoneEvent:
        return ResponseTextDoneEvent(
            type="response.output_text.done", text=text, logprobs=logprobs, **self._stamp_part()
        )

    def get_reasoning_text_delta_event(self, delta: str) -> ResponseReasoningTextDeltaEvent:
        return ResponseReasoningTextDeltaEvent(
            type="response.reasoning_text.delta", delta=delta, **self._stamp_part()
        )

    def get_reasoning_text_done_event(self, text: str) -> ResponseReasoningTextDoneEvent:
        return ResponseReasoningTextDoneEvent(
            type="response.reasoning_text.done", text=text, **self._stamp_part()
        )

    def get_message_output_added_events(self):
        """Non-Harmony path: open a message item once, under a fresh ``msg_`` id."""
        if self.is_output_item_added_sent:
            return
        self.is_output_item_added_sent = True
        self.item_id = f"msg_{_random_uuid()}"
        self.state_tracker.emitted_item_ids.append(("message", self.item_id))
        yield self.get_output_item_added_event(
            ResponseOutputMessage(
                id=self.item_id, type="message", role="assistant", content=[], status="in_progress"
            )
        )
        yield self.get_content_part_added_event(
            ResponseOutputText(type="output_text", text="", annotations=[], logprobs=[])
        )


def _generate_streaming_event(
    output,
    request,
    finished_generation: bool,
    streaming_events_helper: ResponsesStreamingEventsHelper,
    reasoning_parser_id=None,
    tool_parser_id=None,
    reasoning_parser_dict=None,
    tool_parser_dict=None,
):
    """Non-Harmony path (text only in the stand-in): one message item, closed on finish."""
    helper = streaming_events_helper
    if output.text_diff:
        yield from helper.get_message_output_added_events()
        helper.state_tracker.text_buffer += output.text_diff
        yield helper.get_text_delta_event(output.text_diff, [])
    if finished_generation and helper.is_output_item_added_sent:
        text, helper.state_tracker.text_buffer = helper.state_tracker.text_buffer, ""
        part = ResponseOutputText(text=text, annotations=[], type="output_text", logprobs=None)
        yield helper.get_text_done_event(text, [])
        yield helper.get_content_part_done_event(part)
        yield helper.get_output_item_done_event(
            ResponseOutputMessage(
                id=helper.item_id,
                content=[part],
                role="assistant",
                status="completed",
                type="message",
            )
        )
        helper.output_index_increment()
        helper.is_output_item_added_sent = False


def _generate_streaming_event_harmony(
    harmony_adapter: HarmonyAdapter,
    stream_request_id: str,
    output: RequestOutput,
    request: ResponsesRequest,
    streaming_events_helper: ResponsesStreamingEventsHelper,
):
    helper = streaming_events_helper
    tools = [tool.model_dump() for tool in request.tools]
    messages = harmony_adapter.stateful_stream_harmony_tokens_to_openai_messages(
        stream_request_id, output.token_ids_diff, tools, request.tool_choice
    )
    stream_state = harmony_adapter.get_stream_state(stream_request_id)
    assert stream_state is not None
    parser = stream_state.get_parser()

    # Only true when the last token of the batch closed a message.
    if parser.state == StreamState.EXPECT_START:
        helper.output_index_increment()
        helper.is_output_item_added_sent = False
        if messages:
            closed = messages[-1]
            text = closed.content[0].text
            if closed.recipient is not None:
                pass  # tool calls are not streamed
            elif closed.channel == "analysis":
                yield helper.get_reasoning_text_done_event(text)
                yield helper.get_output_item_done_event(
                    ResponseReasoningItem(
                        type="reasoning",
                        id=helper.item_id,
                        summary=[],
                        status="completed",
                        content=[Content(text=text, type="reasoning_text")],
                    )
                )
            elif closed.channel == "final":
                part = ResponseOutputText(type="output_text", text=text, annotations=[])
                yield helper.get_text_done_event(text, [])
                yield helper.get_content_part_done_event(part)
                yield helper.get_output_item_done_event(
                    ResponseOutputMessage(
                        id=helper.item_id,
                        type="message",
                        role="assistant",
                        content=[part],
                        status="completed",
                    )
                )

    # The delta of the batch's last token only.
    delta = parser.last_content_delta
    if not delta or parser.current_recipient is not None:
        return
    if parser.current_channel == "final":
        if not helper.is_output_item_added_sent:
            helper.is_output_item_added_sent = True
            yield helper.get_output_item_added_event(
                ResponseOutputMessage(
                    id=helper.item_id,
                    type="message",
                    role="assistant",
                    content=[],
                    status="in_progress",
                )
            )
            yield helper.get_content_part_added_event(
                ResponseOutputText(type="output_text", text="", annotations=[], logprobs=[])
            )
        yield helper.get_text_delta_event(delta, [])
    elif parser.current_channel == "analysis":
        if not helper.is_output_item_added_sent:
            helper.is_output_item_added_sent = True
            yield helper.get_output_item_added_event(
                ResponseReasoningItem(
                    id=helper.item_id, type="reasoning", summary=[], status="in_progress"
                )
            )
            yield helper.get_content_part_added_event(
                PartReasoningText(type="reasoning_text", text="")
            )
        yield helper.get_reasoning_text_delta_event(delta)


class ResponsesStreamingProcessor:
    def __init__(
        self,
        request: ResponsesRequest,
        sampling_params: SamplingParams,
        model_name: str,
        create_time: int | None = None,
        conversation_store: ConversationHistoryStore | None = None,
        enable_store: bool = False,
        use_harmony: bool = True,
        reasoning_parser: str | None = None,
        tool_parser: str | None = None,
    ):
        self.model_name = model_name
        self.request = request
        self.sampling_params = sampling_params
        self.sequence_number = 0
        self.streaming_events_helper = ResponsesStreamingEventsHelper()
        self.response_creation_time = create_time if create_time is not None else int(time.time())
        self.final_res: RequestOutput | None = None
        self.reasoning_parser_dict: dict = {}
        self.tool_parser_dict: dict = {}
        self.stream_request_id = f"responses-api-{request.request_id}"
        self.conversation_store = conversation_store
        self.enable_store = enable_store
        self.use_harmony = use_harmony
        self.reasoning_parser = reasoning_parser
        self.tool_parser = tool_parser

    def _send_event(self, event: OpenAIBaseModel):
        if hasattr(event, "sequence_number"):
            event.sequence_number = self.sequence_number
        self.sequence_number += 1
        event_type = getattr(event, "type", "unknown")
        return f"event: {event_type}\ndata: {event.model_dump_json(indent=None)}\n\n"

    def _snapshot(self, status: str, output=None, usage=None) -> dict:
        return ResponsesResponse.from_request(
            request=self.request,
            sampling_params=self.sampling_params,
            model_name=self.model_name,
            created_time=self.response_creation_time,
            output=output or [],
            status=status,
            usage=usage,
        ).model_dump()

    def get_initial_responses(self) -> list[str]:
        snapshot = self._snapshot("in_progress")
        helper = self.streaming_events_helper
        return [
            self._send_event(helper.get_response_created_event(snapshot)),
            self._send_event(helper.get_response_in_progress_event(snapshot)),
        ]

    async def get_final_response(
        self, final_res: RequestOutput, num_prompt_tokens: int | None = None, tokenizer=None
    ) -> str:
        final_response = await create_response(
            generator=None,
            request=self.request,
            sampling_params=self.sampling_params,
            model_name=self.model_name,
            conversation_store=self.conversation_store,
            generation_result=final_res,
            enable_store=self.enable_store,
            use_harmony=self.use_harmony,
            create_time=self.response_creation_time,
            num_prompt_tokens=num_prompt_tokens,
            tokenizer=tokenizer,
        )
        return self._send_event(
            ResponseCompletedEvent(
                type="response.completed", sequence_number=-1, response=final_response.model_dump()
            )
        )

    def get_final_response_non_store(
        self, final_res: RequestOutput, num_prompt_tokens: int | None = None, tokenizer=None
    ) -> str:
        final_response = create_response_non_store(
            generation_result=final_res,
            request=self.request,
            sampling_params=self.sampling_params,
            model_name=self.model_name,
            use_harmony=self.use_harmony,
            create_time=self.response_creation_time,
            num_prompt_tokens=num_prompt_tokens,
            tokenizer=tokenizer,
        )
        return self._send_event(
            ResponseCompletedEvent(
                type="response.completed", sequence_number=-1, response=final_response.model_dump()
            )
        )

    def process_single_output(self, res: GenerationResult) -> list[str]:
        output = res.outputs[0]
        if self.use_harmony:
            event_generator = _generate_streaming_event_harmony(
                harmony_adapter=get_harmony_adapter(),
                stream_request_id=self.stream_request_id,
                output=output,
                request=self.request,
                streaming_events_helper=self.streaming_events_helper,
            )
        else:
            event_generator = _generate_streaming_event(
                output=output,
                request=self.request,
                finished_generation=res._done,
                streaming_events_helper=self.streaming_events_helper,
            )
        return [self._send_event(event) for event in event_generator]

    def get_stream_failed_events(self, cause: str, detail: str, events_sent: int = 0) -> list[str]:
        """``error`` + ``response.failed`` for a stream that stopped early (271a1eda)."""
        from openai.types.responses import ResponseErrorEvent, ResponseFailedEvent

        self.sequence_number = max(self.sequence_number, events_sent)
        error = self._send_event(
            ResponseErrorEvent(type="error", sequence_number=-1, code=cause, message=detail)
        )
        snapshot = self._snapshot("failed")
        snapshot["error"] = {"code": "server_error", "message": detail}
        failed = self._send_event(
            ResponseFailedEvent(type="response.failed", sequence_number=-1, response=snapshot)
        )
        return [error, failed]


async def guard_responses_stream(stream, terminal_events, on_termination=None):
    """271a1eda's guard: on an exception before ``response.completed`` (the only event it
    treats as final) it yields ``terminal_events(cause, detail, events_sent)``, re-raises."""
    import asyncio

    events_sent, completed = 0, False
    try:
        async for chunk in stream:
            if not completed:
                events_sent += chunk.count("\n\n")
                completed = "event: response.completed" in chunk
            yield chunk
    except (asyncio.CancelledError, GeneratorExit):
        raise
    except Exception as exc:
        if not completed:
            for frame in terminal_events("internal_error", type(exc).__name__, events_sent):
                yield frame
        raise


def stamp_sse_sequence_number(frame: str, sequence_number: int) -> str:
    """Rewrite the ``sequence_number`` of one SSE frame (egress renumbering)."""
    head, sep, rest = frame.partition("data: ")
    if not sep:
        return frame
    payload_text, newline, tail = rest.partition("\n")
    try:
        payload = json.loads(payload_text)
    except ValueError:
        return frame
    if not isinstance(payload, dict) or "sequence_number" not in payload:
        return frame
    payload["sequence_number"] = sequence_number
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return f"{head}data: {text}{newline}{tail}"


async def process_streaming_events(
    generator,
    request,
    sampling_params,
    model_name,
    conversation_store,
    enable_store=False,
    use_harmony=True,
    create_time=None,
    reasoning_parser=None,
    tool_parser=None,
    tokenizer=None,
):
    processor = ResponsesStreamingProcessor(
        request=request,
        sampling_params=sampling_params,
        model_name=model_name,
        create_time=create_time,
        conversation_store=conversation_store,
        enable_store=enable_store,
        use_harmony=use_harmony,
        reasoning_parser=reasoning_parser,
        tool_parser=tool_parser,
    )
    for frame in processor.get_initial_responses():
        yield frame
    final_res = None
    async for res in generator:
        final_res = res
        for frame in processor.process_single_output(res):
            yield frame
    yield await processor.get_final_response(final_res, tokenizer=tokenizer)


# -- the 993c0eec version line -------------------------------------------------------------
# TRTLLM_STANDIN_LINE=993c0eec reproduces that commit's shapes (read from the real file):
# the processor numbers its opening pair 0 and 1 itself and starts ``sequence_number`` at 2,
# ``get_final_response(self, final_res, num_prompt_tokens=None)`` has no ``tokenizer``, the
# guard treats every terminal event as final and the egress does not restamp.
STANDIN_LINE = __import__("os").environ.get("TRTLLM_STANDIN_LINE", "271a1eda")

if STANDIN_LINE == "993c0eec":
    _Processor271 = ResponsesStreamingProcessor

    class ResponsesStreamingProcessor(_Processor271):  # type: ignore[no-redef]
        def __init__(
            self,
            request,
            sampling_params,
            model_name,
            create_time=None,
            conversation_store=None,
            enable_store=False,
            use_harmony=True,
            reasoning_parser=None,
            tool_parser=None,
        ):
            super().__init__(
                request,
                sampling_params,
                model_name,
                create_time,
                conversation_store,
                enable_store,
                use_harmony,
                reasoning_parser,
                tool_parser,
            )
            self.sequence_number = 2

        def get_initial_responses(self) -> list[str]:
            saved = self.sequence_number
            self.sequence_number = 0
            frames = super().get_initial_responses()
            self.sequence_number = saved
            return frames

        async def get_final_response(self, final_res, num_prompt_tokens=None) -> str:
            return await super().get_final_response(final_res, num_prompt_tokens)

        def get_stream_failed_events(self, cause, detail, events_sent=None) -> list[str]:
            if events_sent is not None:
                self.sequence_number = events_sent
            return super().get_stream_failed_events(cause, detail, self.sequence_number)

    async def guard_responses_stream(stream, terminal_events):  # type: ignore[no-redef]
        events_sent, completed = 0, False
        try:
            async for chunk in stream:
                if not completed:
                    events_sent += chunk.count("\n\n")
                    completed = any(
                        f"event: response.{kind}" in chunk
                        for kind in ("completed", "incomplete", "failed")
                    )
                yield chunk
        except Exception as exc:
            if completed:
                raise
            for frame in terminal_events("internal_error", type(exc).__name__, events_sent):
                yield frame
            raise
