# SPDX-License-Identifier: Apache-2.0
"""The patch registry: every upstream name the plugin rebinds, as data.

One :class:`Patch` per patch: the name it rebinds (and the modules that import that name),
the targets whose shapes gate it with the shapes recorded per upstream version line, the
replacement as ``"module:attr"``, whether it wraps upstream's object or replaces it, its
group, why / how / when to remove it, and how ``upstream-pr`` carries it. One :class:`Group`
per patch group: patches of a group are applied or refused together; the self-test proves
each installed group with its probe. The installer, ``doctor``, the self-test,
``upstream-pr`` and the tests read this module; adding a version line is adding its shapes
here, adding a group is one ``Group`` and its patches.

Upstream version lines the shapes were recorded from (NVIDIA/TensorRT-LLM; docs/real-upstream.md
and ``versions.py`` list the files with sha256):

``responses_utils.py``

* ``early-2026``: the first version with ``ResponsesStreamingProcessor`` (74.5k characters);
  the final-response methods take only ``final_res``; ``_create_response`` not read;
* ``tool-call-ids``: code-index id 71051154162 (commit not exposed; 151,006 characters),
  between early-2026 and 271a1eda: ``_create_response`` takes ``streamed_tool_call_ids`` but
  no ``streamed_item_ids``, no ``stamp_sse_sequence_number``;
* ``271a1eda``: commit 271a1edadcfa14c29b9fe4396b2cbee66b812b05 (primary reference);
* ``terminal-event``: code-index id 71053574395 (commit not exposed; 180,040 characters),
  whose final-response methods return ``_stream_terminal_event(...)``;
* ``993c0eec``: commit 993c0eec9327a503caebf2ba8b733ec20a0fbc40 (divergent lineage):
  ``get_final_response(self, final_res, num_prompt_tokens=None)`` has no ``tokenizer``,
  ``guard_responses_stream(stream, terminal_events)`` no ``on_termination`` and
  ``_create_response`` names its streamed calls ``streamed_tool_calls``.
* ``83ab45a5``: commit 83ab45a50d169b08e29e9bf2f46fc66b3838cc37 (code-index id 932578526,
  36,703 characters), the pre-class line: no ``ResponsesStreamingProcessor``; its
  ``openai_server`` (e7f7345e) imports ``process_streaming_events`` and ``create_response``
  as ``responses_api_process_streaming_events`` / ``responses_api_create_response``. Its
  targets carry ``line=PRE_CLASS_LINE`` and the class line's ``line=CLASS_LINE``
  (``targets.detect_line``).

``postprocess_handlers.py`` (the Harmony chat post-processors ``openai_server.chat_harmony``
hands every engine response to; both lines call them as ``(rsp, args)``)

* ``harmony-38134b13``: the postprocess_handlers of the harmony_adapter 38134b13 line
  (code-index id 45575800, 19,020 characters);
* ``01bf1923``: commit 01bf19231d29d8f0766e31c117d1cf39ed00d3d5 (paired with 271a1eda).

``openai_protocol.py`` (``ResponsesResponse``, imported by name into ``responses_utils``)

* ``0076e939`` (commit 0076e9390e1ed11515f149eec356f5a03f4a00d8) and ``18643ffd`` (commit
  18643ffda86feb241b3cf8896657595e48a6a1b6).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal

from .targets import (
    CLASS_LINE,
    OPENAI_PROTOCOL,
    OPENAI_SERVER,
    POSTPROCESS_HANDLERS,
    PRE_CLASS_LINE,
    RESPONSES_UTILS,
    Target,
    shape,
)
from .upstream_names import SAMPLING_PARAMS

EARLY = "early-2026"
TOOL_CALL_IDS = "tool-call-ids"
L271 = "271a1eda"
TERMINAL = "terminal-event"
L993 = "993c0eec"
RESPONSES_LINES = (EARLY, TOOL_CALL_IDS, L271, TERMINAL, L993)
CHAT_LINES = ("harmony-38134b13", "01bf1923")
PROTOCOL_LINES = ("0076e939", "18643ffd")
L83 = "83ab45a5"  # the pre-class line


@dataclass(frozen=True)
class Group:
    """Patches applied or refused together, proved together by the self-test."""

    name: str
    title: str
    required: bool  # the fix is not in place without it (the self-test fails when it is off)
    when_off: str  # what the operator gets while the group is off
    probe: str | None = None  # "module:function" the self-test runs when the group installed
    line: str | None = None  # required only on this module design (None: on every line)
    #: "module:function" returning why this environment cannot run the group (None: it can);
    #: a reason refuses the group like a misfit target
    requires: str | None = None


@dataclass(frozen=True)
class Patch:
    """One rebound upstream name (see the module docstring)."""

    name: str
    target: str  # dotted name rebound
    replacement: str  # "module:attr"
    action: Literal["wraps", "replaces"]  # wraps: replacement(original); replaces: the object
    group: str
    checks: tuple[Target, ...]  # the first is the target itself
    why: str
    how: str
    upstream: str
    remove_when: str
    aliases: tuple[str, ...] = ()  # modules that import the name: rebound there too
    alias_attr: str = ""  # the name the aliases import it under, when it differs
    optional: bool = False  # a version without the target has nothing to patch here
    carried: str | None = None  # how upstream-pr carries it (None: it does not)
    carried_if: str | None = None  # ... only where it edits this file of the tree

    @property
    def module(self) -> str:
        return self.target.rsplit(".", 1)[0]

    @property
    def attr(self) -> str:
        return self.target.rsplit(".", 1)[1]

    @property
    def bindings(self) -> tuple[str, ...]:
        """Every dotted name rebound: the target, then its aliases."""
        return (self.target, *(f"{m}.{self.alias_attr or self.attr}" for m in self.aliases))

    @property
    def all_checks(self) -> tuple[Target, ...]:
        """``checks`` plus one binding check per alias (it must name upstream's object)."""
        aliases = (
            Target(
                m,
                self.alias_attr or self.attr,
                kind="binding",
                optional=self.optional,
                source=self.module,
                source_attr=self.attr,
                line=self.checks[0].line,
            )
            for m in self.aliases
        )
        return (*self.checks, *aliases)

    def replacement_for(self, original: Any) -> Any:
        """What the target is rebound to (imports the replacement's module now)."""
        module, attr = self.replacement.split(":")
        obj = getattr(importlib.import_module(module), attr)
        return obj(original) if self.action == "wraps" else obj


RESPONSES = "responses"
PRE_CLASS = "pre-class"
CHAT = "chat"
RESPONSE_MODEL = "response"
USAGE = "usage"
STORE = "store"
WEBSOCKET = "websocket"
COMPACTION = "compaction"
_PROBES = "trtllm_stream_fix.plugin.probes"

GROUPS: tuple[Group, ...] = (
    Group(
        RESPONSES,
        "Responses streaming",
        required=True,
        when_off=(
            "upstream's Harmony Responses streaming runs: at stream_interval > 1 text is lost, "
            "items have empty ids and are never closed, tool calls are not streamed"
        ),
        probe=f"{_PROBES}:responses_streams",
        line=CLASS_LINE,
    ),
    Group(
        PRE_CLASS,
        "Responses streaming (pre-class line)",
        required=True,
        when_off=(
            "upstream's process_streaming_events runs: at stream_interval > 1 text is lost, "
            "items have empty ids and are never closed, the non-streaming body has no usage"
        ),
        probe=f"{_PROBES}:pre_class_streams",
        line=PRE_CLASS_LINE,
    ),
    Group(
        CHAT,
        "Chat Completions",
        required=False,
        when_off=(
            "upstream's Harmony chat post-processors run: tokens of the last engine response "
            "can be lost, preambles keep Harmony markup, finish_reason is 'stop' after a tool call"
        ),
        probe=f"{_PROBES}:chat_streams",
    ),
    Group(
        RESPONSE_MODEL,
        "Response model",
        required=False,
        when_off=(
            "non-streaming bodies and stored responses lack fields OpenAI always sends "
            "(error, incomplete_details, completed_at, store, ...); typed clients may reject them"
        ),
        probe=f"{_PROBES}:response_bodies",
    ),
    Group(
        USAGE,
        "Non-streaming usage",
        required=False,
        when_off=(
            "a non-streaming Harmony body reports reasoning_tokens 0 while the stream of the same "
            "generation counts them: stream=True and stream=False usage differ"
        ),
        probe=f"{_PROBES}:usage_parity",
        line=CLASS_LINE,
    ),
    Group(
        STORE,
        "Response store",
        required=False,
        when_off=(
            "upstream's in-process store keeps 16 responses and 32 conversations: under load "
            "previous_response_id and GET /v1/responses/{id} answer 404 for recent turns, "
            "replicas do not share stored responses, and item_reference input items are a 400"
        ),
        probe=f"{_PROBES}:conversation_store",
        line=CLASS_LINE,
    ),
    Group(
        WEBSOCKET,
        "Responses WebSocket mode",
        required=False,
        when_off=(
            "GET /v1/responses is not upgraded: clients in WebSocket mode (openai-python "
            "responses.connect(), the Agents SDK's websocket transport, Codex) cannot connect "
            "and must use HTTP POST"
        ),
        probe=f"{_PROBES}:websocket_turns",
        requires="trtllm_stream_fix.plugin.websocket_route:protocol_problem",
    ),
    Group(
        COMPACTION,
        "Compaction",
        required=False,
        when_off=(
            "POST /v1/responses/compact answers 404, compaction input items are a 400 "
            "('Unknown input type'), and a create ending in compaction_trigger fails: clients "
            "that compact remotely (Codex's OpenAI provider, responses.compact) cannot"
        ),
        probe=f"{_PROBES}:compaction_items",
        requires="trtllm_stream_fix.plugin.compaction_route:library_problem",
    ),
)

_PROCESSOR_INIT = (
    "self, request, sampling_params, model_name, create_time=, conversation_store=, "
    "enable_store=, use_harmony=, reasoning_parser=, tool_parser="
)
_FINAL_OLD = "self, final_res"
_FINAL_NEW = "self, final_res, num_prompt_tokens=, tokenizer="
_FINAL_NO_TOKENIZER = "self, final_res, num_prompt_tokens="
_LATE = (TOOL_CALL_IDS, L271, TERMINAL, L993)
_FINAL_READS = ("self", "final_res", "num_prompt_tokens")  # the override reads args[0]
_CREATE_RESPONSE = (
    "final_res, use_harmony, request, model_name, response_creation_time, sampling_params, "
    "reasoning_parser=, tool_parser=, num_prompt_tokens=, {streamed}{item_ids}tokenizer="
)


def _class_line(*args: Any, **kwargs: Any) -> Target:
    """A target of the class line (checks ``other-line`` on the pre-class line)."""
    return Target(*args, **{**kwargs, "line": CLASS_LINE})


def _method(name: str, *shapes: Any, **kwargs: Any) -> Target:
    return _class_line(RESPONSES_UTILS, f"ResponsesStreamingProcessor.{name}", shapes, **kwargs)


def _store_method(name: str, params: str) -> Target:
    return _class_line(
        RESPONSES_UTILS,
        f"ConversationHistoryStore.{name}",
        (shape(*RESPONSES_LINES, params=params),),
        kind="coroutine",
    )


def _chat(module: str, name: str, **kwargs: Any) -> Target:
    return Target(module, name, (shape(*CHAT_LINES, params="rsp, args"),), **kwargs)


#: Upstream's server class and its ``POST /v1/responses`` handler: the websocket and
#: compaction groups both subclass the one and call (or override) the other.
SERVER_CLASS = Target(OPENAI_SERVER, "OpenAIServer", kind="class")
RESPONSES_HANDLER = Target(
    OPENAI_SERVER,
    "OpenAIServer.openai_responses",
    (shape(*RESPONSES_LINES, L83, params="self, request, raw_request"),),
    kind="coroutine",
    reads=("request", "raw_request"),
)

PATCHES: tuple[Patch, ...] = (
    Patch(
        name="processor",
        target=f"{RESPONSES_UTILS}.ResponsesStreamingProcessor",
        replacement="trtllm_stream_fix.plugin.processor:FixedResponsesStreamingProcessor",
        action="replaces",
        group=RESPONSES,
        aliases=(OPENAI_SERVER,),
        checks=(
            _class_line(RESPONSES_UTILS, "ResponsesStreamingProcessor", kind="class"),
            _method("__init__", shape(*RESPONSES_LINES, params=_PROCESSOR_INIT), reads=()),
            _method("process_single_output", shape(*RESPONSES_LINES, params="self, res")),
            _method("get_initial_responses", shape(*RESPONSES_LINES, params="self")),
            _method("_send_event", shape(*RESPONSES_LINES, params="self, event")),
            _method(
                "get_final_response_non_store",
                shape(EARLY, params=_FINAL_OLD),
                shape(*_LATE, params=_FINAL_NEW),
                reads=_FINAL_READS,
            ),
            _method(
                "get_final_response",
                shape(EARLY, params=_FINAL_OLD),
                shape(TOOL_CALL_IDS, L271, TERMINAL, params=_FINAL_NEW),
                shape(L993, params=_FINAL_NO_TOKENIZER),
                kind="coroutine",
                reads=_FINAL_READS,
            ),
        ),
        why=(
            "_generate_streaming_event_harmony feeds a whole token_ids_diff to the parser and "
            "reads the last token's delta and state only: with stream_interval > 1 deltas are "
            "lost, items are never closed or announced, item ids are empty, tool calls and "
            "preambles are not streamed, the last item is never closed when the stop token is "
            "trimmed, and response.completed mints new ids. openai_server imports the class by "
            "name, so its binding is rebound too."
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
        carried="processor methods",
    ),
    Patch(
        name="output-content",
        target=f"{RESPONSES_UTILS}._create_output_content_harmony",
        replacement="trtllm_stream_fix.plugin.replacements:create_output_content_harmony",
        action="wraps",
        group=RESPONSES,
        checks=(
            _class_line(
                RESPONSES_UTILS,
                "_create_output_content_harmony",
                (shape(*RESPONSES_LINES, params="final_res"),),
            ),
            # called by the replacement with the output's token ids
            _class_line(
                RESPONSES_UTILS,
                "_parse_output_tokens",
                (shape(*RESPONSES_LINES, params="tokens"),),
            ),
        ),
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
        carried="function body",
    ),
    Patch(
        name="input-channels",
        target=f"{RESPONSES_UTILS}._parse_response_input",
        replacement="trtllm_stream_fix.plugin.replacements:parse_response_input",
        action="wraps",
        group=RESPONSES,
        checks=(
            _class_line(
                RESPONSES_UTILS,
                "_parse_response_input",
                (shape(*RESPONSES_LINES, params="input_msg, prev_responses"),),
                reads=("input_msg",),
            ),
        ),
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
        carried="decorator",
    ),
    Patch(
        name="guard",
        target=f"{RESPONSES_UTILS}.guard_responses_stream",
        replacement="trtllm_stream_fix.plugin.replacements:guard_responses_stream",
        action="wraps",
        group=RESPONSES,
        aliases=(OPENAI_SERVER,),
        optional=True,  # versions before the guard have no guard to fix
        checks=(
            _class_line(
                RESPONSES_UTILS,
                "guard_responses_stream",
                (
                    shape(
                        TOOL_CALL_IDS,
                        L271,
                        TERMINAL,
                        params="stream, terminal_events, on_termination=",
                    ),
                    shape(L993, params="stream, terminal_events"),
                ),
                optional=True,
            ),
        ),
        why=(
            "On 271a1eda the guard treats only response.completed as final: a server exception "
            "after a response.incomplete or response.failed appends a second error + "
            "response.failed, so events follow the terminal event. openai_server imports the "
            "guard by name; the handler calls that binding."
        ),
        how=(
            "Wrapper (keeps __wrapped__) that watches the frames for every terminal event and "
            "gives upstream's guard a terminal_events callback that returns nothing after one; "
            "the exception still propagates."
        ),
        upstream="NVIDIA/TensorRT-LLM#19223 (incomplete responses); fixed in 993c0eec's guard",
        remove_when="upstream's guard treats response.incomplete and response.failed as final",
        carried="terminal markers",
    ),
    Patch(
        name="chat-streaming",
        target=f"{POSTPROCESS_HANDLERS}.chat_harmony_streaming_post_processor",
        replacement="trtllm_stream_fix.plugin.chat:chat_harmony_streaming_post_processor",
        action="replaces",
        group=CHAT,
        aliases=(OPENAI_SERVER,),
        optional=True,  # versions without Harmony chat post-processors
        checks=(
            _chat(POSTPROCESS_HANDLERS, "chat_harmony_streaming_post_processor", optional=True),
            Target(POSTPROCESS_HANDLERS, "ChatCompletionPostprocArgs", kind="class"),
        ),
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
        carried="function body",
        carried_if="tensorrt_llm/serve/postprocess_handlers.py",
    ),
    Patch(
        name="chat-body",
        target=f"{POSTPROCESS_HANDLERS}.chat_harmony_post_processor",
        replacement="trtllm_stream_fix.plugin.chat:chat_harmony_post_processor",
        action="replaces",
        group=CHAT,
        aliases=(OPENAI_SERVER,),
        optional=True,
        checks=(_chat(POSTPROCESS_HANDLERS, "chat_harmony_post_processor", optional=True),),
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
        upstream="as chat-streaming",
        remove_when="with chat-streaming",
        carried="function call",
        carried_if="tensorrt_llm/serve/postprocess_handlers.py",
    ),
    Patch(
        name="response-model",
        target=f"{RESPONSES_UTILS}.ResponsesResponse",
        replacement="trtllm_stream_fix.plugin.response_model:CompleteResponsesResponse",
        action="replaces",
        group=RESPONSE_MODEL,
        # Checked where the class is defined (responses_utils imports it by name).
        checks=(
            Target(OPENAI_PROTOCOL, "ResponsesResponse", kind="class"),
            Target(
                OPENAI_PROTOCOL,
                "ResponsesResponse.from_request",
                (
                    shape(
                        *PROTOCOL_LINES,
                        params=(
                            "cls, request, sampling_params, model_name, created_time, output, "
                            "status, usage="
                        ),
                    ),
                ),
                reads=("cls", "request", "sampling_params", "model_name", "created_time"),
            ),
        ),
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
        carried="openai_protocol edit (fields, from_request, serializer)",
        carried_if="tensorrt_llm/serve/openai_protocol.py",
    ),
    Patch(
        name="usage",
        target=f"{RESPONSES_UTILS}._create_response",
        replacement="trtllm_stream_fix.plugin.replacements:create_response",
        action="wraps",
        group=USAGE,
        optional=True,  # a version without _create_response has nothing to patch here
        checks=(
            _class_line(
                RESPONSES_UTILS,
                "_create_response",
                (
                    shape(
                        TOOL_CALL_IDS,
                        params=_CREATE_RESPONSE.format(
                            streamed="streamed_tool_call_ids=, ", item_ids=""
                        ),
                    ),
                    shape(
                        L271,
                        TERMINAL,
                        params=_CREATE_RESPONSE.format(
                            streamed="streamed_tool_call_ids=, ", item_ids="streamed_item_ids=, "
                        ),
                    ),
                    shape(
                        L993,
                        params=_CREATE_RESPONSE.format(
                            streamed="streamed_tool_calls=, ", item_ids="streamed_item_ids=, "
                        ),
                    ),
                ),
                optional=True,  # no shape recorded for early-2026: it decides no line there
                reads=("final_res", "use_harmony"),
                by_name=True,  # the wrapper binds each call with upstream's signature
                returns="tuple",  # (response, messages)
            ),
        ),
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
    Patch(
        name="conversation-store",
        target=f"{RESPONSES_UTILS}.ConversationHistoryStore",
        replacement="trtllm_stream_fix.plugin.conversation_store:StoredConversationHistoryStore",
        action="replaces",
        group=STORE,
        aliases=(OPENAI_SERVER,),
        checks=(
            _class_line(
                RESPONSES_UTILS,
                "ConversationHistoryStore.__init__",
                (shape(*RESPONSES_LINES, params="self, resp_capacity=, max_conversations="),),
                reads=(),
            ),
            _store_method("load_response", "self, resp_id"),
            _store_method("store_response", "self, resp, resp_msgs=, prev_resp_id="),
            _store_method("pop_response", "self, resp_id="),
            _store_method("store_messages", "self, resp_id, msgs, prev_resp_id"),
            _store_method("get_conversation_history", "self, resp_id"),
        ),
        why=(
            "Upstream's ConversationHistoryStore keeps 16 responses and 32 conversations in one "
            "process (least recently used): with 40 concurrent two-turn conversations turn 2 "
            "got 404 in 24 of 38; responses stored on one replica are unknown to the others. "
            "openai_server imports the class by name and creates it once per server."
        ),
        how=(
            "Module global and openai_server binding rebound to a class with upstream's "
            "methods (unknown keywords accepted) over trtllm_stream_fix.store: in-process "
            "(10,000 records, 256 MiB) or Redis with TRTLLM_STREAM_FIX_STORE=redis://...; "
            "the response is stored as upstream dumps it, Harmony messages as their dicts."
        ),
        upstream="none filed; upstream's store is in-process by design",
        remove_when="upstream's response store is bounded by bytes and can be shared by replicas",
    ),
    Patch(
        name="item-references",
        target=f"{RESPONSES_UTILS}.request_preprocess",
        replacement="trtllm_stream_fix.plugin.conversation_store:request_preprocess",
        action="wraps",
        group=STORE,
        aliases=(OPENAI_SERVER,),
        alias_attr="responses_api_request_preprocess",
        checks=(
            _class_line(
                RESPONSES_UTILS,
                "request_preprocess",
                (
                    shape(
                        *RESPONSES_LINES,
                        params=(
                            "request, prev_response, conversation_store, enable_store, "
                            "use_harmony, tokenizer=, model_config=, processor=, "
                            "reasoning_parser="
                        ),
                    ),
                ),
                kind="coroutine",
                reads=("request", "prev_response", "conversation_store"),
                by_name=True,  # the wrapper binds each call with upstream's signature
            ),
        ),
        why=(
            "No recorded line resolves item_reference input items: _parse_response_input "
            "raises 'Unknown input type: item_reference', so a client that names a stored "
            "output item instead of sending it again (the Vercel AI SDK does whenever store is "
            "on) gets a 400 on its second turn. openai_server imports request_preprocess as "
            "responses_api_request_preprocess and calls it before the input is read."
        ),
        how=(
            "Coroutine wrapper (keeps __wrapped__), same parameters: with the plugin's store, "
            "each item_reference of request.input is replaced by the stored output item of "
            "that id (store.references.resolve_item_references, the simulated server's "
            "resolver), through the request model's input validation; an unknown id, an input "
            "that expands past 1 MiB of JSON (counted as it is expanded: a small request may "
            "name large stored items) and an id of prev_response's output referenced again "
            "raise OpenAI's message, which upstream's handler answers as a 400."
        ),
        upstream="none filed; no recorded line mentions item_reference",
        remove_when="upstream resolves item_reference input items from its response store",
    ),
    Patch(
        name="store-errors",
        target=f"{OPENAI_SERVER}.FastAPI",
        replacement="trtllm_stream_fix.plugin.store_errors:with_store_errors",
        action="wraps",
        group=STORE,
        optional=True,  # a server module that builds no FastAPI app has nothing to patch
        checks=(
            _class_line(OPENAI_SERVER, "FastAPI", kind="binding", optional=True, source="fastapi"),
        ),
        why=(
            "Upstream's GET and DELETE /v1/responses/{id} handlers call the conversation store "
            "with no error path: with the plugin's store down (Redis) the StoreError became a "
            "plain-text 500 Internal Server Error. OpenAIServer.__init__ builds its app with "
            "FastAPI(lifespan=...), imported by name, on every recorded class line."
        ),
        how=(
            "openai_server's FastAPI name rebound to a subclass of it whose __init__ adds one "
            "exception handler for StoreError: 503 {'error': {type server_error, code "
            "store_unavailable}} when the store is down, 500 store_error when it answers with "
            "an error (the simulated server's body), one log line, no traceback. Routes whose "
            "handlers catch exceptions themselves (POST /v1/responses) keep their answer."
        ),
        upstream="none filed; upstream's store is in-process and cannot be down",
        remove_when="upstream's stored-response handlers answer store failures themselves",
    ),
    Patch(
        name="websocket-route",
        target=f"{OPENAI_SERVER}.OpenAIServer",
        replacement="trtllm_stream_fix.plugin.websocket_route:with_websocket",
        action="wraps",
        group=WEBSOCKET,
        checks=(
            SERVER_CLASS,
            RESPONSES_HANDLER,  # each turn is fed through it, with a raw_request stand-in
            # aborts the engine request once raw_request.is_disconnected() turns true
            Target(
                OPENAI_SERVER,
                "OpenAIServer.await_disconnected",
                (shape(*RESPONSES_LINES, L83, params="self, raw_request, promise"),),
                kind="coroutine",
            ),
            # the body model of the POST route, validated per turn as FastAPI does
            Target(OPENAI_SERVER, "ResponsesRequest", kind="binding", source=OPENAI_PROTOCOL),
        ),
        why=(
            "Upstream serves /v1/responses over HTTP only: a client in OpenAI's WebSocket mode "
            "(one connection per agent loop, store: false continuations from the socket's "
            "cache) gets 'Unsupported upgrade request' or a 403 and cannot talk to trtllm-serve."
        ),
        how=(
            "openai_server's OpenAIServer rebound to a subclass whose __init__ adds a WebSocket "
            "route /v1/responses to self.app; each response.create is validated with the "
            "handler's ResponsesRequest and awaited through the handler the app routes POST "
            "/v1/responses to (raw_request: the socket, is_disconnected() true once the turn "
            "is closed, so upstream's await_disconnected aborts the engine request); the SSE "
            "frames of its StreamingResponse are sent as events by "
            "trtllm_stream_fix.websocket. TRTLLM_STREAM_FIX_WEBSOCKET=off answers upgrades 426."
        ),
        upstream="none filed; vLLM's WebSocket mode (vllm-project/vllm#35492) is still open",
        remove_when="upstream serves the Responses WebSocket mode itself",
    ),
    Patch(
        name="compaction-server",
        target=f"{OPENAI_SERVER}.OpenAIServer",
        replacement="trtllm_stream_fix.plugin.compaction_route:with_compaction",
        action="wraps",
        group=COMPACTION,
        checks=(
            SERVER_CLASS,
            RESPONSES_HANDLER,  # overridden: compaction items expanded, triggers answered
            # the summary's sampling parameters, as the handler builds its own
            Target(
                OPENAI_SERVER,
                "SamplingParams",
                kind="binding",
                source=SAMPLING_PARAMS,
            ),
        ),
        why=(
            "Upstream has no compaction: POST /v1/responses/compact is a 404, a compaction "
            "input item fails request_preprocess with 'Unknown input type: compaction', and "
            "a create ending in compaction_trigger (Codex's remote compaction v2) never "
            "streams the compaction item the client requires, so remote compaction stops "
            "the client's session."
        ),
        how=(
            "openai_server's OpenAIServer rebound to a subclass whose __init__ adds POST "
            "/v1/responses/compact to self.app and whose openai_responses expands compaction "
            "items (Fernet, TRTLLM_STREAM_FIX_COMPACTION_KEY; a blob that does not open is "
            "a 400 naming it), answers a final compaction_trigger with one compaction "
            "item, and past a context_management compact_threshold compacts first and puts "
            "the item first in upstream's answer; otherwise upstream's handler runs. "
            "Summaries are generated by "
            "self.generator.generate_async over the Harmony compaction prompt with the "
            "Harmony stop tokens (trtllm_stream_fix.compaction)."
        ),
        upstream="none filed; upstream has no compaction endpoint",
        remove_when="upstream serves Responses compaction itself",
    ),
    Patch(
        name="pre-class-stream",
        target=f"{RESPONSES_UTILS}.process_streaming_events",
        replacement="trtllm_stream_fix.plugin.legacy_line:process_streaming_events",
        action="wraps",
        group=PRE_CLASS,
        aliases=(OPENAI_SERVER,),
        alias_attr="responses_api_process_streaming_events",
        optional=True,  # absent on the class line
        checks=(
            Target(
                RESPONSES_UTILS,
                "process_streaming_events",
                (
                    shape(
                        L83,
                        params=(
                            "request, sampling_params, generator, harmony_adapter, model_name, "
                            "conversation_store, create_time=, enable_store="
                        ),
                    ),
                ),
                optional=True,
                line=PRE_CLASS_LINE,
                by_name=True,  # openai_server passes every argument by keyword
            ),
            # called by the replacement for the Harmony messages it stores
            Target(
                RESPONSES_UTILS,
                "parse_output_tokens",
                (shape(L83, params="tokens"),),
                optional=True,
                line=PRE_CLASS_LINE,
            ),
        ),
        why=(
            "On the line before ResponsesStreamingProcessor (83ab45a5) this module function is "
            "the Harmony Responses stream, with the class line's defect: the whole "
            "token_ids_diff goes to the parser, one last_content_delta is read per engine "
            "response, EXPECT_START is checked only at the end of a batch, item ids are empty, "
            "done events carry the next output_index, and response.completed mints new ids. "
            "openai_server imports it as responses_api_process_streaming_events."
        ),
        how=(
            "Wrapper (keeps __wrapped__), same parameters (unknown keywords accepted), an "
            "async generator of SSE strings: HarmonyResponsesStream fed each engine result; "
            "the final response the client saw is stored with its Harmony messages when "
            "enable_store and request.store are set."
        ),
        upstream="NVIDIA/TensorRT-LLM#19223 (the class line's fix does not reach this line)",
        remove_when=(
            "no supported release ships responses_utils without ResponsesStreamingProcessor"
        ),
    ),
    Patch(
        name="pre-class-body",
        target=f"{RESPONSES_UTILS}.create_response",
        replacement="trtllm_stream_fix.plugin.legacy_line:create_response",
        action="wraps",
        group=PRE_CLASS,
        aliases=(OPENAI_SERVER,),
        alias_attr="responses_api_create_response",
        optional=True,  # absent on the class line
        checks=(
            Target(
                RESPONSES_UTILS,
                "create_response",
                (
                    shape(
                        L83,
                        params=(
                            "generator, request, sampling_params, model_name, "
                            "conversation_store, generation_result=, enable_store=, "
                            "create_time="
                        ),
                    ),
                ),
                kind="coroutine",
                optional=True,
                line=PRE_CLASS_LINE,
                by_name=True,  # openai_server passes every argument by keyword
            ),
        ),
        why=(
            "The pre-class line's non-streaming body re-parses the tokens with fresh ids, no "
            "usage, preambles dropped and cut items marked completed, so it disagrees with any "
            "correct stream of the same generation. openai_server imports it as "
            "responses_api_create_response."
        ),
        how=(
            "Coroutine wrapper (keeps __wrapped__): the stream's machine fed every token at once "
            "(core.nonstreaming.build_response), returned as the server's ResponsesResponse "
            "(items, status, usage with the engine's prompt and cached tokens) and stored as "
            "upstream stores it."
        ),
        upstream="as pre-class-stream",
        remove_when="with pre-class-stream",
    ),
)


def group(name: str) -> Group:
    return next(g for g in GROUPS if g.name == name)


def patch(name: str) -> Patch:
    return next(p for p in PATCHES if p.name == name)


def patches(group_name: str | None = None) -> tuple[Patch, ...]:
    """The patches, optionally of one group, in registry order."""
    return tuple(p for p in PATCHES if group_name is None or p.group == group_name)


def bindings(line: str | None = None) -> tuple[str, ...]:
    """Every dotted name the plugin rebinds, in the order ``install()`` reports them; with
    ``line``, only those of patches for that module design (or for every design)."""
    return tuple(
        b
        for g in GROUPS
        for p in patches(g.name)
        if line is None or p.checks[0].line in (None, line)
        for b in p.bindings
    )


def all_targets() -> tuple[Target, ...]:
    """Every target checked (each once), in registry order."""
    return tuple(dict.fromkeys(t for p in PATCHES for t in p.all_checks))


def all_lines() -> tuple[str, ...]:
    """Every version line some shape was recorded from."""
    return tuple(dict.fromkeys(line for t in all_targets() for line in t.lines))


def format_ledger() -> str:
    """The registry as plain text (``doctor --ledger`` and the docs)."""
    blocks = []
    for number, p in enumerate(PATCHES, 1):
        also = f"\n   also bound in: {', '.join(p.aliases)}" if p.aliases else ""
        carried = p.carried or "not carried"
        if p.carried and p.carried_if:
            carried += f" (where upstream-pr edits {p.carried_if})"
        blocks.append(
            f"{number}. {p.name}: {p.target}{also}\n"
            f"   -> {p.replacement} ({p.action})  [group {p.group}"
            f"{', optional' if p.optional else ''}]\n"
            f"   why: {p.why}\n"
            f"   how: {p.how}\n"
            f"   upstream: {p.upstream}\n"
            f"   remove when: {p.remove_when}\n"
            f"   upstream-pr: {carried}"
        )
    return "\n".join(blocks)
