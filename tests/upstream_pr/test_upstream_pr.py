# SPDX-License-Identifier: Apache-2.0
"""``upstream-pr``: the change set generated from a TensorRT-LLM tree.

The default tier builds a small upstream-like tree from our stand-in's serve modules (so the
edit logic is tested without upstream sources); with ``TRTLLM_SOURCE_DIR`` the whole command,
``--check`` included, runs against that real tree.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trtllm_stream_fix.cli import main as cli_main
from trtllm_stream_fix.upstream_pr import bench, check, convert, describe, edits, layout, lint
from trtllm_stream_fix.upstream_pr.changeset import SourceTreeError, build
from trtllm_stream_fix.upstream_pr.detect import UnknownVersionError, detect
from trtllm_stream_fix.upstream_pr.lint import Tools, find_tools

pytestmark = pytest.mark.cpu_only

STANDIN_SERVE = Path(__file__).parents[1] / "standin" / "tensorrt_llm" / "serve"
L0_CPU = """\
version: 0.0.1
l0_cpu:
- condition:
    terms:
      stage: pre_merge
  tests:
  - unittest/llmapi/apps/test_chat_utils.py
  - unittest/llmapi/apps/test_responses_usage.py
  - unittest/llmapi/test_executor.py
"""
TEMPLATE = (
    "@bot summary\n\n## Description\n\n<!-- explain -->\n\n## Test Coverage\n\n"
    "<!-- list -->\n\n## Bot Help\n\nkept\n"
)
NO_FORMAT = Tools({}, note="unformatted")  # the edit logic, without any linter


def _tree(root: Path, *, extra: str = "") -> Path:
    serve = root / layout.SERVE_DIR
    serve.mkdir(parents=True)
    for path in STANDIN_SERVE.glob("*.py"):
        shutil.copy2(path, serve / path.name)
    if extra:
        utils = serve / "responses_utils.py"
        utils.write_text(extra + utils.read_text())
    (root / layout.L0_CPU).parent.mkdir(parents=True)
    (root / layout.L0_CPU).write_text(L0_CPU)
    (root / ".github").mkdir()
    (root / ".github" / "pull_request_template.md").write_text(TEMPLATE)
    return root


@pytest.fixture
def tree(tmp_path):
    return _tree(tmp_path / "trtllm")


def _definition(text: str, path: str):
    node = ast.parse(text)
    for name in path.split("."):
        node = next(n for n in node.body if getattr(n, "name", None) == name)
    return node


# -- detection -----------------------------------------------------------------------------


def test_detects_the_version_line_from_the_recorded_shapes(tree):
    text = (tree / layout.RESPONSES_UTILS).read_text()
    detection = detect(text)
    assert detection.versions and "early-2026" not in detection.versions
    old = text.replace(
        "self, final_res: RequestOutput, num_prompt_tokens: int | None = None, tokenizer=None",
        "self, final_res: RequestOutput",
    )
    assert old != text
    assert detect(old).versions == ("early-2026",)


def test_an_unknown_shape_is_a_clear_error(tree):
    text = (tree / layout.RESPONSES_UTILS).read_text()
    bad = text.replace("def process_single_output(self, res", "def process_single_output(self, out")
    with pytest.raises(UnknownVersionError, match="process_single_output"):
        detect(bad)


def test_targets_that_disagree_are_each_named_with_the_lines_they_matched(tree):
    """``get_final_response`` of 993c0eec's shape beside a guard of the other lines: the error
    names each target that constrains the line and the lines it matched."""
    text = (tree / layout.RESPONSES_UTILS).read_text()
    old = (
        "async def get_final_response(\n        self, final_res: RequestOutput, "
        "num_prompt_tokens: int | None = None, tokenizer=None\n"
    )
    assert old in text
    mixed = text.replace(old, old.replace(", tokenizer=None", ""))
    with pytest.raises(UnknownVersionError) as raised:
        detect(mixed)
    message = str(raised.value)
    assert "ResponsesStreamingProcessor.get_final_response (found " in message
    assert "num_prompt_tokens=)) matches 993c0eec;" in message
    guard = "guard_responses_stream (found (stream, terminal_events, on_termination=)) matches "
    matched = message.split(guard, 1)[1].split(";")[0].split(", ")
    assert {"271a1eda", "terminal-event", "tool-call-ids"} <= set(matched)
    assert "993c0eec" not in matched
    assert "agree on no single version" not in message


def test_an_unrecorded_compatible_shape_still_detects_the_line(tree):
    """A ``_create_response`` with an optional keyword no line has: detected, and said."""
    text = (tree / layout.RESPONSES_UTILS).read_text()
    old = "    streamed_item_ids=None,\n    tokenizer=None,\n):\n    if not use_harmony:"
    assert text.count(old) == 1
    tool_call_ids = detect(text.replace(old, old.replace("    streamed_item_ids=None,\n", "")))
    assert tool_call_ids.versions == ("tool-call-ids",)
    drifted = detect(
        text.replace(old, old.replace("tokenizer=None,", "tokenizer=None, tenant=None,"))
    )
    assert drifted.versions == ("271a1eda", "terminal-event", "tool-call-ids")
    assert "unrecorded compatible shape: _create_response" in drifted.line


def test_a_folder_without_responses_utils_is_refused(tmp_path):
    with pytest.raises(SourceTreeError, match=r"responses_utils\.py"):
        build(tmp_path, year=2026, tools=NO_FORMAT)


# -- source edits -----------------------------------------------------------------------------


@pytest.mark.parametrize("shift", ["", "def _moved_down():\n    return 1\n\n\n" * 7])
def test_edits_are_located_by_name_and_change_only_their_targets(tmp_path, shift):
    original = (STANDIN_SERVE / "responses_utils.py").read_text()
    text = shift + original
    edited = edits.edit_responses_utils(text)
    ast.parse(edited)
    assert edits.IMPORT_LINE in edited
    for method, call in (
        ("get_initial_responses", "initial_responses(self)"),
        ("process_single_output", "process_output(self, res)"),
        ("get_final_response_non_store", "final_response("),
        ("get_final_response", "final_response("),
    ):
        node = _definition(edited, f"ResponsesStreamingProcessor.{method}")
        first = node.body[0]
        assert isinstance(first, ast.If) and ast.unparse(first.test) == "self.use_harmony"
        assert call in ast.unparse(first.body[0])
    init = _definition(edited, "ResponsesStreamingProcessor.__init__")
    assert "HarmonyResponsesStream(_parse_output_tokens, " in ast.unparse(init.body[-1])
    content = _definition(edited, "_create_output_content_harmony")
    assert "harmony_output_content" in ast.unparse(content.body[-1])
    assert "_parse_output_message_harmony" not in ast.unparse(content)  # old body gone
    parse = _definition(edited, "_parse_response_input")
    assert [ast.unparse(d) for d in parse.decorator_list] == [
        "harmony_processor.with_phase_channel"
    ]
    old_body = ast.get_source_segment(text, _definition(text, "_create_output_content_harmony"))
    assert all(line in old_body for line in _removed(text, edited))  # nothing else removed


def _removed(old: str, new: str) -> list[str]:
    import difflib

    return [
        line[1:].strip()
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="")
        if line.startswith("-") and not line.startswith("---")
    ]


HANDLERS = """\
import time

