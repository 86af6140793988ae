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

sys.path.insert(0, str(Path(__file__).parents[1] / "standin"))
import plugin_harness

plugin_harness.use_standin()
uninstalled = plugin_harness.uninstalled

from tensorrt_llm.serve import openai_server, postprocess_handlers, responses_utils

from trtllm_stream_fix.plugin import installer as install_mod
from trtllm_stream_fix.plugin import registry, targets
from trtllm_stream_fix.plugin.installer import StreamFixInstallError, install, uninstall

pytestmark = pytest.mark.cpu_only

#: Bindings of the stand-in's module design (the class line; the pre-class line's are absent).
ON_LINE = {
    b
    for p in registry.PATCHES
    if targets.check(p.checks[0]).status != "other-line"
    for b in p.bindings
}
BINDINGS = [dotted for dotted in registry.bindings() if dotted in ON_LINE]
NAMES = [(sys.modules[d.rsplit(".", 1)[0]], d.rsplit(".", 1)[1]) for d in BINDINGS]


def _on_line(outcomes):
    """Outcomes of the patches of the stand-in's module design."""
    return [o for o in outcomes if o.detail != install_mod.OTHER_LINE]


RESPONSE_MODEL = "tensorrt_llm.serve.responses_utils.ResponsesResponse"
CREATE_RESPONSE = "tensorrt_llm.serve.responses_utils._create_response"
INPUT = "tensorrt_llm.serve.responses_utils._parse_response_input"
PROCESSOR = "tensorrt_llm.serve.responses_utils.ResponsesStreamingProcessor"


def _snapshot(names=NAMES) -> list[object]:
    return [module.__dict__[name] for module, name in names]


def _index(dotted: str) -> int:
    return BINDINGS.index(dotted)


def _group(outcomes, group: str = "responses") -> dict[str, str]:
    """Statuses of the bindings of one patch group."""
    names = {b for p in registry.patches(group) for b in p.bindings}
    return {o.target: o.status for o in outcomes if o.target in names}


@pytest.fixture(autouse=True)
def clean(uninstalled):
    yield


def test_install_patches_every_ledger_target_and_uninstall_restores_the_same_objects():
    before = _snapshot()
    report = install()
    assert [o.status for o in _on_line(report.outcomes)] == ["patched"] * len(NAMES)
    after = _snapshot()
    assert all(a is not b for a, b in zip(after, before))
    assert after[0] is after[1]  # both bindings name one class
    assert issubclass(after[0], before[0])
    assert install_mod.is_active()
    restored = uninstall()
    assert [o.status for o in _on_line(restored.outcomes)] == ["restored"] * len(NAMES)
    assert all(a is b for a, b in zip(_snapshot(), before))
    assert not install_mod.is_active()


def test_install_is_idempotent():
    install()
    first = _snapshot()
    again = install()
    assert {o.status for o in _on_line(again.outcomes)} == {"already"}
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
        statuses = {o.target: o.status for o in _on_line(report.outcomes)}
        assert statuses["tensorrt_llm.serve.responses_utils._parse_response_input"] == "left"
        assert responses_utils._parse_response_input is sentinel
        assert responses_utils.ResponsesStreamingProcessor is before[0]
    finally:
        responses_utils._parse_response_input = before[_index(INPUT)]


def _from_request(cls, request, sampling, model_name, created_time, output, status):
    raise AssertionError("never called")  # renamed: the replacement reads sampling_params


def _create_response(final_res, request, model_name):  # an upstream that changed shape
    raise AssertionError("never called")


#: Per optional group: (the object, the attribute given another shape, that shape, the target
#: refused, the module attribute upstream keeps, what the refusal names).
OTHER_SHAPES = {
    "response": (
        lambda: responses_utils.ResponsesResponse,
        "from_request",
        classmethod(_from_request),
        RESPONSE_MODEL,
        "ResponsesResponse",
        "ResponsesResponse.from_request",
    ),
    "usage": (
        lambda: responses_utils,
        "_create_response",
        _create_response,
        CREATE_RESPONSE,
        "_create_response",
        "_create_response",
    ),
}


@pytest.mark.parametrize("group", OTHER_SHAPES)
def test_a_mismatch_refuses_only_its_own_group(monkeypatch, caplog, group):
    """The complete Response model and the non-streaming usage patch are groups of their own:
    a target of another shape is left as upstream's, and the event fix stays in place."""
    owner, attr, other, target, kept_name, named = OTHER_SHAPES[group]
    monkeypatch.setattr(owner(), attr, other)
    kept = getattr(responses_utils, kept_name)
    with caplog.at_level(logging.WARNING, logger="trtllm_stream_fix.plugin"):
        report = install()
    statuses = {o.target: o.status for o in _on_line(report.outcomes)}
    assert statuses.pop(target) == "refused"
    assert set(statuses.values()) == {"patched"}
    assert getattr(responses_utils, kept_name) is kept
    assert named in install_mod.last_refusals()[group]
    assert named in caplog.text
    assert install_mod.is_active()


