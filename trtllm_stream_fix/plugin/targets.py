# SPDX-License-Identifier: Apache-2.0
"""Recorded shapes of every patch target, and the checks that compare them with what is loaded.

A shape is the parameter list of a callable, normalised to names plus markers: ``=`` for a
parameter with a default, ``*``/``**`` for variadics (annotations and default values are
ignored). A target passes when the loaded object matches any shape recorded for an upstream
version. Attributes of classes are resolved through the MRO from ``vars(cls)``, so a method
moved into a base class is still found and nothing is bound by ``getattr``.

Upstream versions the shapes were recorded from (NVIDIA/TensorRT-LLM,
``tensorrt_llm/serve/responses_utils.py``):

* ``early-2026``: the first version with ``ResponsesStreamingProcessor`` (74.5k characters);
  the final-response methods take only ``final_res``;
* ``271a1eda``: commit 271a1edadcfa14c29b9fe4396b2cbee66b812b05 (primary reference);
* ``terminal-event``: code-index id 71053574395 (commit not exposed; 180,040 characters),
  whose final-response methods return ``_stream_terminal_event(...)``;
* ``993c0eec``: commit 993c0eec9327a503caebf2ba8b733ec20a0fbc40 (divergent lineage):
  ``get_final_response(self, final_res, num_prompt_tokens=None)`` has no ``tokenizer`` and
  ``guard_responses_stream(stream, terminal_events)`` no ``on_termination``.

Every shape below was read from those files (docs/real-upstream.md lists them with sha256).

Chat Completions targets (``tensorrt_llm/serve/postprocess_handlers.py``, the post-processors
``openai_server.chat_harmony`` hands every engine response to, also bound in
``openai_server``), recorded from:

* ``harmony-38134b13``: the postprocess_handlers of the harmony_adapter 38134b13 line (code-index
  id 45575800, 19,020 characters; its helpers take no ``first_iteration``/``stream_options``);
* ``01bf1923``: commit 01bf19231d29d8f0766e31c117d1cf39ed00d3d5 (the newer line, paired with
  271a1eda), whose helpers take ``first_iteration=``, ``stream_options=`` and stream ids.

Both lines call the post-processors as ``(rsp, args)``.

``ResponsesResponse`` (``tensorrt_llm/serve/openai_protocol.py``, imported by name into
``responses_utils``) and its ``from_request`` classmethod, recorded from ``0076e939`` (commit
0076e9390e1ed11515f149eec356f5a03f4a00d8, code-index id 71075524054) and ``18643ffd`` (commit
18643ffda86feb241b3cf8896657595e48a6a1b6), the openai_protocol versions paired with the
responses_utils lines above (docs/real-upstream.md names the pairing).

``_create_response`` (the builder of every non-streaming body and stored response, called as
``_create_response(final_res=..., use_harmony=..., ...)`` by ``create_response`` and
``create_response_non_store``) was recorded from the 271a1eda, terminal-event and 993c0eec
files (993c0eec names its streamed calls ``streamed_tool_calls``); the early-2026 file was
not read, so the target is optional (it does not decide a version line) and a
``_create_response`` of another shape refuses the usage patch alone.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import Any, Literal

RESPONSES_UTILS = "tensorrt_llm.serve.responses_utils"
OPENAI_SERVER = "tensorrt_llm.serve.openai_server"
POSTPROCESS_HANDLERS = "tensorrt_llm.serve.postprocess_handlers"
OPENAI_PROTOCOL = "tensorrt_llm.serve.openai_protocol"

Status = Literal["ok", "missing", "mismatch", "not-loaded"]

_PROCESSOR_INIT = (
    "self, request, sampling_params, model_name, create_time=, conversation_store=, "
    "enable_store=, use_harmony=, reasoning_parser=, tool_parser="
)
_FINAL_OLD = "self, final_res"
_FINAL_NEW = "self, final_res, num_prompt_tokens=, tokenizer="
_FINAL_NO_TOKENIZER = "self, final_res, num_prompt_tokens="
_ALL = ("early-2026", "271a1eda", "terminal-event", "993c0eec")
_LATE = ("271a1eda", "terminal-event", "993c0eec")


@dataclass(frozen=True)
class Target:
    """One object the plugin relies on: ``module`` + dotted ``path`` inside it."""

    module: str
    path: str
    shapes: tuple[tuple[str, str], ...] = ()  # (upstream version(s), shape); empty = any
    kind: Literal["callable", "class", "coroutine", "binding"] = "callable"
    optional: bool = False  # absent on some versions (nothing to patch there)

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.path}"

    def expected(self) -> str:
        if self.kind == "class":
            return "a class"
        if self.kind == "binding":
            return f"the object {RESPONSES_UTILS}.{self.path}"
        shapes = sorted({shape for _, shape in self.shapes})
        text = " | ".join(f"({shape})" for shape in shapes) or "a callable"
        return f"async {text}" if self.kind == "coroutine" else text


@dataclass(frozen=True)
class TargetCheck:
    target: Target
    status: Status
    found: str
    version: str | None = None  # which recorded version the shape matched

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def describe(self) -> str:
        if self.status == "ok":
            return f"{self.target.dotted}: ok ({self.found}; matches {self.version})"
        if self.status == "not-loaded":
            return f"{self.target.dotted}: module not imported yet"
        return (
            f"{self.target.dotted}: {self.status}; expected {self.target.expected()}, "
            f"found {self.found}"
        )


def _shape(*versions: str, shape: str) -> tuple[str, str]:
    return (", ".join(versions), shape)


def _method(name: str, *shapes: tuple[str, str], kind: Any = "callable") -> Target:
    return Target(RESPONSES_UTILS, f"ResponsesStreamingProcessor.{name}", shapes, kind)


PROCESSOR_CLASS = Target(RESPONSES_UTILS, "ResponsesStreamingProcessor", kind="class")
PROCESSOR_TARGETS: tuple[Target, ...] = (
    PROCESSOR_CLASS,
    _method("__init__", _shape(*_ALL, shape=_PROCESSOR_INIT)),
    _method("process_single_output", _shape(*_ALL, shape="self, res")),
    _method("get_initial_responses", _shape(*_ALL, shape="self")),
    _method("_send_event", _shape(*_ALL, shape="self, event")),
    _method(
        "get_final_response_non_store",
        _shape("early-2026", shape=_FINAL_OLD),
        _shape(*_LATE, shape=_FINAL_NEW),
    ),
    _method(
        "get_final_response",
        _shape("early-2026", shape=_FINAL_OLD),
        _shape("271a1eda", "terminal-event", shape=_FINAL_NEW),
        _shape("993c0eec", shape=_FINAL_NO_TOKENIZER),
        kind="coroutine",
    ),
)
SERVER_BINDING = Target(OPENAI_SERVER, "ResponsesStreamingProcessor", kind="binding")
GUARD = Target(
    RESPONSES_UTILS,
    "guard_responses_stream",
    (
        _shape("271a1eda", "terminal-event", shape="stream, terminal_events, on_termination="),
        _shape("993c0eec", shape="stream, terminal_events"),
    ),
    optional=True,
)
SERVER_GUARD_BINDING = Target(
    OPENAI_SERVER, "guard_responses_stream", kind="binding", optional=True
)
OUTPUT_CONTENT = Target(
    RESPONSES_UTILS, "_create_output_content_harmony", (_shape(*_ALL, shape="final_res"),)
)
PARSE_OUTPUT_TOKENS = Target(
    RESPONSES_UTILS, "_parse_output_tokens", (_shape(*_ALL, shape="tokens"),)
)
PARSE_INPUT = Target(
    RESPONSES_UTILS,
    "_parse_response_input",
    (_shape(*_ALL, shape="input_msg, prev_responses"),),
)
_CREATE_RESPONSE = (
    "final_res, use_harmony, request, model_name, response_creation_time, sampling_params, "
    "reasoning_parser=, tool_parser=, num_prompt_tokens=, {streamed}=, streamed_item_ids=, "
    "tokenizer="
)
_CALL_IDS = "streamed_tool_call_ids"
CREATE_RESPONSE = Target(
    RESPONSES_UTILS,
    "_create_response",
    (
        _shape("271a1eda", "terminal-event", shape=_CREATE_RESPONSE.format(streamed=_CALL_IDS)),
        _shape("993c0eec", shape=_CREATE_RESPONSE.format(streamed="streamed_tool_calls")),
    ),
    optional=True,  # no shape recorded for early-2026: it constrains no version line there
)
# Checked where the class is defined (responses_utils imports it by name; the plugin rebinds
# that name), so the version line of responses_utils.py alone is detected without it.
RESPONSE_MODEL = Target(OPENAI_PROTOCOL, "ResponsesResponse", kind="class")
RESPONSE_FROM_REQUEST = Target(
    OPENAI_PROTOCOL,
    "ResponsesResponse.from_request",
    (
        _shape(
            "0076e939",
            "18643ffd",
            shape="cls, request, sampling_params, model_name, created_time, output, status, usage=",
        ),
    ),
)
_CHAT_LINES = ("harmony-38134b13", "01bf1923")
CHAT_STREAMING = Target(
    POSTPROCESS_HANDLERS,
    "chat_harmony_streaming_post_processor",
    (_shape(*_CHAT_LINES, shape="rsp, args"),),
    optional=True,  # a version without Harmony chat post-processors has nothing to patch
)
CHAT_NONSTREAMING = Target(
    POSTPROCESS_HANDLERS, "chat_harmony_post_processor", (_shape(*_CHAT_LINES, shape="rsp, args"),)
)
CHAT_ARGS = Target(POSTPROCESS_HANDLERS, "ChatCompletionPostprocArgs", kind="class")
SERVER_CHAT_STREAMING = Target(
    OPENAI_SERVER,
    "chat_harmony_streaming_post_processor",
    (_shape(*_CHAT_LINES, shape="rsp, args"),),
)
SERVER_CHAT_NONSTREAMING = Target(
    OPENAI_SERVER, "chat_harmony_post_processor", (_shape(*_CHAT_LINES, shape="rsp, args"),)
)
CHAT_TARGETS: tuple[Target, ...] = (
    CHAT_STREAMING,
    CHAT_NONSTREAMING,
    CHAT_ARGS,
    SERVER_CHAT_STREAMING,
    SERVER_CHAT_NONSTREAMING,
)
ALL_TARGETS: tuple[Target, ...] = (
    *PROCESSOR_TARGETS,
    SERVER_BINDING,
    GUARD,
    SERVER_GUARD_BINDING,
    OUTPUT_CONTENT,
    PARSE_OUTPUT_TOKENS,
    PARSE_INPUT,
    RESPONSE_MODEL,
    RESPONSE_FROM_REQUEST,
    CREATE_RESPONSE,
    *CHAT_TARGETS,
)


def shape_of(func: Any) -> str:
    """The normalised parameter list of ``func`` (see the module docstring)."""
    parts = []
    for param in inspect.signature(func).parameters.values():
        if param.kind is param.VAR_POSITIONAL:
            parts.append(f"*{param.name}")
        elif param.kind is param.VAR_KEYWORD:
            parts.append(f"**{param.name}")
        elif param.default is not param.empty:
            parts.append(f"{param.name}=")
        else:
            parts.append(param.name)
    return ", ".join(parts)


def loaded_module(name: str) -> Any | None:
    """``sys.modules[name]`` once its import has finished, else None."""
    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        return None
    return module


def resolve(owner: Any, name: str) -> Any:
    """``name`` as defined on ``owner`` (a class: looked up along the MRO in ``vars``)."""
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if name in vars(klass):
                return vars(klass)[name]
        raise AttributeError(name)
    return getattr(owner, name)


def lookup(target: Target) -> Any:
    """The object ``target`` names; raises LookupError if its module is not loaded."""
    module = loaded_module(target.module)
    if module is None:
        raise LookupError(target.module)
    obj: Any = module
    names = target.path.split(".")
    for name in names[:-1]:
        obj = upstream_class(resolve(obj, name))  # check upstream's methods, not ours
    return resolve(obj, names[-1])


def upstream_class(cls: Any) -> Any:
    """``cls`` with any of this project's subclasses peeled off."""
    while isinstance(cls, type) and getattr(cls, "__trtllm_stream_fix__", False):
        cls = cls.__bases__[0]
    return cls