from tensorrt_llm.serve.responses_utils import ResponsesStreamingProcessor

from .harmony_adapter import (handle_non_streaming_response,
                              handle_streaming_response)
from .openai_protocol import ChatCompletionResponse, to_disaggregated_params


def get_usage_tokens_from_ctx(ctx_usage):
    return None, None


def _ctx_usage_for_postproc(args, outputs):
    return None


def _ensure_stream_metadata(args, rsp, prefix):
    return "id", 0


def chat_harmony_post_processor(rsp, args) -> ChatCompletionResponse:
    response = handle_non_streaming_response(
        tools=args.tools,
        outputs=rsp.outputs,
    )
    return response


def chat_harmony_streaming_post_processor(res, pargs):
    # a comment about the old body
    prompt_tokens = pargs.num_prompt_tokens
    response = handle_streaming_response(result=res, num_prompt_tokens=prompt_tokens)
    return response
"""


def test_chat_post_processors_are_edited_by_name_onto_the_chat_machine():
    edited = edits.edit_postprocess_handlers(HANDLERS)
    assert edits.CHAT_IMPORT_LINE in edited
    assert "harmony_adapter" not in edited and "handle_streaming_response" not in edited
    stream = ast.unparse(_definition(edited, "chat_harmony_streaming_post_processor"))
    assert "return harmony_chat.stream_chunks(res, pargs, ctx_prompt_tokens)" in stream
    assert "_ensure_stream_metadata(pargs, res, 'chatcmpl')" in stream
    assert "old body" not in edited
    answer = ast.unparse(_definition(edited, "chat_harmony_post_processor"))
    assert (
        "response = harmony_chat.chat_completion(rsp, args, ChatCompletionResponse, "
        "to_disaggregated_params)" in answer
    )
    assert edited.index(edits.CHAT_IMPORT_LINE) < edited.index("from tensorrt_llm.serve.resp")
    with pytest.raises(edits.EditError, match="edited twice"):
        edits.edit_postprocess_handlers(edited)


def test_chat_edit_without_the_servers_helpers_returns_the_chunks_only():
    text = HANDLERS.replace("_ensure_stream_metadata", "_stream_meta").replace(
        "_ctx_usage_for_postproc", "_ctx"
    )
    stream = ast.unparse(
        _definition(edits.edit_postprocess_handlers(text), "chat_harmony_streaming_post_processor")
    )
    assert stream.endswith("return harmony_chat.stream_chunks(res, pargs)")


def test_chat_post_processors_of_another_shape_leave_a_note(tree):
    change = build(tree, year=2026, tools=NO_FORMAT)  # the stand-in's raise NotImplementedError
    assert layout.POSTPROCESS_HANDLERS not in change.modified
    assert layout.CHAT_PROCESSOR_TEST not in change.new_files
    assert any("chat post-processors not edited" in note for note in change.notes)
    assert any(
        note.endswith("postprocess_handlers.chat_harmony_post_processor") for note in change.notes
    )


def test_a_missing_target_is_a_clear_error():
    text = (STANDIN_SERVE / "responses_utils.py").read_text()
    text = text.replace("def get_initial_responses(self)", "def initial_frames(self)")
    with pytest.raises(edits.EditError, match="get_initial_responses"):
        edits.edit_responses_utils(text)


def test_editing_twice_is_refused():
    text = edits.edit_responses_utils((STANDIN_SERVE / "responses_utils.py").read_text())
    with pytest.raises(edits.EditError, match="already"):
        edits.edit_responses_utils(text)


def test_l0_cpu_gets_the_test_folder_in_order_once():
    edited = edits.edit_l0_cpu(L0_CPU)
    lines = edited.splitlines()
    at = lines.index(f"  - {layout.L0_ENTRY}")
    assert lines[at - 1] == "  tests:"  # "harmony_stream" sorts before "test_chat_utils.py"
    assert lines[at + 1].endswith("test_chat_utils.py")
    assert edits.edit_l0_cpu(edited) == edited


# An openai_protocol.py of upstream's shape (written here, not upstream's text): the Response
# model comments error / incomplete_details out and lacks OpenAI's newer fields.
PROTOCOL = """\
import time
import uuid
from typing import List, Literal, Optional

