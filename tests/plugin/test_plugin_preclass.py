# SPDX-License-Identifier: Apache-2.0
"""The plugin on the pre-class line (83ab45a5: module-level ``process_streaming_events``).

The stand-in's ``preclass_responses_utils`` and ``preclass_openai_server`` are loaded as
``tensorrt_llm.serve.responses_utils`` and ``.openai_server`` (the ``preclass`` fixture).
Contract: the pre-class group installs there and the class line's sets are absent; on the
class stand-in the pre-class group is absent (its ``process_streaming_events`` has the class
line's shape) and a changed shape refuses it; with the plugin every stream passes the strict
checker and the SDK and shows the client the same at 1 and 20 tokens per engine response;
a streamed turn with storage on is stored as the client saw it; the non-streaming body is
the stream's final response; uninstall restores upstream. Unpatched, the same checks fail.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "standin"))
import plugin_harness as harness

harness.use_standin()

from tensorrt_llm.serve import responses_utils  # the class line

from trtllm_stream_fix.checker.responses import check_responses_events
from trtllm_stream_fix.differential.sdk_oracle import sdk_accumulate
from trtllm_stream_fix.differential.visible import comparable_response
from trtllm_stream_fix.plugin import doctor, installer, targets
from trtllm_stream_fix.plugin.installer import OTHER_LINE, install, uninstall
from trtllm_stream_fix.sim.model import generate_outputs, named_output

pytestmark = pytest.mark.cpu_only

PRE_CLASS = [
    f"{targets.RESPONSES_UTILS}.process_streaming_events",
    f"{targets.RESPONSES_UTILS}.create_response",
    f"{targets.OPENAI_SERVER}.responses_api_process_streaming_events",
    f"{targets.OPENAI_SERVER}.responses_api_create_response",
]
OUTPUTS = [
    named_output("reasoning_answer"),
    named_output("malformed_missing_start"),
    named_output("length_cut"),
    *generate_outputs(6, seed=3),
]


@pytest.fixture
def preclass(monkeypatch):
    """The pre-class stand-in loaded under upstream's module names."""
    monkeypatch.delenv("TRTLLM_STREAM_FIX", raising=False)
    uninstall()
    module = importlib.import_module("tensorrt_llm.serve.preclass_responses_utils")
    server = importlib.import_module("tensorrt_llm.serve.preclass_openai_server")
    monkeypatch.setitem(sys.modules, targets.RESPONSES_UTILS, module)
    monkeypatch.setitem(sys.modules, targets.OPENAI_SERVER, server)
    yield module, server
    uninstall()


@pytest.fixture
def class_line(monkeypatch):
    monkeypatch.delenv("TRTLLM_STREAM_FIX", raising=False)
    uninstall()
    yield
    uninstall()


def _bindings(module: Any, server: Any) -> list[Any]:
    return [
        module.process_streaming_events,
        module.create_response,
        server.responses_api_process_streaming_events,
        server.responses_api_create_response,
    ]


def _serve(server_module: Any, output: Any, split: int, *, stream: bool, store: bool) -> tuple:
    """One request through the stand-in handler: (events or body, the server)."""
    from tensorrt_llm.serve.openai_protocol import ResponsesRequest

    server = server_module.OpenAIServer(harness.engine_for(output, split))
    request = ResponsesRequest(input="hi", stream=stream, store=store)

    async def run() -> Any:
        got = await server.openai_responses(request)
        return [frame async for frame in got] if stream else got

    got = asyncio.run(run())
    return (harness.frames_to_events(got) if stream else got), server, request


def _visible(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "response"} for e in harness.comparable(events)]


def _terminal(events: list[dict[str, Any]]) -> dict[str, Any]:
    return events[-1]["response"]


def _streams_ok(server_module: Any) -> list[str]:
    """The problems of every stream of OUTPUTS at 1 and 20 tokens per engine response."""
    problems = []
    for output in OUTPUTS:
        try:
            runs = {k: _serve(server_module, output, k, stream=True, store=False) for k in (1, 20)}
        except Exception as exc:  # the stream broke off
            problems.append(f"{output.name}: raised {type(exc).__name__}: {exc}")
            continue
        runs = {k: got[0] for k, got in runs.items()}
        for k, events in runs.items():
            check = check_responses_events(events)
            if not check.ok:
                problems.append(f"{output.name} k={k}: {check.violations[:1]}")
            try:
                sdk_accumulate(events)
            except Exception as exc:
                problems.append(f"{output.name} k={k}: SDK {exc}")
        if _visible(runs[1]) != _visible(runs[20]):
            problems.append(f"{output.name}: k=20 differs from k=1")
    return problems


