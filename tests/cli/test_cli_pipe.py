# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix ... | head``: a reader that closes early ends the command quietly."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _checker_streams import to_sse, valid_stream

from trtllm_stream_fix.pipe import READER_GONE_STATUS

pytestmark = pytest.mark.cpu_only

STANDIN = Path(__file__).parents[1] / "standin"
PIPE_BYTES = 4096  # the smallest pipe: any output larger than this must wait for the reader


def _into_early_closing_reader(
    args: list[str], read: int, *, stderr_too: bool = False
) -> tuple[bytes, int, str]:
    """Run the CLI into a real pipe, read ``read`` bytes, close the pipe, let it finish."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    proc = subprocess.Popen(
        [sys.executable, "-m", "trtllm_stream_fix.cli", *args],
        stdout=write_end,
        stderr=write_end if stderr_too else subprocess.PIPE,
    )
    os.close(write_end)
    try:
        head = os.read(read_end, read) if read else b""
    finally:
        os.close(read_end)
    _, err = proc.communicate(timeout=120)
    return head, proc.returncode, (err or b"").decode()


def test_output_larger_than_the_pipe_cut_after_its_first_bytes():
    args = ["doctor", "--fingerprint", "--json", "--source", str(STANDIN)]
    full = subprocess.run(
        [sys.executable, "-m", "trtllm_stream_fix.cli", *args], capture_output=True, check=True
    ).stdout
    assert len(full) > 2 * PIPE_BYTES  # so the command is still writing when the reader goes
    head, status, err = _into_early_closing_reader(args, read=100)
    assert full.startswith(head) and head
    assert (status, err) == (READER_GONE_STATUS, "")


def test_reader_gone_before_the_first_write():
    head, status, err = _into_early_closing_reader(["doctor"], read=0)
    assert (head, status, err) == (b"", READER_GONE_STATUS, "")


def test_stdout_and_stderr_into_one_pipe_that_closes():
    args = ["doctor", "--fingerprint", "--source", str(STANDIN)]
    head, status, _ = _into_early_closing_reader(args, read=0, stderr_too=True)
    assert (head, status) == (b"", READER_GONE_STATUS)


def test_a_report_printed_by_rich_ends_the_same(tmp_path):
    path = tmp_path / "stream.sse"
    path.write_bytes(to_sse(valid_stream()))
    head, status, err = _into_early_closing_reader(
        ["replay", str(path), "--protocol", "responses"], read=0
    )
    assert (head, status, err) == (b"", READER_GONE_STATUS, "")