from openai.types.responses import ResponseOutputItem, ResponseStatus, ResponseUsage
from openai.types.responses.response import ToolChoice
from openai.types.responses.tool import Tool
from openai.types.shared import Metadata, Reasoning
from pydantic import BaseModel, ConfigDict, Field


class OpenAIBaseModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ResponsesRequest(OpenAIBaseModel):
    background: Optional[bool] = False
    instructions: Optional[str] = None
    max_output_tokens: Optional[int] = None
    max_tool_calls: Optional[int] = None
    metadata: Optional[Metadata] = None
    model: str
    parallel_tool_calls: Optional[bool] = False
    previous_response_id: Optional[str] = None
    reasoning: Optional[Reasoning] = None
    service_tier: Literal["auto", "default", "flex", "scale", "priority"] = "auto"
    store: Optional[bool] = True
    temperature: Optional[float] = None
    tool_choice: ToolChoice = "auto"
    tools: list[Tool] = Field(default_factory=list)
    top_p: Optional[float] = None
    truncation: Optional[Literal["auto", "disabled"]] = "disabled"
    user: Optional[str] = None
    request_id: str = "resp_req"


class ResponsesResponse(OpenAIBaseModel):
    id: str = Field(default_factory=lambda: f"resp_{str(uuid.uuid4().hex)}")
    created_at: int = Field(default_factory=lambda: int(time.time()))
    # error: Optional[ResponseError] = None
    # incomplete_details: Optional[IncompleteDetails] = None
    instructions: Optional[str] = None
    metadata: Optional[Metadata] = None
    model: str
    object: Literal["response"] = "response"
    output: list[ResponseOutputItem]
    parallel_tool_calls: bool
    temperature: float
    tool_choice: ToolChoice
    tools: list[Tool]
    top_p: float
    background: bool
    max_output_tokens: Optional[int] = None
    max_tool_calls: Optional[int] = None
    previous_response_id: Optional[str] = None
    reasoning: Optional[Reasoning] = None
    service_tier: Literal["auto", "default", "flex", "scale", "priority"]
    status: ResponseStatus
    text: Optional[dict] = None
    top_logprobs: int
    truncation: Literal["auto", "disabled"]
    usage: Optional[ResponseUsage] = None
    user: Optional[str] = None

    # an extension of this server
    prompt_token_ids: Optional[List[int]] = None

    @classmethod
    def from_request(cls, request, sampling_params, model_name, created_time,
                     output, status, usage=None) -> "ResponsesResponse":
        return cls(
            id=request.request_id,
            created_at=created_time,
            instructions=request.instructions,
            metadata=request.metadata,
            model=model_name,
            output=output,
            parallel_tool_calls=request.parallel_tool_calls,
            temperature=sampling_params.temperature,
            tool_choice=request.tool_choice,
            tools=request.tools,
            top_p=sampling_params.top_p,
            background=request.background,
            max_output_tokens=sampling_params.max_tokens,
            max_tool_calls=request.max_tool_calls,
            previous_response_id=request.previous_response_id,
            reasoning=request.reasoning,
            service_tier=request.service_tier,
            status=status,
            top_logprobs=sampling_params.logprobs,
            truncation=request.truncation,
            user=request.user,
            usage=usage,
        )
