# SPDX-License-Identifier: Apache-2.0
"""Genuine OpenAI Responses streams pass the strict checker.

The recordings under ``tests/data/openai-recordings/`` (sources in its README) are streams
OpenAI's API sent; the older ones carry no ``presence_penalty``/``frequency_penalty``. Each
is replayed as ``trtllm-stream-fix replay --protocol responses FILE`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trtllm_stream_fix.checker.client import replay_record
from trtllm_stream_fix.cli import main

pytestmark = pytest.mark.cpu_only

RECORDINGS = Path(__file__).resolve().parents[1] / "data" / "openai-recordings"
#: Each recording's terminal: a stream that reports a failure is checked as such.
TERMINALS = {
    "gpt-oss-basic-event-stream.txt": "completed",
    "vercel-ai-issue-19493-gpt-5.1-tool-call.sse": "completed",
    "vercel-ai-openai-error.1.sse": "failed",
}


def test_every_recording_is_listed() -> None:
    files = {p.name for p in RECORDINGS.iterdir() if p.name != "README.md"}
    assert files == set(TERMINALS)


@pytest.mark.parametrize("name", sorted(TERMINALS))
def test_recording_has_no_violation(name: str) -> None:
    record = replay_record(RECORDINGS / name, "responses")
    assert record.violations == [], record.violations
    assert record.terminal == TERMINALS[name]
    assert record.discarded_tail is None


@pytest.mark.parametrize("name", sorted(n for n, t in TERMINALS.items() if t == "completed"))
def test_replay_command_passes(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", "--protocol", "responses", str(RECORDINGS / name)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("ok ")


def test_old_recordings_omit_the_penalties() -> None:
    """What the test stands on: OpenAI's API sent streams without the penalty keys."""
    body = (RECORDINGS / "gpt-oss-basic-event-stream.txt").read_text()
    assert "presence_penalty" not in body and "frequency_penalty" not in body
