# SPDX-License-Identifier: Apache-2.0
"""Chat differential: every split equals the 1-token stream, SDK and checker accept, stream =
non-streaming; and the upstream-equivalent baseline shows each defect the issue names
(``test_chat_baseline.py`` counts its failures)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trtllm_stream_fix.differential.chat import (
    CHAT_COUNTS,
    chat_stream,
    check_chat_payloads,
    run_chat_check,
)
from trtllm_stream_fix.differential.hostile import hostile_output
from trtllm_stream_fix.differential.token_soup import STRATEGIES, fuzz_outputs
from trtllm_stream_fix.sim.model import NAMED_SCENARIOS, generate_outputs, named_output

pytestmark = pytest.mark.cpu_only

# ours, and the upstream-equivalent baseline showing each defect (tests/conftest.py registers it)
IMPLS = ["ours", pytest.param("upstream", id="upstream")]


def assert_perfect(outputs: list[Any]) -> None:
    _, streams, tallies = run_chat_check(outputs, impls=("ours",))
    ours = tallies["ours"]
    assert ours.raised == 0, ours.examples
    expected = dict.fromkeys((*CHAT_COUNTS, "fast_matches_reference"), streams)
    assert ours.as_counts() == expected, ours.examples


def test_named_outputs_perfect() -> None:
    assert_perfect([named_output(n, trimmed=t) for n in NAMED_SCENARIOS for t in (True, False)])


def test_random_outputs_perfect() -> None:
    assert_perfect(list(generate_outputs(12, seed=500)))


def test_fuzz_outputs_perfect() -> None:
    outputs = list(fuzz_outputs(40))
    assert {o.name for o in outputs} == {f"fuzz:{s}" for s in STRATEGIES}
    assert_perfect(outputs)


def test_hostile_outputs_perfect() -> None:
    assert_perfect([hostile_output(seed) for seed in range(0, 60, 3)])


@pytest.mark.slow
def test_random_outputs_perfect_long() -> None:
    assert_perfect(list(generate_outputs(300, seed=1000)))


@pytest.mark.slow
def test_fuzz_outputs_perfect_long() -> None:
    assert_perfect(list(fuzz_outputs(600, seed=1000)))


# -- the defects, on the upstream-equivalent baseline and on ours ----------------------


def joined(payloads: list[Any], key: str) -> str:
    return "".join(
        c["delta"].get(key) or ""
        for p in payloads
        if isinstance(p, dict)
        for c in p.get("choices", [])
    )


def arguments(payloads: list[Any]) -> str:
    return "".join(
        t["function"].get("arguments") or ""
        for p in payloads
        if isinstance(p, dict)
        for c in p.get("choices", [])
        for t in c["delta"].get("tool_calls") or []
    )


def finishes(payloads: list[Any]) -> list[str]:
    return [
        c["finish_reason"]
        for p in payloads
        if isinstance(p, dict)
        for c in p.get("choices", [])
        if c.get("finish_reason")
    ]


@pytest.mark.parametrize("impl", IMPLS)
def test_tokens_of_the_done_response_reach_the_client(impl: str) -> None:
    out = named_output("reasoning_answer")
    full = joined(chat_stream(out, 1, impl="ours"), "content")
    assert full == "The capital of France is Paris. It is also its largest city."
    at20 = joined(chat_stream(out, 20, impl=impl), "content")
    short = joined(chat_stream(named_output("short_answer"), 20, impl=impl), "content")
    if impl == "ours":
        assert at20 == full and short == "Hi there, how can I help?"
    else:
        assert at20 != full and short == ""  # a short answer sends no content at all


@pytest.mark.parametrize("impl", IMPLS)
def test_tool_call_arguments_are_valid_json_at_every_split(impl: str) -> None:
    out = named_output("preamble_tool_call")
    valid = []
    for split in (1, 2, 3, 7, 20):
        try:
            json.loads(arguments(chat_stream(out, split, impl=impl)))
            valid.append(True)
        except ValueError:
            valid.append(False)
    assert all(valid) if impl == "ours" else not all(valid)


@pytest.mark.parametrize("impl", IMPLS)
def test_role_sent_once(impl: str) -> None:
    payloads = chat_stream(named_output("reasoning_answer"), 1, impl=impl)
    roles = sum(
        1
        for p in payloads
        if isinstance(p, dict)
        for c in p.get("choices", [])
        if c["delta"].get("role")
    )
    assert roles == 1 if impl == "ours" else roles > 20


@pytest.mark.parametrize("impl", IMPLS)
def test_analysis_channel_tool_call_is_a_tool_call(impl: str) -> None:
    payloads = chat_stream(named_output("analysis_tool_call"), 1, impl=impl)
    reasoning = joined(payloads, "reasoning")
    if impl == "ours":
        assert arguments(payloads) == '{"location": "Tokyo"}'
        assert 'Tokyo"}' not in reasoning and finishes(payloads) == ["tool_calls"]
    else:
        assert arguments(payloads) == "" and reasoning.endswith('{"location": "Tokyo"}')


@pytest.mark.parametrize("impl", IMPLS)
def test_finish_reason_tool_calls_and_no_markup(impl: str) -> None:
    payloads = chat_stream(named_output("preamble_tool_call", trimmed=False), 1, impl=impl)
    check = check_chat_payloads(payloads)
    content = joined(payloads, "content")
    if impl == "ours":
        assert finishes(payloads) == ["tool_calls"] and not check.violations
        assert content == "Let me check the current weather in Paris for you."
    else:
        assert finishes(payloads) == ["stop"]
        assert content.startswith("<|channel|>commentary<|message|>")
        assert any("[markup-leak]" in w for w in check.warnings)


def test_fast_parser_gives_the_same_chat_streams() -> None:
    from trtllm_stream_fix.core.chat_machine import ChatOptions

    fast = ChatOptions(parser="fast")
    outputs = [named_output(n) for n in NAMED_SCENARIOS]
    outputs += list(generate_outputs(6, seed=900)) + [hostile_output(s) for s in range(0, 30, 3)]
    outputs += list(fuzz_outputs(10, seed=900))
    for output in outputs:
        for split in (1, 7, 1000):
            reference = chat_stream(output, split)
            assert chat_stream(output, split, options=fast) == reference, (output.name, split)