def test_shapes_of_the_standin_match_the_recorded_reference():
    checks = [targets.check(t) for t in registry.all_targets()]
    assert [c.describe() for c in checks if not c.ok and c.status != "other-line"] == []


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
    statuses = _group(_on_line(report.outcomes))
    assert statuses["tensorrt_llm.serve.responses_utils.ResponsesStreamingProcessor"] == "refused"
    assert statuses["tensorrt_llm.serve.openai_server.ResponsesStreamingProcessor"] == "refused"
    assert set(statuses.values()) == {"refused"}  # all or nothing across the group
    group = [i for i, b in enumerate(BINDINGS) if b in statuses]
    after = _snapshot()
    assert [after[i] for i in group] == [before[i] for i in group]  # upstream untouched
    lines = [r.getMessage() for r in caplog.records if "not patching" in r.getMessage()]
    assert len(lines) == 1
    assert "ResponsesStreamingProcessor.process_single_output" in lines[0]
    assert "expected (self, res)" in lines[0] and "found (self, res, finished)" in lines[0]
    assert not install_mod.is_active()


def test_missing_target_is_refused(monkeypatch):
    monkeypatch.delattr(responses_utils, "_parse_output_tokens")
    report = install()
    statuses = {o.target: o.status for o in _on_line(report.outcomes)}
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
    final = next(t for t in registry.all_targets() if t.path.endswith(".get_final_response"))
    check = targets.check(final)
    assert (check.status, check.version) == ("ok", "993c0eec")
    report = install()
    assert {o.status for o in _on_line(report.outcomes)} == {"patched"}


def test_a_version_without_the_guard_is_patched_without_it(monkeypatch):
    monkeypatch.delattr(responses_utils, "guard_responses_stream")
    monkeypatch.delattr(openai_server, "guard_responses_stream")
    statuses = {o.target: o.status for o in _on_line(install().outcomes)}
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
    assert {o.status for o in _on_line(report.outcomes)} == {"disabled"}
    assert all(a is b for a, b in zip(_snapshot(), before))
    assert not install_mod.is_active()


def test_openai_server_imported_after_the_patch_is_recorded_and_restored(monkeypatch):
    install()
    fixed = responses_utils.ResponsesStreamingProcessor
    uninstall_target = "tensorrt_llm.serve.openai_server.ResponsesStreamingProcessor"
    # What an import of openai_server after the patch does: bind the fixed class by name.
    install_mod._applied.pop(uninstall_target)
    openai_server.ResponsesStreamingProcessor = fixed
    outcome = {o.target: o for o in _on_line(install().outcomes)}[uninstall_target]
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


def test_a_mismatch_in_a_module_loaded_later_takes_back_the_groups_patches(monkeypatch):
    """All or nothing across modules: openai_server loading last with a guard that is not
    responses_utils' (another binding) takes back the Responses patches applied before."""
    before = _snapshot()
    name = "tensorrt_llm.serve.openai_server"
    monkeypatch.delitem(sys.modules, name)  # not imported yet
    first = {o.target: o.status for o in _on_line(install().outcomes)}
    assert first[PROCESSOR] == "patched"
    assert first[f"{name}.ResponsesStreamingProcessor"] == "not-loaded"

    async def guard_responses_stream(stream, terminal_events):  # a server's own guard
        yield ""

    monkeypatch.setattr(openai_server, "guard_responses_stream", guard_responses_stream)
    for chat in ("chat_harmony_streaming_post_processor", "chat_harmony_post_processor"):
        # what its import binds: postprocess_handlers' (patched) post-processors
        monkeypatch.setattr(openai_server, chat, getattr(postprocess_handlers, chat))
    monkeypatch.setitem(sys.modules, name, openai_server)  # now it has loaded
    second = install()
    assert set(_group(_on_line(second.outcomes)).values()) == {"refused"}
    assert f"{name}.guard_responses_stream" in install_mod.last_refusals()["responses"]
    assert responses_utils.ResponsesStreamingProcessor is before[0]  # taken back
    assert set(_group(_on_line(second.outcomes), "chat").values()) <= {"patched", "already"}
    assert not install_mod.is_active()


def test_a_chat_mismatch_refuses_the_chat_group_only(monkeypatch):
    def chat_harmony_post_processor(rsp, args, tokenizer):  # a new required parameter
        raise AssertionError("never called")

    monkeypatch.setattr(
        postprocess_handlers, "chat_harmony_post_processor", chat_harmony_post_processor
    )
    report = install()
    assert set(_group(_on_line(report.outcomes), "chat").values()) == {"refused"}
    assert "new required parameter 'tokenizer'" in install_mod.last_refusals()["chat"]
    assert set(_group(_on_line(report.outcomes)).values()) == {"patched"}
    assert postprocess_handlers.chat_harmony_post_processor is chat_harmony_post_processor
    assert install_mod.is_active()