"""


def _protocol_module(text: str):
    import types

    module = types.ModuleType("edited_openai_protocol")
    exec(compile(text, "openai_protocol.py", "exec", dont_inherit=True), module.__dict__)
    return module


def _response(module, status: str, tools=()):
    from types import SimpleNamespace

    from openai.types.responses import ResponseFunctionToolCall

    request = module.ResponsesRequest(model="m", tools=list(tools), store=False)
    sampling = SimpleNamespace(
        temperature=1.0,
        top_p=1.0,
        max_tokens=16,
        logprobs=0,
        presence_penalty=None,  # upstream's SamplingParams declares both, None by default
        frequency_penalty=None,
    )
    call = ResponseFunctionToolCall.model_construct(
        type="function_call",
        id="fc_1",
        call_id="call_1",
        name="f",
        arguments="{}",
        status="completed",
    )
    return module.ResponsesResponse.from_request(request, sampling, "m", 7, [call], status)


def test_the_response_model_gets_every_field_of_openais_response():
    """Ledger entry 11 as an openai_protocol.py edit: every OpenAI field, set by status."""
    from trtllm_stream_fix.core.response import OPENAI_RESPONSE_FIELDS
    from trtllm_stream_fix.differential import openai_schema

    assert edits.protocol_fields_missing(PROTOCOL) == [
        "completed_at",
        "error",
        "frequency_penalty",
        "incomplete_details",
        "presence_penalty",
        "prompt_cache_key",
        "safety_identifier",
        "store",
    ]
    edited = edits.edit_openai_protocol(PROTOCOL)
    assert edits.protocol_fields_missing(edited) == []
    assert "# error:" not in edited and "# incomplete_details:" not in edited
    module = _protocol_module(edited)
    tool = {"type": "function", "name": "f", "parameters": {}, "strict": False}
    for status in ("completed", "incomplete", "failed"):
        body = _response(module, status, [tool]).model_dump(mode="json")
        assert set(OPENAI_RESPONSE_FIELDS) <= set(body)
        assert "prompt_token_ids" in body  # the server's own keys stay
        assert openai_schema.missing_keys(body) == [], status
        assert (body["completed_at"] is not None) == (status == "completed")
        assert body["store"] is False  # echoed from the request
        assert body["prompt_cache_key"] is None
        assert (body["presence_penalty"], body["frequency_penalty"]) == (0.0, 0.0)
    incomplete = _response(module, "incomplete").model_dump(mode="json")
    assert incomplete["incomplete_details"] == {"reason": "max_output_tokens"}
    assert _response(module, "failed").model_dump(mode="json")["error"]["code"] == "server_error"
    assert _response(module, "completed").model_dump(mode="json")["error"] is None


def _yapf_unclean(old: str, new: str) -> str:
    """yapf's diff (upstream's pinned version and style) over the lines ``new`` adds to ``old``."""
    import difflib

    yapf_api = pytest.importorskip("yapf.yapflib.yapf_api")
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), False)
    ranges = [
        (j1 + 1, j2)
        for tag, _, _, j1, j2 in matcher.get_opcodes()
        if tag in ("replace", "insert") and j2 > j1
    ]
    diff, _ = yapf_api.FormatCode(new, style_config=lint.YAPF_STYLE, lines=ranges, print_diff=True)
    return diff


def test_the_protocol_edit_passes_upstreams_yapf():
    """Every line the openai_protocol.py edit adds is as upstream's yapf would write it."""
    import importlib.metadata

    pytest.importorskip("yapf")
    if importlib.metadata.version("yapf") != layout.LINT_PINS["yapf"]:
        pytest.skip(f"yapf is not upstream's pinned {layout.LINT_PINS['yapf']}")
    assert _yapf_unclean(PROTOCOL, edits.edit_openai_protocol(PROTOCOL)) == ""


