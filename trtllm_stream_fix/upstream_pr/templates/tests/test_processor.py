# SPDX-License-Identifier: Apache-2.0
"""Offline tests for Harmony Responses streaming through ``ResponsesStreamingProcessor``.

A client sees the same events whatever the number of tokens each engine response carries
(``stream_interval``, accepted draft tokens): every delta reaches it, every item is opened with
``response.output_item.added`` and closed with ``response.output_item.done`` under one non-empty
id, and the stream ends with exactly one terminal event. The processor is driven as
``openai_server`` drives it: ``get_initial_responses()``, then
``responses_api_streaming_post_processor`` once per engine response, with the result mutated in
place and the final ``<|return|>``/``<|call|>`` trimmed, inline and pickled to a
post-processing worker.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from tensorrt_llm.serve import harmony_adapter, postprocess_handlers
from tensorrt_llm.serve.openai_protocol import ResponsesRequest

from ....checker.responses import check_responses_events
from ....differential.engine_results import MODEL, PROMPT, Result, events_of, streaming_processor
from ....differential.sdk_oracle import sdk_accumulate
from ....sim.model import engine_responses, generate_outputs
from ....differential.visible import client_visible

# The CPU-* CI stages run pytest with -m 'cpu_only'. Without this marker every
# test in the file is deselected, which pytest reports as exit code 5 and the
# stage reports as a failure.
pytestmark = pytest.mark.cpu_only

OUTPUTS = list(generate_outputs(40, seed=7))


def _stream(output: Any, tokens_per_response: int, *, pickled: bool) -> list[dict[str, Any]]:
    """The client's events for one request, built exactly as the server builds one."""
    request = ResponsesRequest(
        model=MODEL, input="hi", stream=True, store=False, request_id=f"resp_{output.seed:08x}"
    )
    adapter = harmony_adapter.get_harmony_adapter()
    sampling = request.to_sampling_params(
        default_sampling_params={"stop_token_ids": adapter.get_stop_tokens()},
        reasoning_parser="gpt_oss",
    )
    processor, args = streaming_processor(request, sampling)
    frames = list(processor.get_initial_responses())
    worker_args = pickle.loads(pickle.dumps(args)) if pickled else args
    worker_args.num_prompt_tokens = len(PROMPT)
    result = Result()
    for response in engine_responses(output, tokens_per_response):
        result.apply(list(response.token_ids_diff), response.finished, response.finish_reason)
        frames += postprocess_handlers.responses_api_streaming_post_processor(result, worker_args)
    return [
        {**event, "sequence_number": n} for n, event in enumerate(events_of(frames))
    ]  # the server renumbers on egress


# ---------------------------------------------------------------------------
# Client-visible contract
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("output", OUTPUTS, ids=lambda o: f"{o.name}-{o.seed}")
def test_events_do_not_depend_on_tokens_per_response(output):
    """Regression: with 20 tokens per engine response most deltas were lost."""
    reference = client_visible(_stream(output, 1, pickled=False))
    assert client_visible(_stream(output, 20, pickled=False)) == reference
    assert client_visible(_stream(output, 20, pickled=True)) == reference


@pytest.mark.parametrize("output", OUTPUTS, ids=lambda o: f"{o.name}-{o.seed}")
@pytest.mark.parametrize("tokens_per_response", [1, 20])
def test_every_stream_passes_the_strict_checker_and_the_sdk(output, tokens_per_response):
    """Regression: empty item ids, unclosed items and a final response with new ids."""
    events = _stream(output, tokens_per_response, pickled=False)
    report = check_responses_events(events)
    assert report.ok, report.violations[:3]
    sdk_accumulate(events)