def test_install_on_the_pre_class_shape_patches_its_group_and_leaves_the_class_sets_absent(
    preclass,
):
    module, server = preclass
    before = _bindings(module, server)
    report = install()
    statuses = {o.target: o.status for o in report.outcomes}
    assert [statuses[t] for t in PRE_CLASS] == ["patched"] * 4
    other = [o for o in report.outcomes if o.detail == OTHER_LINE]
    assert {o.target for o in other} >= {
        f"{targets.RESPONSES_UTILS}.ResponsesStreamingProcessor",
        f"{targets.RESPONSES_UTILS}._create_output_content_harmony",
    }
    assert {o.status for o in other} == {"absent"} and not report.failed
    assert targets.detect_line() == targets.PRE_CLASS_LINE and installer.is_active()
    bound = server.responses_api_process_streaming_events
    assert bound.__trtllm_stream_fix__ and bound.__wrapped__ is before[0]
    assert all(b is not a for a, b in zip(before, _bindings(module, server)))
    restored = uninstall()
    assert {o.status for o in restored.outcomes} == {"restored"}
    assert _bindings(module, server) == before and not installer.is_active()


def test_doctor_names_the_pre_class_line_and_counts_no_class_target_against_it(preclass):
    report = doctor.doctor_report(spawn=False)
    text = report.to_text()
    assert "upstream line: pre-class line" in text
    assert report.active_here and report.line == targets.PRE_CLASS_LINE
    by_status = {c.target.dotted: c.status for c in report.checks}
    assert by_status[f"{targets.RESPONSES_UTILS}.ResponsesStreamingProcessor"] == "other-line"
    assert [by_status[t] for t in PRE_CLASS] == ["ok"] * 4
    assert not any("expected shape" in reason for reason in report.reasons())


def test_on_the_class_line_the_pre_class_group_is_absent(class_line):
    """The class line has a ``process_streaming_events`` of its own shape: left alone."""
    original = responses_utils.process_streaming_events
    report = install()
    statuses = {o.target: (o.status, o.detail) for o in report.outcomes}
    assert [statuses[t] for t in PRE_CLASS] == [("absent", OTHER_LINE)] * 4
    assert responses_utils.process_streaming_events is original
    assert statuses[f"{targets.RESPONSES_UTILS}.ResponsesStreamingProcessor"][0] == "patched"
    assert targets.detect_line() == targets.CLASS_LINE and installer.is_active()


def test_a_changed_pre_class_shape_refuses_only_its_group(preclass, monkeypatch, caplog):
    module, _ = preclass

    async def process_streaming_events(request, generator, model_name):  # changed upstream
        yield ""

    monkeypatch.setattr(module, "process_streaming_events", process_streaming_events)
    with caplog.at_level(logging.WARNING, logger="trtllm_stream_fix.plugin"):
        report = install()
    statuses = {o.target: o.status for o in report.outcomes}
    assert [statuses[t] for t in PRE_CLASS] == ["refused"] * 4
    assert module.process_streaming_events is process_streaming_events
    assert "process_streaming_events" in installer.last_refusals()["pre-class"]
    assert "not patching group 'pre-class'" in caplog.text
    assert not installer.is_active()


def test_unpatched_pre_class_streams_fail_the_checks(preclass):
    _, server = preclass
    assert len(_streams_ok(server)) >= 3


def test_with_the_plugin_pre_class_streams_are_correct_at_any_interval(preclass):
    _, server = preclass
    install()
    assert _streams_ok(server) == []


def test_with_the_plugin_a_streamed_turn_is_stored_as_the_client_saw_it(preclass):
    _, server_module = preclass
    install()
    output = named_output("reasoning_answer")
    events, server, request = _serve(server_module, output, 20, stream=True, store=True)
    stored = asyncio.run(server.conversation_store.load_response(request.request_id))
    assert stored is not None
    terminal = _terminal(events)
    dumped = stored.model_dump(mode="json")
    for key in ("id", "status", "output"):
        assert dumped[key] == terminal[key], key
    assert asyncio.run(server.conversation_store.get_conversation_history(request.request_id))
    _, off, request = _serve(server_module, output, 20, stream=True, store=False)
    assert asyncio.run(off.conversation_store.load_response(request.request_id)) is None


@pytest.mark.parametrize("name", ["reasoning_answer", "length_cut", "malformed_missing_start"])
def test_with_the_plugin_the_body_is_the_streams_final_response(preclass, name):
    _, server_module = preclass
    install()
    output = named_output(name)
    events, _, _ = _serve(server_module, output, 20, stream=True, store=False)
    body, server, request = _serve(server_module, output, 20, stream=False, store=True)
    sent = comparable_response(body.model_dump(mode="json"))
    terminal = comparable_response(_terminal(events))
    for key in ("status", "output", "usage"):
        assert sent[key] == terminal[key], key
    assert asyncio.run(server.conversation_store.load_response(request.request_id)) is body


def test_the_replacements_accept_keywords_they_do_not_read(preclass):
    module, _ = preclass
    install()
    from tensorrt_llm.serve.openai_protocol import ResponsesRequest

    output = named_output("reasoning_answer")
    request = ResponsesRequest(input="hi", stream=True, store=False)
    sampling = request.to_sampling_params()

    async def run() -> list[str]:
        updates = harness.engine_for(output, 5)([], sampling)
        promise = sys.modules[targets.OPENAI_SERVER].Promise(updates)
        events = module.process_streaming_events(
            request, sampling, promise, None, "gpt-oss-20b", None, future_option=True
        )
        return [frame async for frame in events]

    events = harness.frames_to_events(asyncio.run(run()))
    assert check_responses_events(events).ok