def test_the_response_model_dumps_openais_key_names_without_by_alias():
    """A stored response fetched again (upstream dumps it without ``by_alias``)."""
    from openai.types.responses import ResponseFunctionToolCall

    if "async_" not in ResponseFunctionToolCall.model_fields:
        pytest.skip("this openai version has no aliased field (async_) on function calls")
    module = _protocol_module(edits.edit_openai_protocol(PROTOCOL))
    tool = {"type": "function", "name": "f", "parameters": {}, "strict": False, "async": True}
    response = _response(module, "completed", [tool])
    response.output[0].async_ = True
    for dumped in (response.model_dump(), response.model_dump(mode="json")):
        assert dumped["output"][0]["async"] is True and "async_" not in dumped["output"][0]
        assert dumped["tools"][0]["async"] is True and "async_" not in dumped["tools"][0]
    old = _protocol_module(PROTOCOL)
    plain = old.ResponsesResponse.model_validate(
        {k: v for k, v in response.model_dump().items() if k in old.ResponsesResponse.model_fields}
    ).model_dump()
    assert "async_" in plain["output"][0]  # what upstream sent


def test_the_protocol_edit_is_located_by_name_and_refuses_other_shapes():
    edited = edits.edit_openai_protocol(PROTOCOL)
    with pytest.raises(edits.EditError, match="already declares"):
        edits.edit_openai_protocol(edited)
    with pytest.raises(edits.EditError, match="from_request"):
        edits.edit_openai_protocol(PROTOCOL.replace("def from_request", "def build"))
    with pytest.raises(edits.EditError, match="does not add"):
        edits.edit_openai_protocol(PROTOCOL.replace("    background: bool\n", ""))
    shifted = "# a new first line\n" + PROTOCOL
    assert edits.edit_openai_protocol(shifted) == "# a new first line\n" + edited
    removed = [line for line in _removed(PROTOCOL, edited)]
    assert removed == [
        "from openai.types.responses.response import ToolChoice",
        "from pydantic import BaseModel, ConfigDict, Field",
        "# error: Optional[ResponseError] = None",
        "# incomplete_details: Optional[IncompleteDetails] = None",
    ]


