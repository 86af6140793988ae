# SPDX-License-Identifier: Apache-2.0
"""Windows and the compaction prompt, without a server: what a record retains, how a
compaction item expands, the trigger's place, and the Harmony prompt the model reads."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from trtllm_stream_fix.compaction import window
from trtllm_stream_fix.compaction.blob import BlobCodec, CompactionRecord
from trtllm_stream_fix.compaction.errors import CompactionError
from trtllm_stream_fix.compaction.prompt import COMPACTION_PROMPT, compaction_prompt
from trtllm_stream_fix.sim.compaction_model import summary_text

pytestmark = pytest.mark.cpu_only
CALL = {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "12 lines"}
USER = {"role": "user", "content": "Read a.py"}


def _ids(prefix: str) -> str:
    return f"{prefix}_1"


def test_record_retains_the_tail_after_the_last_user_message_without_reasoning():
    items = [USER, {"type": "reasoning", "summary": []}, CALL, OUTPUT]
    record = window.record_for("s", items, "m")
    assert record.retained == [CALL, OUTPUT]


def test_a_tail_past_the_bound_is_left_to_the_summary():
    big = {**OUTPUT, "output": "x" * window.MAX_RETAINED_BYTES}
    assert window.record_for("s", [USER, CALL, big], "m").retained == []


def test_expansion_puts_summary_then_retained_where_the_item_stood():
    codec = BlobCodec(Fernet.generate_key())
    blob = codec.seal(CompactionRecord("earlier work", [CALL, OUTPUT], "m"))
    items = [
        USER,
        {"type": "compaction", "encrypted_content": blob},
        {"role": "user", "content": "go"},
    ]
    expanded = window.expand(items, codec)
    assert expanded[0] == USER and expanded[-1] == {"role": "user", "content": "go"}
    assert expanded[1]["role"] == "assistant"
    assert expanded[1]["content"][0]["text"] == window.SUMMARY_PREFIX + "earlier work"
    assert expanded[2:4] == [CALL, OUTPUT]


def test_user_messages_keep_the_most_recent_within_the_budget(monkeypatch):
    monkeypatch.setattr(window, "MAX_USER_CHARS", 9)
    users = [{"role": "user", "content": t} for t in ("aaaaaa", "bbbb", "cccccc")]
    kept = window.user_messages(users, _ids)
    assert [m["content"][0]["text"] for m in kept] == ["cccccc"]


def test_trigger_only_last():
    assert window.split_trigger([USER, {"type": "compaction_trigger"}]) == ([USER], True)
    assert window.split_trigger([USER]) == ([USER], False)
    with pytest.raises(CompactionError) as caught:
        window.split_trigger([{"type": "compaction_trigger"}, USER])
    assert caught.value.param == "input[0].type"


def test_prompt_is_harmony_and_ends_at_the_assistants_turn(encoding):
    prompt = compaction_prompt(encoding, [USER, CALL, OUTPUT], "Be brief.")
    text = encoding.decode(prompt.tokens)
    assert text.startswith("<|start|>system<|message|>")
    assert "<|start|>developer<|message|># Instructions\n\nBe brief." in text
    assert "to=functions.read_file<|channel|>commentary <|constrain|>json" in text
    assert (
        "<|start|>functions.read_file to=assistant<|channel|>commentary<|message|>12 lines" in text
    )
    assert text.endswith(f"<|start|>user<|message|>{COMPACTION_PROMPT}<|end|><|start|>assistant")


def test_simulated_summary_is_deterministic_and_reads_the_prompt(encoding):
    prompt = compaction_prompt(encoding, [USER, CALL, OUTPUT], None)
    first = summary_text(prompt.messages)
    assert first == summary_text(prompt.messages)
    assert "Read a.py" in first and "functions.read_file: 12 lines" in first
