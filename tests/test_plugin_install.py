# SPDX-License-Identifier: Apache-2.0
"""Install / uninstall of the trtllm-serve plugin against the TensorRT-LLM stand-in.

Contract: install is idempotent and per process; uninstall restores exactly the objects it
replaced; a target whose shape differs from the recorded one refuses its patch set with one
log line naming target, expected and found, and leaves upstream untouched;
``TRTLLM_STREAM_FIX=require`` makes that fatal and ``TRTLLM_STREAM_FIX=0`` patches nothing.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "standin"))
import plugin_harness

plugin_harness.use_standin()

from tensorrt_llm.serve import openai_server, postprocess_handlers, responses_utils

from trtllm_stream_fix.plugin import installer as install_mod
from trtllm_stream_fix.plugin import targets
from trtllm_stream_fix.plugin.installer import StreamFixInstallError, install, uninstall

pytestmark = pytest.mark.cpu_only

NAMES = [
    (responses_utils, "ResponsesStreamingProcessor"),
    (openai_server, "ResponsesStreamingProcessor"),
    (responses_utils, "_create_output_content_harmony"),
    (responses_utils, "_parse_response_input"),
    (responses_utils, "guard_responses_stream"),
    (openai_server, "guard_responses_stream"),
    (postprocess_handlers, "chat_harmony_streaming_post_processor"),
    (postprocess_handlers, "chat_harmony_post_processor"),
    (openai_server, "chat_harmony_streaming_post_processor"),
    (openai_server, "chat_harmony_post_processor"),
    (responses_utils, "ResponsesResponse"),  # its own group ("response")
    (responses_utils, "_create_response"),  # its own group ("usage")
]
RESPONSE_MODEL = "tensorrt_llm.serve.responses_utils.ResponsesResponse"
CREATE_RESPONSE = "tensorrt_llm.serve.responses_utils._create_response"


def _snapshot(names=NAMES) -> list[object]:
    return [module.__dict__[name] for module, name in names]


def _group(outcomes) -> dict[str, str]:
    """Statuses of the ``responses`` group (every target but the Response model's and the
    usage's, each a group of its own)."""
    return {
        o.target: o.status for o in outcomes if o.target not in (RESPONSE_MODEL, CREATE_RESPONSE)
    }


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    monkeypatch.delenv("TRTLLM_STREAM_FIX", raising=False)
    uninstall()
    yield
    uninstall()


def test_install_patches_every_ledger_target_and_uninstall_restores_the_same_objects():
    before = _snapshot()
    report = install()
    assert [o.status for o in report.outcomes] == ["patched"] * len(NAMES)
    after = _snapshot()
    assert all(a is not b for a, b in zip(after, before))
    assert after[0] is after[1]  # both bindings name one class
    assert issubclass(after[0], before[0])
    assert install_mod.is_active()
    restored = uninstall()
    assert [o.status for o in restored.outcomes] == ["restored"] * len(NAMES)
    assert all(a is b for a, b in zip(_snapshot(), before))
    assert not install_mod.is_active()


def test_install_is_idempotent():
    install()
    first = _snapshot()
    again = install()
    assert {o.status for o in again.outcomes} == {"already"}
    assert all(a is b for a, b in zip(_snapshot(), first))
    uninstall()
    assert not install_mod.is_active()


def test_uninstall_leaves_a_name_someone_else_rebound():
    before = _snapshot()
    install()
    sentinel = object()
    responses_utils._parse_response_input = sentinel
    try:
        report = uninstall()
        statuses = {o.target: o.status for o in report.outcomes}
        assert statuses["tensorrt_llm.serve.responses_utils._parse_response_input"] == "left"
        assert responses_utils._parse_response_input is sentinel
        assert responses_utils.ResponsesStreamingProcessor is before[0]
    finally:
        responses_utils._parse_response_input = before[3]


def test_a_response_model_mismatch_refuses_only_its_own_set(monkeypatch, caplog):
    """The complete Response model is its own group: the event fix stays in place."""

    def from_request(cls, request, sampling_params, model_name, created_time, output):
        raise AssertionError("never called")

    monkeypatch.setattr(
        responses_utils.ResponsesResponse, "from_request", classmethod(from_request)
    )
    model = responses_utils.ResponsesResponse
    with caplog.at_level(logging.WARNING, logger="trtllm_stream_fix.plugin"):
        report = install()
    statuses = {o.target: o.status for o in report.outcomes}
    assert statuses.pop(RESPONSE_MODEL) == "refused"
    assert set(statuses.values()) == {"patched"}
    assert responses_utils.ResponsesResponse is model
    assert "ResponsesResponse.from_request" in install_mod.last_refusals()["response"]
    assert install_mod.is_active()


def test_a_create_response_mismatch_refuses_only_the_usage_set(monkeypatch, caplog):
    """The non-streaming usage patch is its own group: a ``_create_response`` of another
    shape is left as upstream's, the event fix and the Response model stay in place."""

    def _create_response(final_res, request, model_name):  # an upstream that changed shape
        raise AssertionError("never called")

    monkeypatch.setattr(responses_utils, "_create_response", _create_response)
    with caplog.at_level(logging.WARNING, logger="trtllm_stream_fix.plugin"):
        report = install()
    statuses = {o.target: o.status for o in report.outcomes}
    assert statuses.pop(CREATE_RESPONSE) == "refused"
    assert set(statuses.values()) == {"patched"}
    assert responses_utils._create_response is _create_response
    assert "_create_response" in install_mod.last_refusals()["usage"]
    assert "_create_response" in caplog.text
    assert install_mod.is_active()


def test_shapes_of_the_standin_match_the_recorded_reference():
    checks = [targets.check(t) for t in targets.ALL_TARGETS]
    assert [c.describe() for c in checks if not c.ok] == []


def test_shape_mismatch_refuses_every_set_of_the_group_and_logs_one_clear_line(monkeypatch, caplog):
    """Defect 2: a refused streaming set must not leave the other Responses sets applied."""

    def process_single_output(self, res, finished):  # an upstream that changed shape
        return []

    monkeypatch.setattr(
        responses_utils.ResponsesStreamingProcessor, "process_single_output", process_single_output
    )
    before = _snapshot()
    with caplog.at_level(logging.WARNING, logger="trtllm_stream_fix.plugin"):
        report = install()
    statuses = _group(report.outcomes)
    assert statuses["tensorrt_llm.serve.responses_utils.ResponsesStreamingProcessor"] == "refused"
    assert statuses["tensorrt_llm.serve.openai_server.ResponsesStreamingProcessor"] == "refused"
    assert set(statuses.values()) == {"refused"}  # all or nothing across the group
    assert _snapshot(NAMES[:-2]) == before[:-2]  # upstream untouched, no half-patched server
    lines = [r.getMessage() for r in caplog.records if "not patching" in r.getMessage()]
    assert len(lines) == 1
    assert "ResponsesStreamingProcessor.process_single_output" in lines[0]
    assert "expected (self, res)" in lines[0] and "found (self, res, finished)" in lines[0]
    assert not install_mod.is_active()


def test_missing_target_is_refused(monkeypatch):
    monkeypatch.delattr(responses_utils, "_parse_output_tokens")
    report = install()
    statuses = {o.target: o.status for o in report.outcomes}
    assert statuses["tensorrt_llm.serve.responses_utils._create_output_content_harmony"] == (
        "refused"
    )
    assert statuses["tensorrt_llm.serve.responses_utils.ResponsesStreamingProcessor"] == ("refused")
    assert "no attribute" in report.failed[0].detail
    assert "_parse_output_tokens" in install_mod.last_refusals()["responses"]


def test_993c0eec_final_response_shape_is_recorded_and_installs(monkeypatch):
    """Defect 2: 993c0eec's ``get_final_response(self, final_res, num_prompt_tokens=None)``
    (read from the real file) is a known shape, so the whole group installs there."""

    async def get_final_response(self, final_res, num_prompt_tokens=None):
        return ""

    monkeypatch.setattr(
        responses_utils.ResponsesStreamingProcessor, "get_final_response", get_final_response
    )
    check = targets.check(targets.PROCESSOR_TARGETS[-1])
    assert (check.status, check.version) == ("ok", "993c0eec")
    report = install()
    assert {o.status for o in report.outcomes} == {"patched"}


def test_a_version_without_the_guard_is_patched_without_it(monkeypatch):
    monkeypatch.delattr(responses_utils, "guard_responses_stream")
    monkeypatch.delattr(openai_server, "guard_responses_stream")
    statuses = {o.target: o.status for o in install().outcomes}
    assert statuses["tensorrt_llm.serve.responses_utils.guard_responses_stream"] == "absent"
    assert statuses["tensorrt_llm.serve.responses_utils.ResponsesStreamingProcessor"] == ("patched")


def test_require_makes_a_refusal_fatal(monkeypatch):
    monkeypatch.setattr(responses_utils, "_parse_response_input", lambda item: None)
    monkeypatch.setenv("TRTLLM_STREAM_FIX", "require")
    with pytest.raises(StreamFixInstallError, match="_parse_response_input"):
        install()


def test_env_zero_leaves_upstream(monkeypatch):
    before = _snapshot()
    monkeypatch.setenv("TRTLLM_STREAM_FIX", "0")
    report = install()
    assert {o.status for o in report.outcomes} == {"disabled"}
    assert all(a is b for a, b in zip(_snapshot(), before))
    assert not install_mod.is_active()


def test_openai_server_imported_after_the_patch_is_recorded_and_restored(monkeypatch):
    install()
    fixed = responses_utils.ResponsesStreamingProcessor
    uninstall_target = "tensorrt_llm.serve.openai_server.ResponsesStreamingProcessor"
    # What an import of openai_server after the patch does: bind the fixed class by name.
    install_mod._applied.pop(uninstall_target)
    openai_server.ResponsesStreamingProcessor = fixed
    outcome = {o.target: o for o in install().outcomes}[uninstall_target]
    assert (outcome.status, outcome.detail) == ("already", "bound at import")
    uninstall()
    assert openai_server.ResponsesStreamingProcessor is targets.upstream_class(fixed)


def test_chat_post_processors_are_patched_and_pickle_by_reference():
    import pickle

    from trtllm_stream_fix.plugin import chat

    install()
    for module in (postprocess_handlers, openai_server):
        function = module.chat_harmony_streaming_post_processor
        assert function is chat.chat_harmony_streaming_post_processor
        assert pickle.loads(pickle.dumps(function)) is function  # what a worker receives
        assert module.chat_harmony_post_processor is chat.chat_harmony_post_processor


def test_a_chat_mismatch_in_a_module_loaded_later_takes_back_the_responses_patches(monkeypatch):
    """All or nothing with the Responses set, also when postprocess_handlers loads last."""
    before = _snapshot()
    name = "tensorrt_llm.serve.postprocess_handlers"
    monkeypatch.delitem(sys.modules, name)  # not imported yet
    first = {o.target: o.status for o in install().outcomes}
    assert first["tensorrt_llm.serve.responses_utils.ResponsesStreamingProcessor"] == "patched"
    assert first[f"{name}.chat_harmony_post_processor"] == "not-loaded"

    def chat_harmony_post_processor(rsp, args, tokenizer):  # an upstream that changed shape
        raise AssertionError("never called")

    monkeypatch.setattr(
        postprocess_handlers, "chat_harmony_post_processor", chat_harmony_post_processor
    )
    monkeypatch.setitem(sys.modules, name, postprocess_handlers)  # now it has loaded
    second = install()
    assert set(_group(second.outcomes).values()) == {"refused"}
    assert "chat_harmony_post_processor" in install_mod.last_refusals()["responses"]
    assert responses_utils.ResponsesStreamingProcessor is before[0]  # taken back
    assert openai_server.ResponsesStreamingProcessor is before[1]
    assert not install_mod.is_active()