def test_a_tree_whose_response_model_differs_keeps_entry_11_in_the_notes(tree):
    """The stand-in's model lacks fields the edit does not add: no edit, a note."""
    change = build(tree, year=2026, tools=NO_FORMAT)
    assert layout.OPENAI_PROTOCOL not in change.modified
    noted = " ".join(change.notes)
    assert "ResponsesResponse not completed" in noted and edits.PROTOCOL_TARGET in noted
    (tree / layout.OPENAI_PROTOCOL).write_text(PROTOCOL)
    change = build(tree, year=2026, tools=NO_FORMAT)
    assert change.modified[layout.OPENAI_PROTOCOL][1] == edits.edit_openai_protocol(PROTOCOL)
    assert edits.PROTOCOL_TARGET not in " ".join(change.notes)


def test_bodies_check_needs_every_body_complete():
    ok = {"bodies": {"bodies": 4, "complete": 4, "raised": 0}}
    assert check.bodies_result(ok).ok
    short = {"bodies": {"bodies": 4, "complete": 3, "raised": 0, "examples": ["x: no error"]}}
    assert not check.bodies_result(short).ok and "x: no error" in check.bodies_result(short).detail
    assert not check.bodies_result({"error": "boom"}).ok


def test_every_plugin_patch_is_carried_or_named_in_the_notes(tree):
    from trtllm_stream_fix.plugin import registry

    change = build(tree, year=2026, tools=NO_FORMAT)
    noted = " ".join(change.notes)
    for patch in registry.PATCHES:
        for binding in patch.bindings:
            carried = patch.carried and (
                not patch.carried_if or patch.carried_if in change.modified
            )
            assert bool(carried) != (binding in noted), binding
    assert registry.patch("usage").target in noted  # carried by no edit


# -- new files ----------------------------------------------------------------------------------


def test_new_files_are_upstream_shaped_and_name_nothing_of_ours(tree):
    change = build(tree, year=2031, tools=NO_FORMAT)
    core = {p.stem for p in (layout.OURS / "core").glob("*.py")}
    modules = {Path(p).stem for p in change.new_files if p.startswith(layout.PACKAGE_DIR)}
    assert core | {"processor", "encoding"} <= modules
    for path, text in change.new_files.items():
        assert text.startswith(
            "# SPDX-FileCopyrightText: Copyright (c) 2031 NVIDIA CORPORATION & AFFILIATES."
        ), path
        assert "trtllm_stream_fix" not in text and "trtllm-stream-fix" not in text, path
        tree_ = ast.parse(text)
        for node in ast.walk(tree_):
            if isinstance(node, ast.ImportFrom) and path.startswith("tensorrt_llm/"):
                assert node.level == 0, f"{path}: relative import"
    tests = [p for p in change.tests if Path(p).name.startswith("test_")]
    assert len(tests) == 6  # the stand-in's chat post-processors are not edited
    for path in tests:
        assert "pytestmark = pytest.mark.cpu_only" in change.new_files[path], path


def test_the_processor_shipped_upstream_is_the_one_the_plugin_runs(tree):
    """One source: the change set's ``processor.py`` is ``serving/processor.py`` converted, and
    the plugin's subclass and non-streaming replacement delegate to that module's code."""
    change = build(tree, year=2026, tools=NO_FORMAT)
    placement = layout.Placement(
        layout.OURS / "serving" / "processor.py", f"{layout.PACKAGE_DIR}/processor.py"
    )
    assert change.new_files[placement.dest] == convert.convert(placement, 2026)
    plugin = layout.OURS / "plugin"
    sources = {name: (plugin / name).read_text() for name in ("processor.py", "replacements.py")}
    used = {name: _names(text) for name, text in sources.items()}
    for logic in ("ResponsesEventMachine", "feed", "format_sse", "store_response"):
        assert logic not in used["processor.py"], f"plugin/processor.py has its own {logic}"
    assert "build_response" not in used["replacements.py"]
    assert "from ..serving.processor import HarmonyResponsesStream" in sources["processor.py"]


def _names(text: str) -> set[str]:
    """The names and attributes a module's code uses (docstrings and comments aside)."""
    out = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.add(node.asname or node.name)
    return out


