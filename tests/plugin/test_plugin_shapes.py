# SPDX-License-Identifier: Apache-2.0
"""Shape matching decisions, per recorded version line, from the registry's own data.

Every recorded shape matches its lines; harmless drift (an optional parameter added or
dropped) is ``compatible`` and installs; a change of meaning (a parameter the replacement
reads gone or moved, a new required parameter, a coroutine turned sync, another return
kind) is refused. Functions of those shapes are built and installed on the stand-in.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "standin"))
import plugin_harness

plugin_harness.use_standin()
uninstalled = plugin_harness.uninstalled

from tensorrt_llm.serve import openai_server, postprocess_handlers, responses_utils  # noqa: F401

from trtllm_stream_fix.plugin import installer, registry, targets
from trtllm_stream_fix.plugin.installer import install

pytestmark = pytest.mark.cpu_only


def _on_line(outcomes):
    """Outcomes of the patches of the stand-in's module design (not the pre-class line's)."""
    return [o for o in outcomes if o.detail != installer.OTHER_LINE]


SHAPED = [t for t in registry.all_targets() if t.shapes]
CASES = [(t, s) for t in SHAPED for s in t.shapes]
IDS = [f"{t.path}@{'+'.join(s.lines)}" for t, s in CASES]
USAGE = registry.patch("usage").checks[0]


def _judge(target: targets.Target, params: str, **kw) -> targets.TargetCheck:
    kw.setdefault("is_async", target.kind == "coroutine")
    kw.setdefault("returns", target.returns)
    return targets.judge(target, params, **kw)


def _with_required(params: str, name: str) -> str:
    """``params`` with a new required parameter after the last required one."""
    parts = [p.strip() for p in params.split(",")]
    at = max(
        (i + 1 for i, p in enumerate(parts) if not p.endswith("=") and "*" not in p), default=0
    )
    return ", ".join(parts[:at] + [name] + parts[at:])


@pytest.mark.parametrize(("target", "shape"), CASES, ids=IDS)
def test_each_recorded_shape_matches_its_lines(target, shape):
    check = _judge(target, shape.params)
    assert check.status == "ok"
    assert set(shape.lines) <= set(check.version.split(", "))


@pytest.mark.parametrize(("target", "shape"), CASES, ids=IDS)
def test_a_new_optional_keyword_is_compatible(target, shape):
    check = _judge(target, shape.params + ", *, new_option=")
    assert check.status == "compatible", check.describe()
    assert "+new_option" in check.why and check.ok


@pytest.mark.parametrize(("target", "shape"), CASES, ids=IDS)
def test_a_new_required_parameter_is_refused(target, shape):
    check = _judge(target, _with_required(shape.params, "new_required"))
    assert check.status == "mismatch"
    assert "new required parameter 'new_required'" in check.why


@pytest.mark.parametrize(("target", "shape"), CASES, ids=IDS)
def test_a_parameter_the_replacement_reads_cannot_go(target, shape):
    always = [n for n in target.needed() if all(n in s.params.split(", ") for s in target.shapes)]
    for name in always:
        params = ", ".join(p for p in shape.params.split(", ") if p.rstrip("=") != name)
        check = _judge(target, params)
        assert check.status == "mismatch", (name, check.describe())
        assert repr(name) in check.why


def test_a_read_parameter_that_moved_is_refused_unless_bound_by_name():
    final = next(t for t in SHAPED if t.path.endswith(".get_final_response"))
    moved = _judge(final, "self, num_prompt_tokens=, final_res=")
    assert moved.status == "mismatch" and "moved" in moved.why
    reordered = (
        "use_harmony, final_res, request, model_name, response_creation_time, sampling_params"
    )
    assert _judge(USAGE, reordered).ok  # the usage wrapper binds by name


def test_an_optional_read_parameter_may_go_only_if_nothing_takes_its_place():
    final = next(t for t in SHAPED if t.path.endswith(".get_final_response"))
    assert _judge(final, "self, final_res").status == "ok"  # early-2026
    taken = _judge(final, "self, final_res, tokenizer=")
    assert taken.status == "mismatch" and "'num_prompt_tokens' is gone" in taken.why


def test_a_coroutine_turned_sync_and_another_return_kind_are_refused():
    final = next(t for t in SHAPED if t.kind == "coroutine")
    assert _judge(final, final.shapes[0].params, is_async=False).status == "mismatch"
    other = _judge(USAGE, USAGE.shapes[0].params, returns="responsesresponse")
    assert other.status == "mismatch" and "returns responsesresponse" in other.why
    assert _judge(USAGE, USAGE.shapes[0].params, returns=None).ok  # unannotated: not judged


def test_the_tool_call_ids_line_is_compatible_even_unrecorded():
    """71051154162's ``_create_response`` (no ``streamed_item_ids``) against the lines
    recorded before it: compatible, so the usage patch installs."""
    recorded = next(s for s in USAGE.shapes if registry.TOOL_CALL_IDS in s.lines)
    others = tuple(s for s in USAGE.shapes if registry.TOOL_CALL_IDS not in s.lines)
    before = dataclasses.replace(USAGE, shapes=others)
    check = _judge(before, recorded.params)
    assert check.status == "compatible"
    assert "-streamed_item_ids against 271a1eda, terminal-event" in check.why


# -- installed on the stand-in -----------------------------------------------------------


@pytest.fixture(autouse=True)
def clean(uninstalled):
    yield


def _build(name: str, params: str, body: str, *, is_async: bool = False) -> object:
    """A function of ``params`` (a recorded shape: ``x=`` defaults to None)."""
    args = ", ".join(p + "None" if p.endswith("=") else p for p in params.split(", "))
    namespace: dict[str, object] = {}
    exec(f"{'async ' if is_async else ''}def {name}({args}):\n    {body}\n", namespace)
    return namespace[name]


def _forwarding(params: str) -> object:
    """A ``_create_response`` of ``params`` that runs the stand-in's with what it knows."""
    original = responses_utils._create_response
    known = {p.rstrip("=") for p in targets.shape_of(original).split(", ")}
    body = (
        "return ORIGINAL(**{k: v for k, v in locals().items() if k in KNOWN})"
        if "**" not in params
        else "raise AssertionError"
    )
    func = _build("_create_response", params, body)
    func.__globals__.update(ORIGINAL=original, KNOWN=known)
    return func


