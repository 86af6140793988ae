# SPDX-License-Identifier: Apache-2.0
"""``encrypted_content`` is opaque and integrity-protected: a tampered, truncated, foreign
(OpenAI's), other-key, oversized or non-string blob is a 400 naming the item, on
``/v1/responses`` and ``/v1/responses/compact``, never a crash or text in the prompt; the key
comes from ``TRTLLM_STREAM_FIX_COMPACTION_KEY`` or is generated with a warning."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet

from trtllm_stream_fix.compaction import blob
from trtllm_stream_fix.compaction.blob import (
    KEY_ENV,
    MAX_BLOB_CHARS,
    PREFIX,
    BlobCodec,
    CompactionRecord,
    load_key,
)
from trtllm_stream_fix.compaction.errors import CompactionKeyError, InvalidCompactionBlob

pytestmark = pytest.mark.cpu_only
MODEL = "gpt-oss-120b"
#: The shape of an OpenAI compaction blob (a Fernet token under OpenAI's key).
OPENAI_BLOB = "gAAAAABpM0Yj" + "x7Qk" * 60


def _window(url: str) -> list[dict[str, Any]]:
    body = {"model": MODEL, "input": [{"role": "user", "content": "Summarise the plan."}]}
    return httpx.post(f"{url}/v1/responses/compact", json=body, timeout=30).json()["output"]


def _flip(blob: str, at: int) -> str:
    return blob[:at] + ("A" if blob[at] != "A" else "B") + blob[at + 1 :]


def _bad_blobs(good: str, key: bytes) -> dict[str, Any]:
    other = BlobCodec(Fernet.generate_key()).seal(CompactionRecord("hello", [], MODEL))
    return {
        "tampered": _flip(good, len(good) // 2),
        "tampered-mac": _flip(good, len(good) - 5),
        "truncated": good[: len(good) - 20],
        "openai": OPENAI_BLOB,
        "openai-prefixed": PREFIX + OPENAI_BLOB,
        "other-key": other,
        "plaintext": "the summary in plain text",
        "oversized": PREFIX + "A" * MAX_BLOB_CHARS,
        "empty": "",
        "non-ascii": PREFIX + "é" * 40,
        "number": 12345,
    }


@pytest.mark.parametrize(
    "case",
    [
        "tampered",
        "tampered-mac",
        "truncated",
        "openai",
        "openai-prefixed",
        "other-key",
        "plaintext",
        "oversized",
        "empty",
        "non-ascii",
        "number",
    ],
)
@pytest.mark.parametrize("path", ["/v1/responses", "/v1/responses/compact"])
def test_bad_blob_is_a_400_naming_the_item(base_url, key, case, path):
    window = _window(base_url)
    at = len(window) - 1
    window[at] = {
        **window[at],
        "encrypted_content": _bad_blobs(window[at]["encrypted_content"], key)[case],
    }
    body = {"model": MODEL, "input": [*window, {"role": "user", "content": "Go on."}]}
    answer = httpx.post(f"{base_url}{path}", json=body, timeout=30)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == f"input[{at}].encrypted_content"


def test_good_blob_opens_and_streams(base_url):
    window = _window(base_url)
    body = {"model": MODEL, "input": [*window, {"role": "user", "content": "Go on."}]}
    answer = httpx.post(f"{base_url}/v1/responses", json=body, timeout=30)
    assert answer.status_code == 200 and answer.json()["status"] == "completed"


def test_codec_round_trip_and_refusals():
    codec = BlobCodec(Fernet.generate_key())
    record = CompactionRecord("s", [{"type": "message", "role": "assistant", "content": "x"}], "m")
    assert codec.open(codec.seal(record), "p") == record
    with pytest.raises(InvalidCompactionBlob) as caught:
        codec.open(codec.seal(record)[:-3], "input[3].encrypted_content")
    assert caught.value.param == "input[3].encrypted_content"
    assert caught.value.status == 400


def test_a_record_of_another_layout_is_refused():
    key = Fernet.generate_key()
    foreign = PREFIX + Fernet(key).encrypt(b'{"version": 2, "summary": "x"}').decode()
    with pytest.raises(InvalidCompactionBlob, match="version or layout"):
        BlobCodec(key).open(foreign, "p")


def test_key_from_the_environment_and_generated_with_a_warning(caplog, monkeypatch):
    key = Fernet.generate_key()
    assert load_key({KEY_ENV: key.decode()}) == key
    monkeypatch.setattr(blob, "_generated", None)
    with caplog.at_level(logging.WARNING):
        generated = load_key({})
    Fernet(generated)
    assert KEY_ENV in caplog.text and "replica" in caplog.text
    caplog.clear()
    assert load_key({}) == generated  # one key per process, warned once
    assert caplog.text == ""
    with pytest.raises(CompactionKeyError):
        load_key({KEY_ENV: "not-a-key"})