def unwrap(func: Any) -> Any:
    """``func`` with any of this project's wrappers peeled off."""
    while getattr(func, "__trtllm_stream_fix__", False) and hasattr(func, "__wrapped__"):
        func = func.__wrapped__
    return func


def check(target: Target) -> TargetCheck:
    """Compare the loaded object with the recorded shapes."""
    try:
        obj = lookup(target)
    except LookupError:
        return TargetCheck(target, "not-loaded", "module not imported")
    except AttributeError as exc:
        return TargetCheck(target, "missing", f"no attribute {exc.args[0]!r}")
    if target.kind == "binding":
        ours = unwrap(upstream_class(obj))
        original = sys.modules[RESPONSES_UTILS].__dict__.get(target.path)
        if ours is not None and ours is unwrap(upstream_class(original)):
            return TargetCheck(target, "ok", f"{ours.__module__}.{ours.__qualname__}", "any")
        return TargetCheck(target, "mismatch", repr(obj))
    if target.kind == "class":
        if isinstance(obj, type):
            return TargetCheck(target, "ok", "a class", "any")
        return TargetCheck(target, "mismatch", type(obj).__name__)
    func = unwrap(obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj)
    if not callable(func):
        return TargetCheck(target, "mismatch", f"non-callable {type(func).__name__}")
    try:
        found = shape_of(func)
    except (TypeError, ValueError):
        return TargetCheck(target, "mismatch", "a callable without a signature")
    if target.kind == "coroutine" and not inspect.iscoroutinefunction(func):
        return TargetCheck(target, "mismatch", f"sync ({found})")
    for versions, shape in target.shapes:
        if shape == found:
            return TargetCheck(target, "ok", f"({found})", versions)
    return TargetCheck(target, "mismatch", f"({found})")
