# SPDX-License-Identifier: Apache-2.0
"""Hostile bodies to ``POST /v1/responses/compact`` and to a create's compaction fields:
each is an OpenAI-shaped 4xx naming what is wrong (never a 500), and the server still
compacts afterwards."""

from __future__ import annotations

import json

import httpx
import pytest

pytestmark = pytest.mark.cpu_only
MODEL = "gpt-oss-120b"
USER = [{"role": "user", "content": "Plan a trip to Lisbon."}]


def _body(**fields) -> bytes:
    return json.dumps({"model": MODEL, **fields}).encode()


def _compaction(blob) -> dict:
    return {"type": "compaction", "encrypted_content": blob}


COMPACT_CASES = [
    (b"{not json", 400, "invalid_json", None),
    (_body(input=[]).replace(b"[]", b"[" * 5000 + b"]" * 5000), 400, "invalid_json", None),
    (b"[]", 400, "invalid_json", None),
    (b"", 400, "invalid_json", None),
    (_body(input="x" * 2_000_000), 413, "body_too_large", None),
    (_body(input=5), 400, "invalid_value", "input"),
    (_body(input=[[1, 2]]), 400, "invalid_value", "input"),
    (_body(input="\\ud800").replace(b"\\\\ud800", b"\\ud800"), 400, "invalid_value", "input"),
    (_body(input=[{"role": "user", "content": 5}]), 400, "invalid_value", "input[0].content"),
    (json.dumps({"model": 5, "input": "x"}).encode(), 400, "invalid_value", "model"),
    (_body(input="x", instructions=[]), 400, "invalid_value", "instructions"),
    (_body(input="x", previous_response_id=5), 400, "invalid_value", "previous_response_id"),
    (_body(input=[*USER, _compaction("tsfc1." + "A" * 900_000)]), 400, None, None),
    (_body(input=[*USER, _compaction(5)]), 400, "invalid_value", "input[1].encrypted_content"),
    (_body(input=[*USER, {"type": "compaction"}]), 400, None, "input[1].encrypted_content"),
    (_body(input=[*USER, *[_compaction("tsfc1.x")] * 5000]), 400, None, None),
    (_body(input=[*USER, {"type": "compaction_trigger"}]), 400, None, "input[1].type"),
    (_body(input=[{"type": "item_reference", "id": 5}]), 400, "invalid_value", "input[0].id"),
]


def _assert_openai_error(response: httpx.Response, status: int, code, param) -> None:
    assert response.status_code == status, response.text[:300]
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert error["type"] == "invalid_request_error" and error["message"]
    if code is not None:
        assert error["code"] == code, error
    if param is not None:
        assert error["param"] == param, error


def _compacts(client: httpx.Client, base_url: str) -> None:
    r = client.post(f"{base_url}/v1/responses/compact", json={"model": MODEL, "input": USER})
    assert r.status_code == 200, r.text[:300]
    assert r.json()["output"][-1]["type"] == "compaction"


@pytest.mark.parametrize(("raw", "status", "code", "param"), COMPACT_CASES)
def test_hostile_compact_bodies(base_url, raw, status, code, param):
    with httpx.Client(timeout=5) as client:
        r = client.post(
            f"{base_url}/v1/responses/compact",
            content=raw,
            headers={"content-type": "application/json"},
        )
        _assert_openai_error(r, status, code, param)
        _compacts(client, base_url)


def _cm(threshold) -> list:
    return [{"type": "compaction", "compact_threshold": threshold}]


CREATE_CASES = [
    ({"context_management": _cm(10**30)}, "context_management[0].compact_threshold"),
    ({"context_management": _cm(-5)}, "context_management[0].compact_threshold"),
    ({"context_management": _cm(1500.0)}, "context_management[0].compact_threshold"),
    ({"context_management": _cm(True)}, "context_management[0].compact_threshold"),
    ({"context_management": _cm("2000")}, "context_management[0].compact_threshold"),
    ({"context_management": {"type": "compaction"}}, "context_management"),
    ({"context_management": [[]]}, "context_management[0].type"),
    ({"input": [{"type": "compaction_trigger"}, *USER]}, "input[0].type"),
    (
        {"input": [*USER, {"type": "compaction_trigger"}, {"type": "compaction_trigger"}]},
        "input[1].type",
    ),
    ({"input": [*USER, _compaction("tsfc1.x")]}, "input[1].encrypted_content"),
]


@pytest.mark.parametrize(("fields", "param"), CREATE_CASES)
@pytest.mark.parametrize("stream", [False, True])
def test_hostile_compaction_fields_on_create(base_url, fields, param, stream):
    body = {"model": MODEL, "input": USER, "stream": stream, **fields}
    with httpx.Client(timeout=5) as client:
        r = client.post(f"{base_url}/v1/responses", json=body)
        _assert_openai_error(r, 400, None, param)
        _compacts(client, base_url)
