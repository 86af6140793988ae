# SPDX-License-Identifier: Apache-2.0
"""The patch ledger: every upstream name this plugin rebinds, why, and when to delete it.

Upstream references are NVIDIA/TensorRT-LLM. Retiring the plugin is a walk down this list:
when upstream ships the fix named in ``remove_when``, delete the entry and its replacement.

1. ``tensorrt_llm.serve.responses_utils.ResponsesStreamingProcessor``
   -> ``trtllm_stream_fix.plugin.processor.FixedResponsesStreamingProcessor``
2. ``tensorrt_llm.serve.openai_server.ResponsesStreamingProcessor`` (same class)
3. ``tensorrt_llm.serve.responses_utils._create_output_content_harmony``
   -> ``trtllm_stream_fix.plugin.replacements.create_output_content_harmony``
4. ``tensorrt_llm.serve.responses_utils._parse_response_input``
   -> ``trtllm_stream_fix.plugin.replacements.parse_response_input``
5. ``tensorrt_llm.serve.responses_utils.guard_responses_stream``
   -> ``trtllm_stream_fix.plugin.replacements.guard_responses_stream``
6. ``tensorrt_llm.serve.openai_server.guard_responses_stream`` (same wrapper)
7. ``tensorrt_llm.serve.postprocess_handlers.chat_harmony_streaming_post_processor``
   -> ``trtllm_stream_fix.plugin.chat.chat_harmony_streaming_post_processor``
8. ``tensorrt_llm.serve.postprocess_handlers.chat_harmony_post_processor``
   -> ``trtllm_stream_fix.plugin.chat.chat_harmony_post_processor``
9. ``tensorrt_llm.serve.openai_server.chat_harmony_streaming_post_processor`` (same function)
10. ``tensorrt_llm.serve.openai_server.chat_harmony_post_processor`` (same function)
11. ``tensorrt_llm.serve.responses_utils.ResponsesResponse``
   -> ``trtllm_stream_fix.plugin.response_model.CompleteResponsesResponse``
12. ``tensorrt_llm.serve.responses_utils._create_response``
   -> ``trtllm_stream_fix.plugin.replacements.create_response``
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LedgerEntry:
    target: str  # dotted name that is rebound
    replacement: str  # dotted name of what it is rebound to
    patch_set: str  # entries of one set are applied and refused together
    why: str
    how: str
    upstream: str  # related upstream issue / pull request
    remove_when: str


STREAMING = "streaming"
NONSTREAMING = "nonstreaming"
INPUT = "input"
GUARD = "guard"
CHAT = "chat"
RESPONSE = "response"
USAGE = "usage"

LEDGER: tuple[LedgerEntry, ...] = (
    LedgerEntry(
        target="tensorrt_llm.serve.responses_utils.ResponsesStreamingProcessor",
        replacement="trtllm_stream_fix.plugin.processor.FixedResponsesStreamingProcessor",
        patch_set=STREAMING,
        why=(
            "_generate_streaming_event_harmony feeds a whole token_ids_diff to the parser and "
            "reads the last token's delta and state only: with stream_interval > 1 deltas are "
            "lost, items are never closed or announced, item ids are empty, tool calls and "
            "preambles are not streamed, the last item is never closed when the stop token is "
            "trimmed, and response.completed mints new ids."
        ),
        how=(
            "Module global rebound to a picklable subclass. For Harmony requests its "
            "process_single_output feeds token_ids_diff with res._done and finish_reason to "
            "ResponsesEventMachine; get_final_response(_non_store) sends the machine's terminal "
            "event. Non-Harmony requests run upstream's methods unchanged. Instances pickled to "
            "PostprocWorkers carry the class by reference, so workers import this module."
        ),
        upstream="NVIDIA/TensorRT-LLM#19223 (open); NVIDIA/TensorRT-LLM#22110 fixes deltas only",
        remove_when=(
            "upstream's Harmony streaming feeds tokens one at a time, receives the finished "
            "flag, closes the last item and reuses streamed ids in the final response"
        ),
    ),
    LedgerEntry(
        target="tensorrt_llm.serve.openai_server.ResponsesStreamingProcessor",
        replacement="trtllm_stream_fix.plugin.processor.FixedResponsesStreamingProcessor",
        patch_set=STREAMING,
        why=(
            "openai_server imports the class by name, so the /v1/responses handler keeps "
            "upstream's class unless this binding is rebound too."
        ),
        how="Module global rebound (or already bound when openai_server imported after 1).",
        upstream="as entry 1",
        remove_when="with entry 1",
    ),
    LedgerEntry(
        target="tensorrt_llm.serve.responses_utils._create_output_content_harmony",
        replacement="trtllm_stream_fix.plugin.replacements.create_output_content_harmony",
        patch_set=NONSTREAMING,
        why=(
            "Non-streaming output must match the stream's final response: upstream drops "
            "preambles, turns analysis-channel tool calls into reasoning items, marks items cut "
            "by the token limit completed, and raises on a cut inside a message header."
        ),
        how=(
            "Wrapper (keeps __wrapped__) returning items from trtllm_stream_fix.core.nonstreaming "
            "and the Harmony messages upstream stores for conversation history."
        ),
        upstream="NVIDIA/TensorRT-LLM#19223",
        remove_when="upstream maps Harmony messages to items like its streaming path",
    ),
    LedgerEntry(
        target="tensorrt_llm.serve.responses_utils._parse_response_input",
        replacement="trtllm_stream_fix.plugin.replacements.parse_response_input",
        patch_set=INPUT,
        why=(
            "An assistant message item sent back as input is rendered without a channel, so a "
            "preamble (phase commentary) the model wrote on the commentary channel comes back "
            "on none, a final answer (phase final_answer) loses the final channel, and a "
            "reasoning item loses the analysis channel."
        ),
        how=(
            "Wrapper (keeps __wrapped__) that sets the channel from the item's phase "
            "(reasoning items: analysis) when upstream left it unset."
        ),
        upstream="NVIDIA/TensorRT-LLM#19223 (Harmony continuation)",
        remove_when=(
            "upstream renders Responses input messages with their phase's channel and "
            "reasoning items on the analysis channel"
        ),
    ),
    LedgerEntry(
        target="tensorrt_llm.serve.responses_utils.guard_responses_stream",
        replacement="trtllm_stream_fix.plugin.replacements.guard_responses_stream",
        patch_set=GUARD,
        why=(
            "On 271a1eda the guard treats only response.completed as final: a server exception "
            "after a response.incomplete or response.failed appends a second error + "
            "response.failed, so events follow the terminal event."
        ),
        how=(
            "Wrapper (keeps __wrapped__) that watches the frames for every terminal event and "
            "gives upstream's guard a terminal_events callback that returns nothing after one; "
            "the exception still propagates."
        ),
        upstream="NVIDIA/TensorRT-LLM#19223 (incomplete responses); fixed in 993c0eec's guard",
        remove_when="upstream's guard treats response.incomplete and response.failed as final",
    ),
    LedgerEntry(
        target="tensorrt_llm.serve.openai_server.guard_responses_stream",
        replacement="trtllm_stream_fix.plugin.replacements.guard_responses_stream",
        patch_set=GUARD,
        why="openai_server imports the guard by name; the handler calls that binding.",
        how="Module global rebound (or already bound when openai_server imported after 5).",
        upstream="as entry 5",
        remove_when="with entry 5",
    ),
    LedgerEntry(
        target="tensorrt_llm.serve.postprocess_handlers.chat_harmony_streaming_post_processor",
        replacement="trtllm_stream_fix.plugin.chat.chat_harmony_streaming_post_processor",
        patch_set=CHAT,
        why=(
            "harmony_adapter's chat streaming: on the older line the response marked done is "
            "never parsed (up to stream_interval-1 tokens lost: the end of the answer, the closing "
            "of tool-call arguments), the role chunk is sent with every response, a tool call on "
            "the analysis channel lands in reasoning, preambles reach content with Harmony markup "
            "and finish_reason is 'stop' after a tool call; the newer line keeps the markup and "
            "the finish reason and aborts after analysis -> preamble -> final."
        ),
        how=(
            "Module global rebound to a module-level function (pickled by reference to "
            "PostprocWorkers). One ChatChunkMachine per request kept on the post-processor args "
            "(created on the first response, released on the last); frames without [DONE] "
            "(the server appends it); a stream that ended with an error aborts the request."
        ),
        upstream="NVIDIA/TensorRT-LLM#11488, #12045, #12292, #12467 (chat delta fixes)",
        remove_when=(
            "upstream's Harmony chat path parses the done response, sends the role once, routes "
            "tool calls on every channel, strips preamble markup and reports tool_calls"
        ),
    ),
    LedgerEntry(
        target="tensorrt_llm.serve.postprocess_handlers.chat_harmony_post_processor",
        replacement="trtllm_stream_fix.plugin.chat.chat_harmony_post_processor",
        patch_set=CHAT,
        why=(
            "harmony_output_to_openai keeps preambles in markup, drops analysis-channel tool "
            "calls into reasoning and tool calls without <|constrain|>json, so the non-streaming "
            "body differs from any correct stream."
        ),
        how=(
            "Module global rebound; build_chat_completion (the streaming machine fed once) "
            "returned as upstream's ChatCompletionResponse when it validates; a generation that "
            "cannot complete raises ValueError with the stream's error message."
        ),
        upstream="as entry 7",
        remove_when="with entry 7",
    ),
    LedgerEntry(
        target="tensorrt_llm.serve.openai_server.chat_harmony_streaming_post_processor",
        replacement="trtllm_stream_fix.plugin.chat.chat_harmony_streaming_post_processor",
        patch_set=CHAT,
        why="openai_server imports the post-processor by name for its PostprocParams.",
        how="Module global rebound (the same function), so pickling finds one object.",
        upstream="as entry 7",
        remove_when="with entry 7",
    ),
    LedgerEntry(
        target="tensorrt_llm.serve.openai_server.chat_harmony_post_processor",
        replacement="trtllm_stream_fix.plugin.chat.chat_harmony_post_processor",
        patch_set=CHAT,
        why="openai_server imports the post-processor by name for its PostprocParams.",
        how="Module global rebound (the same function).",
        upstream="as entry 8",
        remove_when="with entry 8",
    ),
    LedgerEntry(
        target="tensorrt_llm.serve.responses_utils.ResponsesResponse",
        replacement="trtllm_stream_fix.plugin.response_model.CompleteResponsesResponse",
        patch_set=RESPONSE,
        why=(
            "Upstream's ResponsesResponse has no error, incomplete_details, completed_at, "
            "store, prompt_cache_key, safety_identifier (and more fields OpenAI's API always "
            "sends), so the non-streaming body and a stored response lack them; typed "
            "clients other than the Python SDK reject such objects."
        ),
        how=(
            "Module global rebound to a module-level subclass (pickled by reference from "
            "PostprocWorkers). Its from_request keeps upstream's values and adds the "
            "request's envelope (as the streaming processor builds it); its serializer dumps "
            "every OpenAI field in OpenAI's order, null where unset, then every other key "
            "upstream dumped."
        ),
        upstream="none filed; upstream's model comments error and incomplete_details out",
        remove_when="upstream's ResponsesResponse carries every field of OpenAI's Response",
    ),
    LedgerEntry(
        target="tensorrt_llm.serve.responses_utils._create_response",
        replacement="trtllm_stream_fix.plugin.replacements.create_response",
        patch_set=USAGE,
        why=(
            "On the Harmony path upstream's _create_usage gets no reasoning texts, so the "
            "non-streaming body (and a stored non-streaming response) reports "
            "output_tokens_details.reasoning_tokens 0 while the stream's terminal event counts "
            "the analysis-channel tokens: a client comparing stream=True and stream=False "
            "usage for the same generation sees two counts."
        ),
        how=(
            "Wrapper (keeps __wrapped__) that runs upstream's function, then, for use_harmony, "
            "feeds final_res.outputs[0].token_ids to the stream's machine "
            "(core.nonstreaming.build_usage) and sets output_tokens, reasoning_tokens and "
            "total_tokens from its count; input tokens stay upstream's. Module global rebound; "
            "create_response and create_response_non_store (the worker's post-processor) look "
            "it up at call time."
        ),
        upstream=(
            "none filed; upstream's _create_response comments counting Harmony reasoning "
            "as a separate change"
        ),
        remove_when="upstream's non-streaming Harmony usage counts the analysis-channel tokens",
    ),
)


def entries(patch_set: str | None = None) -> tuple[LedgerEntry, ...]:
    """Ledger entries, optionally of one patch set."""
    return tuple(e for e in LEDGER if patch_set is None or e.patch_set == patch_set)


def format_ledger() -> str:
    """The ledger as plain text (for ``doctor`` and the docs)."""
    blocks = []
    for number, entry in enumerate(LEDGER, 1):
        blocks.append(
            f"{number}. {entry.target}\n"
            f"   -> {entry.replacement}  [{entry.patch_set}]\n"
            f"   why: {entry.why}\n"
            f"   how: {entry.how}\n"
            f"   upstream: {entry.upstream}\n"
            f"   remove when: {entry.remove_when}"
        )
    return "\n".join(blocks)