@pytest.mark.parametrize("shape", USAGE.shapes, ids=lambda s: "+".join(s.lines))
def test_usage_installs_on_each_recorded_create_response(monkeypatch, shape):
    monkeypatch.setattr(responses_utils, "_create_response", _forwarding(shape.params))
    statuses = {o.target: o.status for o in _on_line(install().outcomes)}
    assert statuses[USAGE.dotted] == "patched"
    assert installer.group_states()["usage"] == "installed"


def test_usage_installs_with_a_new_optional_keyword_and_forwards_it(monkeypatch):
    seen = {}

    def _create_response(
        final_res,
        use_harmony,
        request,
        model_name,
        response_creation_time,
        sampling_params,
        *,
        new_option=None,
        **kwargs,
    ):
        seen["new_option"] = new_option
        return "response", []

    monkeypatch.setattr(responses_utils, "_create_response", _create_response)
    statuses = {o.target: o.status for o in _on_line(install().outcomes)}
    assert statuses[USAGE.dotted] == "patched"
    result = responses_utils._create_response(None, False, None, "m", 0, None, new_option=7)
    assert result == ("response", []) and seen == {"new_option": 7}


def test_a_new_required_parameter_refuses_usage_only(monkeypatch):
    params = _with_required(USAGE.shapes[-1].params, "store")
    func = _build("_create_response", params, "raise AssertionError")
    monkeypatch.setattr(responses_utils, "_create_response", func)
    report = install()
    statuses = {o.target: o.status for o in _on_line(report.outcomes)}
    assert statuses.pop(USAGE.dotted) == "refused"
    assert set(statuses.values()) == {"patched"}
    assert "new required parameter 'store'" in installer.last_refusals()["usage"]
    assert installer.group_states()["usage"] == "refused"
    assert installer.group_states()["responses"] == "installed"


@pytest.mark.parametrize("line", registry.RESPONSES_LINES)
def test_the_processor_installs_on_each_lines_final_response_shapes(monkeypatch, line):
    processor = responses_utils.ResponsesStreamingProcessor
    for target in registry.patch("processor").checks[1:]:
        shape = next((s for s in target.shapes if line in s.lines), None)
        if shape is None:
            continue
        method = target.path.split(".")[-1]
        func = _build(
            method, shape.params, "raise AssertionError", is_async=target.kind == "coroutine"
        )
        monkeypatch.setattr(processor, method, func)
    statuses = {o.target: o.status for o in _on_line(install().outcomes)}
    assert statuses[registry.patch("processor").target] == "patched"
    assert installer.is_active()
