# SPDX-License-Identifier: Apache-2.0
"""Batch-size independence and stream = non-streaming over 1,000 seeded synthetic outputs
(ordinary and hostile), property-based splits, and every prefix of rich completions."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trtllm_stream_fix.differential.chat import CHAT_COUNTS
from trtllm_stream_fix.differential.hostile import HOSTILE_KINDS, hostile_output, mixed_outputs
from trtllm_stream_fix.differential.responses import (
    COUNTS,
    Tally,
    check_main,
    final_matches_stream,
    judge_output,
    nonstreaming_matches,
    nonstreaming_response,
    sdk_accepts,
    stream_events,
    strict_passes,
)
from trtllm_stream_fix.differential.visible import client_visible
from trtllm_stream_fix.sim.model import (
    SyntheticOutput,
    generate_output,
    generate_outputs,
    named_output,
)

pytestmark = pytest.mark.cpu_only

OUTPUTS = 1000
CHUNK = 100
# The first chunk runs in the default tier; all of them in the slow tier.
SEEDS = [
    pytest.param(seed, marks=[pytest.mark.slow] if seed else [])
    for seed in range(0, OUTPUTS, CHUNK)
]


@pytest.mark.parametrize("first_seed", SEEDS)
def test_ours_is_batch_size_independent_and_valid(first_seed, encoding):
    """2, 3, 7, 20 and random 1-25 tokens per response equal 1 token per response."""
    tally = Tally()
    streams = 0
    for output in mixed_outputs(CHUNK, seed=first_seed):
        streams += judge_output(output, "ours", tally, encoding=encoding)
    assert tally.raised == 0, tally.examples
    assert tally.as_counts() == dict.fromkeys(COUNTS, streams), tally.examples


def test_baseline_is_caught_by_the_same_check(encoding):
    tally = Tally()
    streams = 0
    for output in generate_outputs(40, seed=0):
        streams += judge_output(output, "upstream", tally, encoding=encoding)
    assert tally.identical < streams
    assert tally.strict_passed < streams


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    hostile=st.booleans(),
    sizes=st.lists(st.integers(0, 30), min_size=1, max_size=40),
)
def test_random_splits_of_random_outputs(seed, hostile, sizes, encoding):
    output = hostile_output(seed) if hostile else generate_output(seed)
    reference = stream_events(output, 1, encoding=encoding)
    events = stream_events(output, sizes, encoding=encoding)
    assert client_visible(events) == client_visible(reference)
    assert strict_passes(events)
    assert sdk_accepts(events)
    assert final_matches_stream(events)
    assert nonstreaming_matches(events, nonstreaming_response(output, encoding=encoding))


def test_check_command_json_shape(capsys):
    code = check_main(["--outputs", "5", "--seed", "11", "--json"])
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    # stderr is no terminal here: a line at the start and one at the end, no live bar.
    start, end = captured.err.strip().splitlines()
    assert start.startswith("check: 5 outputs") and " in " in end and end.endswith(" s")
    assert summary["outputs"] == 5
    assert summary["streams"] == 5 * 7
    assert set(summary["upstream"]) == {*COUNTS, "raised"}
    perfect = {**dict.fromkeys(COUNTS, summary["streams"]), "raised": 0}
    assert summary["ours"] == {**perfect, "fast_matches_reference": summary["streams"]}
    # Chat Completions over the same outputs and splits, with the same counts as "ours".
    assert summary["chat"] == {**perfect, "fast_matches_reference": summary["streams"]}
    assert set(summary["chat_upstream"]) == {*CHAT_COUNTS, "raised"}
    assert summary["chat_upstream"]["strict_passed"] < summary["streams"]
    assert code == 0


def test_the_non_streaming_comparison_counts_usage(encoding):
    """``check``'s "non-streaming = stream" count compares usage too: the same output gives
    the same usage (reasoning tokens counted), and a body whose usage differs does not match."""
    output = named_output("reasoning_answer")
    events = stream_events(output, 20, encoding=encoding)
    expected = nonstreaming_response(output, encoding=encoding)
    assert expected["usage"] == events[-1]["response"]["usage"]
    assert expected["usage"]["output_tokens_details"]["reasoning_tokens"] > 0
    assert nonstreaming_matches(events, expected)
    expected["usage"]["output_tokens_details"]["reasoning_tokens"] = 0  # upstream's count
    assert not nonstreaming_matches(events, expected)


def test_visible_events_ignore_ids_and_sequence_but_not_text(encoding):
    output = next(o for o in generate_outputs(50, seed=0) if o.name == "reasoning_answer")
    a = stream_events(output, 1, encoding=encoding)
    b = stream_events(output, random.Random(1), encoding=encoding)
    assert client_visible(a) == client_visible(b)
    for event in b:
        if event["type"].endswith(".delta"):
            event["delta"] = event["delta"] + "x"
            break
    else:
        pytest.fail("no delta event to alter")
    assert client_visible(a) != client_visible(b)


@pytest.mark.parametrize("kind", HOSTILE_KINDS)
def test_every_hostile_kind_is_handled(kind, encoding):
    tally = Tally()
    streams = 0
    for seed in range(12):
        streams += judge_output(hostile_output(seed, kind), "ours", tally, encoding=encoding)
    assert tally.raised == 0, tally.examples
    assert tally.as_counts() == dict.fromkeys(COUNTS, streams), tally.examples


def _prefixes(name: str, step: int) -> list[SyntheticOutput]:
    full = named_output(name, trimmed=False)
    return [
        SyntheticOutput(f"{name}[:{k}]", k, full.generated[:k], reason, False, False)
        for k in range(0, len(full.generated) + 1, step)
        for reason in ("stop", "length")
    ]


RICH = ("preamble_tool_call", "reasoning_answer", "multibyte_emoji", "browser_search")


@pytest.mark.parametrize(
    ("name", "step"),
    [("preamble_tool_call", 7)] + [pytest.param(n, 1, marks=pytest.mark.slow) for n in RICH],
)
def test_cuts_at_every_prefix_of_a_rich_completion(name, step, encoding):
    """Every prefix (every 7th in the default tier), stopped or cut by the token limit."""
    tally = Tally()
    streams = 0
    for output in _prefixes(name, step):
        streams += judge_output(output, "ours", tally, encoding=encoding)
    assert tally.raised == 0, tally.examples
    assert tally.as_counts() == dict.fromkeys(COUNTS, streams), tally.examples
