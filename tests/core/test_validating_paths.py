# SPDX-License-Identifier: Apache-2.0
"""The production path (raw setters) and the validating path send the same SSE bytes.

The suite runs the production path by default (``pytest --validating`` or
``@pytest.mark.validating`` turn validation on); here both paths stream the same synthetic and
hostile outputs, Responses and chat, and every frame must match byte for byte.
"""

from __future__ import annotations

import random

import pytest

from trtllm_stream_fix.core import fastmodel
from trtllm_stream_fix.differential.hostile import HOSTILE_KINDS, hostile_output
from trtllm_stream_fix.sim.model import NAMED_SCENARIOS, generate_outputs, named_output
from trtllm_stream_fix.testing.event_dump import chat_frames, responses_frames

pytestmark = pytest.mark.cpu_only

OUTPUTS = [
    *generate_outputs(12, 0),
    *(named_output(name) for name in NAMED_SCENARIOS),
    *(hostile_output(seed, kind) for seed, kind in enumerate(HOSTILE_KINDS)),
]


def _both_paths(produce):
    was = fastmodel.is_validating()
    try:
        fastmodel.validating(False)
        production = produce()
        fastmodel.validating(True)
        validated = produce()
    finally:
        fastmodel.validating(was)
    return production, validated


def test_the_suite_runs_the_production_path_by_default(request):
    assert fastmodel.is_validating() is bool(request.config.getoption("--validating"))


@pytest.mark.parametrize("frames", [responses_frames, chat_frames], ids=["responses", "chat"])
@pytest.mark.parametrize("split", ["1", "7", "random"])
def test_production_and_validating_paths_send_identical_frames(encoding, frames, split):
    def produce():
        return [
            frames(
                output,
                random.Random(i) if split == "random" else int(split),
                encoding,
                f"id_{i}",
            )
            for i, output in enumerate(OUTPUTS)
        ]

    production, validated = _both_paths(produce)
    assert sum(map(len, production)) > 10 * len(OUTPUTS)
    for output, ours, checked in zip(OUTPUTS, production, validated):
        assert ours == checked, f"{output.name}:{output.seed}"
