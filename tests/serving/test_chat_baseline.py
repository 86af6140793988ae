# SPDX-License-Identifier: Apache-2.0
"""The upstream-equivalent chat baseline fails the differential's counts (so they can fail)."""

from __future__ import annotations

import pytest

from trtllm_stream_fix.differential.chat import run_chat_check
from trtllm_stream_fix.sim.model import NAMED_SCENARIOS, named_output

pytestmark = pytest.mark.cpu_only


def test_upstream_baseline_fails_the_counts() -> None:
    outputs = [named_output(n) for n in NAMED_SCENARIOS]
    _, streams, tallies = run_chat_check(outputs, impls=("upstream",))
    counts = tallies["upstream"].as_counts()
    assert counts["strict_passed"] < streams and counts["identical"] < streams
    assert counts["sdk_accepted"] < streams and counts["final_matches_stream"] < streams
