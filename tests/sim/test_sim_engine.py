# SPDX-License-Identifier: Apache-2.0
"""The simulated engine: deterministic generations, TensorRT-LLM-like batching."""

from __future__ import annotations

import asyncio
import time

import pytest

from trtllm_stream_fix.sim.engine import EngineConfig, SimulatedEngine, input_seed
from trtllm_stream_fix.sim.model import CALL, RETURN, named_output


def _collect(engine: SimulatedEngine, generation, interval=None):
    async def run():
        return [r async for r in engine.stream(generation, interval)]

    return asyncio.run(run())


def test_same_request_same_tokens_at_every_interval():
    engine = SimulatedEngine()
    generation = engine.select("What is the capital of France?")
    assert generation == engine.select("What is the capital of France?")
    for interval in (1, 2, 7, 20, 64):
        responses = engine.responses(generation, interval)
        joined = [t for r in responses for t in r.token_ids_diff]
        assert tuple(joined) == generation.delivered
        assert [len(r.token_ids_diff) for r in responses[:-1]] == [interval] * (len(responses) - 1)
        assert [r.finished for r in responses] == [False] * (len(responses) - 1) + [True]
        assert responses[-1].finish_reason == generation.finish_reason


def test_input_hash_selects_ordinary_generations_and_differs_per_input():
    engine = SimulatedEngine()
    outputs = [engine.select(f"question {i}").output for i in range(20)]
    assert all(o.finish_reason == "stop" and not o.malformed for o in outputs)
    assert len({o.generated for o in outputs}) > 10
    assert input_seed("a") != input_seed("b")
    assert input_seed("a", 1) != input_seed("a", 0)


def test_explicit_seed_and_scenario():
    engine = SimulatedEngine()
    assert engine.select("x", seed=5) == engine.select("y", seed=5)
    named = engine.select("x", scenario="reasoning_answer").output
    assert named == named_output("reasoning_answer")
    with pytest.raises(ValueError):
        engine.select("x", scenario="no_such_scenario")


def test_stop_token_trimmed_from_last_response():
    engine = SimulatedEngine(EngineConfig(stream_interval=20))
    generation = engine.select("x", scenario="short_answer")
    assert generation.output.generated[-1] == RETURN
    responses = engine.responses(generation)
    delivered = [t for r in responses for t in r.token_ids_diff]
    assert RETURN not in delivered and CALL not in delivered
    assert len(delivered) == len(generation.output.generated) - 1


def test_max_output_tokens_cuts_with_length():
    engine = SimulatedEngine()
    full = engine.select("x", scenario="reasoning_answer")
    cut = engine.select("x", scenario="reasoning_answer", max_output_tokens=12)
    assert cut.finish_reason == "length"
    assert cut.delivered == full.output.generated[:12]
    responses = engine.responses(cut, 5)
    assert [len(r.token_ids_diff) for r in responses] == [5, 5, 2]
    assert responses[-1].finish_reason == "length"
    roomy = engine.select("x", scenario="reasoning_answer", max_output_tokens=10_000)
    assert roomy == full


def test_draft_tokens_vary_batch_sizes_within_bounds():
    engine = SimulatedEngine(EngineConfig(stream_interval=3, max_draft_tokens=4))
    generation = engine.select("x", scenario="reasoning_answer")
    responses = engine.responses(generation)
    sizes = [len(r.token_ids_diff) for r in responses[:-1]]
    assert all(3 <= s <= 7 for s in sizes)
    assert len(set(sizes)) > 1
    assert tuple(t for r in responses for t in r.token_ids_diff) == generation.delivered
    assert engine.responses(generation) == responses  # deterministic per request


def test_token_rate_paces_the_stream():
    engine = SimulatedEngine(EngineConfig(stream_interval=10, tokens_per_second=400))
    generation = engine.select("x", scenario="reasoning_answer", max_output_tokens=40)
    start = time.perf_counter()
    responses = _collect(engine, generation)
    assert len(responses) == 4
    assert time.perf_counter() - start >= 0.09  # 40 tokens at 400 tokens/s


@pytest.mark.parametrize(
    "kwargs", [{"stream_interval": 0}, {"max_draft_tokens": -1}, {"tokens_per_second": -1}]
)
def test_config_rejects_bad_values(kwargs):
    with pytest.raises(ValueError):
        EngineConfig(**kwargs)