def test_the_patch_applies_to_a_copy_and_yields_the_files(tree, tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    change = build(tree, year=2026, tools=NO_FORMAT)
    copy = check.copy_tree(change.root, tmp_path / "copy")
    result = check.apply(change, copy)
    assert result.ok, result.detail
    for path, text in change.new_files.items():
        assert (copy / path).read_text() == text
    for path, (_, new) in change.modified.items():
        assert (copy / path).read_text() == new
    assert (copy / "tests/unittest/llmapi/apps/__init__.py").is_file()


def test_description_follows_the_template_and_title_check(tree):
    change = build(tree, year=2026, tools=NO_FORMAT)
    stats = {"identical": 3, "compared": 4, "strict": 1, "sdk": 2, "streams": 6, "raised": 1}
    good = {**stats, "identical": 4, "strict": 6, "sdk": 6, "raised": 0}
    text = describe.description(change, stats, good)
    assert text.startswith(f"# {describe.title()}\n")
    assert "@bot summary" in text and "## Bot Help\n\nkept" in text
    assert "<!--" not in text
    assert "| before (this tree) | 3 / 4 | 1 / 6 | 2 / 6 | 1 |" in text
    assert "| after (patched) | 4 / 4 | 6 / 6 | 6 / 6 | 0 |" in text
    assert text.index("## Description") < text.index("## Test Coverage") < text.index("## Bot")


def _bench_row(impl: str, us: float, ratio: float) -> dict:
    return {"tokens": "300+300", "stream_interval": 20, "impl": impl, "us_per_token": us,
            "ratio_to_floor": ratio}  # fmt: skip


def test_benchmark_rows_say_whether_they_were_measured_on_the_patched_files():
    measured = {
        "before": [_bench_row("floor", 2.0, 1.0), _bench_row("upstream-real", 9.0, 4.5)],
        "after": [_bench_row("floor", 2.1, 1.0), _bench_row("upstream-real", 1.3, 0.62)],
        "command": bench.COMMAND,
    }
    text = describe.benchmark_rows(measured=measured)
    assert "| 300+300 | 20 | 2.10 | 9.00 (4.50) | 1.30 (0.62) |" in text
    assert "Measured by `upstream-pr --check`" in text and bench.COMMAND in text
    recorded = describe.benchmark_rows(measured={"error": "benchmark failed"})
    assert "Recorded rows, not measured on this tree" in recorded
    assert "benchmark failed" in recorded
    assert "Recorded rows" in describe.benchmark_rows()
    assert not check.bench_result({"error": "x"}).ok and check.bench_result(measured).ok


def test_a_tree_whose_own_processor_raises_still_has_its_patched_copy_measured(
    tmp_path, monkeypatch
):
    """An assembled tree whose unpatched modules raise on every stream (early-2026's
    ``responses_utils`` with the shared ``harmony_adapter``): the benchmark has no
    ``upstream-real`` row there, but the patched copy's is measured and the check runs."""
    import json as _json
    import subprocess as _subprocess

    tree, copy = tmp_path / "tree", tmp_path / "copy"
    why = "ValueError: not enough values to unpack (expected 2, got 0)"

    def fake_run(cmd, *, env, **kwargs):
        rows = [_bench_row("floor", 2.0, 1.0)]
        skipped = {"upstream-real": why}
        if env["TRTLLM_SOURCE_DIR"] == str(copy):
            rows, skipped = rows + [_bench_row("upstream-real", 1.3, 0.62)], {}
        out = _json.dumps({"rows": rows, "skipped": skipped})
        return _subprocess.CompletedProcess(cmd, 0, out + "\n", "")

    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    measured = bench.measure(tree, copy)
    assert "error" not in measured, measured
    assert measured["before_error"] == why
    result = check.bench_result(measured)
    assert result.ok and "after: 300+300@20: 1.30 µs/token" in result.detail
    assert f"before not measured: the tree's own processor: {why}" in result.detail
    text = describe.benchmark_rows(measured=measured)
    assert "| 300+300 | 20 | 2.00 | n/a | 1.30 (0.62) |" in text and why in text
    assert str(tmp_path) not in text  # the description names no local path
    # the patched copy's row stays required
    monkeypatch.setattr(
        bench.subprocess,
        "run",
        lambda cmd, **kw: _subprocess.CompletedProcess(
            cmd, 0, _json.dumps({"rows": [], "skipped": {"upstream-real": why}}) + "\n", ""
        ),
    )
    assert not check.bench_result(bench.measure(tree, copy)).ok


@pytest.mark.parametrize("ticket", ["None", "#19223", "TRTLLM-1000", "https://nvbugs/1234567"])
def test_titles_pass_upstreams_format(ticket):
    assert describe.title(ticket).startswith(f"[{ticket}][fix] ")


@pytest.mark.parametrize("ticket", ["", "19223", "[x]", "trtllm-1"])
def test_bad_tickets_are_refused(ticket):
    with pytest.raises(ValueError, match="format"):
        describe.title(ticket)


def test_cli_writes_the_change_set(tree, tmp_path, capsys):
    out = tmp_path / "out"
    code = cli_main(
        [
            "upstream-pr",
            "--source",
            str(tree),
            "--out",
            str(out),
            "--outputs",
            "1",
            "--lint-env",
            str(tmp_path / "no-lint"),
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert (out / "upstream.patch").read_text().startswith("diff --git a/")
    assert (out / "PR.md").is_file() and (out / "summary.json").is_file()
    assert (out / "files" / layout.RESPONSES_UTILS).is_file()
    assert "version line:" in capsys.readouterr().out


def test_cli_reports_a_bad_tree_without_traceback(tmp_path, capsys):
    code = cli_main(["upstream-pr", "--source", str(tmp_path), "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert "responses_utils.py" in err and "Traceback" not in err


def test_new_files_pass_upstreams_ruff_settings(tree, tmp_path):
    """Regression guard for the core's docstrings: upstream lints them with D, E, F, I, W."""
    tools = find_tools(tmp_path / "no-pinned-env")  # the ruff of this environment
    if "ruff" not in tools.bin:
        pytest.skip("ruff is not installed")
    change = build(tree, year=2026, tools=tools)
    out = tmp_path / "new"
    for path, text in change.new_files.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_text(text)
    config = out / "ruff.toml"
    config.write_text(layout.RUFF_SETTINGS)
    paths = sorted(change.new_files)
    lint_run = tools.run("ruff", "check", "--no-fix", "--config", str(config), *paths, cwd=out)
    assert lint_run.returncode == 0, lint_run.stdout[-3000:]
    fmt = tools.run("ruff", "format", "--check", "--config", str(config), *paths, cwd=out)
    assert fmt.returncode == 0, fmt.stdout[-3000:]


def test_docstrings_with_doubled_backslashes_become_raw_with_the_same_value():
    src = 'def f():\n    """µs: ``a\\\\nb``."""\n\n\ndef g():\n    """tab\\there"""\n'
    out = convert.raw_docstrings(src)
    assert 'r"""µs: ``a\\nb``."""' in out
    assert '"""tab\\there"""' in out and 'r"""tab' not in out  # another escape: unchanged
    for name in ("f", "g"):
        assert ast.get_docstring(_definition(out, name)) == ast.get_docstring(
            _definition(src, name)
        )


def test_the_baseline_arm_of_the_regression_tests_stays_here():
    src = 'IMPLS = [\n    "ours",\n    pytest.param("upstream", marks=x),\n]\nOTHER = 1\n'
    assert convert.drop_baseline_arm(src) == 'IMPLS = ["ours"]\nOTHER = 1\n'


# -- real trees ---------------------------------------------------------------------------------


def test_check_passes_on_the_real_tree(tmp_path):
    """``upstream-pr --check`` on ``TRTLLM_SOURCE_DIR`` (installs the pinned linters)."""
    source = os.environ.get("TRTLLM_SOURCE_DIR")
    if not source:
        pytest.skip("TRTLLM_SOURCE_DIR is not set")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "trtllm_stream_fix.cli",
            "upstream-pr",
            "--source",
            source,
            "--out",
            str(tmp_path / "out"),
            "--check",
            "--outputs",
            "30",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "FAIL" not in proc.stdout
