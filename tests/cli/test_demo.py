# SPDX-License-Identifier: Apache-2.0
"""The demo runs offline, ours passes everything, the upstream-equivalent loses text."""

from __future__ import annotations

import json

from trtllm_stream_fix.demo import DEMO_REQUESTS, demo_main, run_demo, summarize


def test_demo_json_exits_zero_and_shows_the_difference(capsys):
    assert demo_main(["--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ok"] is True
    rows = {(r["generator"], r["stream_interval"]): r for r in summary["summary"]}
    n = len(DEMO_REQUESTS)
    for interval in (1, 20):
        ours = rows[("ours", interval)]
        assert ours["streams"] == ours["strict_ok"] == ours["sdk_ok"] == n
        assert ours["identical_to_interval_1"] == n
        assert ours["chars_delivered"] == ours["chars_expected"] > 0
        assert ours["all_ok"]
    upstream = rows[("upstream", 20)]
    assert upstream["chars_delivered"] < upstream["chars_expected"] // 2
    assert upstream["strict_ok"] < n and not upstream["all_ok"]
    # The same requests over /v1/chat/completions.
    chat = {(r["generator"], r["stream_interval"]): r for r in summary["chat"]}
    for interval in (1, 20):
        ours = chat[("ours", interval)]
        assert ours["streams"] == ours["strict_ok"] == ours["sdk_ok"] == n
        assert ours["identical_to_interval_1"] == n
        assert ours["chars_delivered"] == ours["chars_expected"] > 0
    upstream = chat[("upstream", 20)]
    assert upstream["chars_delivered"] < upstream["chars_expected"]
    assert upstream["strict_ok"] == 0 and not upstream["all_ok"]


def test_demo_with_draft_tokens_keeps_ours_identical():
    results = run_demo((1, 7), DEMO_REQUESTS[:3], max_draft_tokens=5)
    ours = [r for r in results if r.generator == "ours"]
    assert len(ours) == 6 and all(r.ok for r in ours)
    assert all(row["all_ok"] for row in summarize(ours))


def test_demo_rejects_bad_intervals(capsys):
    import pytest

    with pytest.raises(SystemExit):
        demo_main(["--intervals", "0,20"])
    assert "intervals" in capsys.readouterr().err
