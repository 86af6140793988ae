# SPDX-License-Identifier: Apache-2.0
"""Drive the real TensorRT-LLM Responses modules as ``openai_server`` does, with and without
the plugin; print one ``RESULT <json>`` line.

Usage: ``python -m trtllm_stream_fix.plugin.realstub.drive SOURCE_DIR [COUNT] [soup]`` (or
``python -m realstub.drive`` from ``tests/``). ``soup``: streams only, over token soups and
hostile outputs (every other one delivered as numpy ids) instead of synthetic outputs.
Per synthetic output, at 1 and 20 tokens per engine response and with the processor
pickled to an emulated PostprocWorker: a ``ResponsesStreamingProcessor`` built as the handler
builds one, ``get_initial_responses()``, then
``postprocess_handlers.responses_api_streaming_post_processor(res, args)`` per engine response,
every frame restamped with ``stamp_sse_sequence_number`` inside ``guard_responses_stream``
(where the version has them).
Per output also the non-streaming body (inline and from a worker), checked against OpenAI's
recorded schema (``body_schema``) and its usage against the stream's terminal event's
(``usage_parity``), unpatched and with the plugin.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import sys
import traceback
from collections.abc import AsyncIterator, Callable
from typing import Any

from trtllm_stream_fix.differential.engine_results import (  # noqa: F401 - re-exported
    CREATED,
    MODEL,
    PROMPT,
    Output,
    Result,
    events_of,
    streaming_processor,
)
from trtllm_stream_fix.plugin import realstub

SPLITS = (1, 20)
new_streaming_processor = streaming_processor  # the name benchmarks and tests import


def stream(output: Any, split: int, *, workers: bool) -> tuple[list[dict[str, Any]], str]:
    """The client's events for one request, and the exception that ended it ('' if none)."""
    from tensorrt_llm.serve import harmony_adapter, postprocess_handlers, responses_utils
    from tensorrt_llm.serve.openai_protocol import ResponsesRequest

    from trtllm_stream_fix.sim.model import engine_responses

    request = ResponsesRequest(
        model=MODEL, input="hi", stream=True, store=False, request_id=f"resp_{output.seed:08x}"
    )
    adapter = harmony_adapter.get_harmony_adapter()
    adapter.cleanup_stream_state(f"responses-api-{request.request_id}")  # each run starts fresh
    sampling = request.to_sampling_params(
        default_sampling_params={"stop_token_ids": adapter.get_stop_tokens()},
        reasoning_parser="gpt_oss",
    )
    processor, args = new_streaming_processor(request, sampling)
    prompt = PROMPT
    # With workers the args travel to the worker when the request is submitted.
    worker_args = pickle.loads(pickle.dumps(args)) if workers else args
    worker_args.num_prompt_tokens = len(prompt)

    async def body() -> AsyncIterator[str]:
        for frame in processor.get_initial_responses():
            yield frame
        res = Result(prompt)
        for response in engine_responses(output, split):
            res.apply(response.token_ids_diff, response.finished, response.finish_reason)
            for frame in postprocess_handlers.responses_api_streaming_post_processor(
                res, worker_args
            ):
                yield frame

    stamp = getattr(responses_utils, "stamp_sse_sequence_number", None)

    async def egress() -> AsyncIterator[str]:
        # The version's own egress: 271a1eda restamps every frame, 993c0eec does not.
        count = 0
        async for frame in body():
            yield frame if stamp is None else stamp(frame, count)
            count += 1

    return asyncio.run(_collect(stream_guard(responses_utils), egress(), processor))


async def _unguarded(frames: AsyncIterator[str], _terminal_events: Any) -> AsyncIterator[str]:
    async for frame in frames:
        yield frame


def stream_guard(responses_utils: Any) -> Callable[..., AsyncIterator[str]]:
    """The version's ``guard_responses_stream`` as bound now (patched or not); versions
    before the guard (early-2026) stream unguarded: an exception ends the stream."""
    return getattr(responses_utils, "guard_responses_stream", None) or _unguarded


async def _collect(
    guard: Callable[..., AsyncIterator[str]], frames: AsyncIterator[str], processor: Any
) -> tuple[list[dict[str, Any]], str]:
    out: list[str] = []
    terminal_events = getattr(processor, "get_stream_failed_events", None)
    try:
        async for frame in guard(frames, terminal_events):
            out.append(frame)
    except Exception as exc:
        return events_of(out), f"{type(exc).__name__}: {exc}"
    return events_of(out), ""


def comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from trtllm_stream_fix.differential.visible import client_visible

    return client_visible(events)


def verdicts(events: list[dict[str, Any]]) -> tuple[bool, bool, str]:
    """(strict checker ok, SDK accepts, first problem)."""
    from trtllm_stream_fix.checker.responses import check_responses_events
    from trtllm_stream_fix.differential.sdk_oracle import sdk_accumulate

    check = check_responses_events(events)
    problem = "" if check.ok else (check.violations or ["no terminal event"])[0]
    try:
        sdk_accumulate(events)
        sdk = True
    except Exception as exc:
        sdk = False
        problem = problem or f"SDK: {type(exc).__name__}: {exc}"
    return check.ok, sdk, problem


def run_all(outputs: list[Any]) -> dict[str, Any]:
    """Per output: k=1, k=20 inline and k=20 pickled; counts of the contract's checks.

    ``identical`` counts the k=20 streams (inline and pickled) whose client-visible events
    equal those of the k=1 stream; ``strict``/``sdk``/``raised`` count all streams;
    ``schema`` the streams whose every event carries every key of OpenAI's recorded schema
    (``event_types``: events seen per type, ``schema_problems``: missing keys in all).
    """
    from trtllm_stream_fix.differential import openai_schema

    stats = {"streams": 0, "compared": 0, "identical": 0, "strict": 0, "sdk": 0, "raised": 0}
    stats |= {"schema": 0, "schema_problems": 0}
    stats["examples"] = []
    seen: dict[str, int] = {}
    for output in outputs:
        runs = [stream(output, k, workers=False) for k in SPLITS]
        runs.append(stream(output, SPLITS[-1], workers=True))
        reference = comparable(runs[0][0])
        for i, ((events, error), label) in enumerate(zip(runs, ("k=1", "k=20", "k=20 workers"))):
            stats["streams"] += 1
            same = comparable(events) == reference
            if i:  # k=20 inline and pickled, each against k=1
                stats["compared"] += 1
                stats["identical"] += same
            strict, sdk, problem = verdicts(events)
            missing = [p for event in events for p in openai_schema.missing_keys(event)]
            for event in events:
                seen[event.get("type", "")] = seen.get(event.get("type", ""), 0) + 1
            stats["schema"] += not missing
            stats["schema_problems"] += len(missing)
            problem = problem or (f"schema: {missing[0]}" if missing else "")
            stats["strict"] += strict
            stats["sdk"] += sdk
            stats["raised"] += bool(error)
            if (problem or error or not same) and len(stats["examples"]) < 5:
                stats["examples"].append(
                    f"{output.name} seed={output.seed} {label}: {error or problem or 'differs'}"
                )
    stats["event_types"] = dict(sorted(seen.items()))
    return stats


def body_schema(outputs: list[Any]) -> dict[str, Any]:
    """Per output, the non-streaming body inline and from a worker (stream_interval 20),
    checked against OpenAI's recorded schema: counts of bodies, complete ones, problems, and
    the top-level keys the bodies carried (``keys``)."""
    from trtllm_stream_fix.differential import openai_schema
    from trtllm_stream_fix.plugin.realstub.matrix import non_streaming_body, sent_body

    stats: dict[str, Any] = {"bodies": 0, "complete": 0, "raised": 0, "problems": 0}
    stats["examples"] = []
    keys: set[str] = set()  # every top-level key a body carried
    for output in outputs:
        for workers in (False, True):
            stats["bodies"] += 1
            try:
                body = sent_body(non_streaming_body(output, 20, workers, False)[0])
                keys |= set(body)
                problems = openai_schema.missing_keys(body)
            except Exception as exc:
                stats["raised"] += 1
                problems = [f"raised {type(exc).__name__}: {exc}"]
            stats["complete"] += not problems
            stats["problems"] += len(problems)
            if problems and len(stats["examples"]) < 5:
                stats["examples"].append(f"{output.name} seed={output.seed}: {problems[0]}")
    stats["keys"] = sorted(keys)
    return stats


#: Terminal-event fields the stored copy of a streamed response repeats.
STORED_FIELDS = ("id", "object", "created_at", "status", "output", "usage", "incomplete_details")
STORED_OUTPUTS = 25  # streamed turns stored and fetched per run
USAGE_OUTPUTS = 25  # outputs whose streamed and non-streaming usage are compared per run


def set_values(value: Any) -> Any:
    """``value`` without its null entries, nested (keys a server's type may not declare)."""
    if isinstance(value, dict):
        return {k: set_values(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [set_values(v) for v in value]
    return value


def stored_copies(outputs: list[Any]) -> dict[str, Any]:
    """Per output, a streamed turn with store on (stream_interval 20) fetched from the
    conversation store: counts of streams, stored copies, copies equal to the terminal
    event's response on ``STORED_FIELDS`` (null entries aside), with the non-streaming body's
    keys, with the non-streaming body's status (``compared``) and, of those, with non-null
    usage equal to the body's (null entries aside)."""
    from trtllm_stream_fix.plugin.realstub.matrix import non_streaming_body, sent_body, streamed

    stats: dict[str, Any] = {"streams": 0, "stored": 0, "same": 0, "shape": 0}
    stats.update(compared=0, usage=0, examples=[])
    for output in outputs[:STORED_OUTPUTS]:
        stats["streams"] += 1
        got = streamed(output, 20, False, True)
        copy, terminal = got["stored_body"], got["terminal"]
        if copy is None:
            continue
        stats["stored"] += 1
        body = sent_body(non_streaming_body(output, 20, False, False)[0])
        differs = [k for k in STORED_FIELDS if set_values(copy.get(k)) != set_values(terminal[k])]
        counted = [set_values(u) for u in (copy["usage"], body["usage"])]
        # the same tokens, the same outcome (the non-streaming body of a generation the
        # plugin's stream failed keeps upstream's status)
        compared = body["status"] == terminal["status"]
        usage = copy["usage"] is not None and counted[0] == counted[1]
        stats["same"] += not differs
        stats["compared"] += compared
        stats["usage"] += compared and usage
        stats["shape"] += copy.keys() == body.keys()
        if (differs or (compared and not usage)) and len(stats["examples"]) < 5:
            stats["examples"].append(
                f"{output.name} seed={output.seed}: differs {differs}, usage {counted}"
            )
    return stats


def usage_parity(outputs: list[Any]) -> dict[str, Any]:
    """Per output, the terminal event's usage of its stream (stream_interval 20) against the
    usage of its non-streaming body, inline and from a worker (pickled), every other output
    with 3 of its prompt tokens reported cached by the engine: counts of outputs
    (``outputs``), of bodies whose usage equals the stream's, null entries aside (``inline``,
    ``worker``), of streams reporting reasoning tokens (``reasoning``) and cached tokens
    (``cached``), and of bodies whose building raised (``raised``)."""
    from trtllm_stream_fix.plugin.realstub.matrix import non_streaming_body, sent_body, streamed

    stats: dict[str, Any] = {"outputs": 0, "inline": 0, "worker": 0, "reasoning": 0, "cached": 0}
    stats.update(raised=0, examples=[])
    for n, output in enumerate(outputs[:USAGE_OUTPUTS]):
        stats["outputs"] += 1
        cached = 3 * (n % 2)
        terminal = streamed(output, 20, False, False, cached_tokens=cached)["terminal"]
        seen = set_values(terminal.get("usage")) or {}
        details = seen.get("output_tokens_details") or {}
        stats["reasoning"] += bool(details.get("reasoning_tokens"))
        stats["cached"] += bool((seen.get("input_tokens_details") or {}).get("cached_tokens"))
        for key, workers in (("inline", False), ("worker", True)):
            try:
                body = sent_body(
                    non_streaming_body(output, 20, workers, False, cached_tokens=cached)[0]
                )
            except Exception as exc:  # unpatched upstream raises on malformed Harmony
                stats["raised"] += 1
                if len(stats["examples"]) < 5:
                    stats["examples"].append(f"{output.name} seed={output.seed} {key}: {exc!r}")
                continue
            usage = set_values(body["usage"])
            stats[key] += usage == seen
            if usage != seen and len(stats["examples"]) < 5:
                stats["examples"].append(
                    f"{output.name} seed={output.seed} {key}: stream {seen} != body {usage}"
                )
    return stats


def soup_outputs(count: int) -> list[Any]:
    """Token soups and hostile outputs; every other one's ids are numpy int64 scalars."""
    import dataclasses
    from itertools import chain

    import numpy as np

    from trtllm_stream_fix.differential.hostile import hostile_output
    from trtllm_stream_fix.differential.token_soup import fuzz_outputs

    half = count // 2
    outputs = chain(fuzz_outputs(half, seed=3), map(hostile_output, range(count - half)))
    return [
        dataclasses.replace(o, generated=tuple(np.asarray(o.generated, dtype=np.int64)))
        if i % 2
        else o
        for i, o in enumerate(outputs)
    ]


def soup(source: str, count: int) -> dict[str, Any]:
    """Streams of token soups, unpatched then with the plugin (counts as ``run_all``)."""
    realstub.activate(source)
    from tensorrt_llm.serve import postprocess_handlers, responses_utils  # noqa: F401

    from trtllm_stream_fix.plugin.installer import install

    outputs = soup_outputs(count)
    result: dict[str, Any] = {"upstream": run_all(outputs)}
    install(mode="on")
    result["plugin"] = run_all(outputs)
    return result


def main(source: str, count: int) -> dict[str, Any]:
    from trtllm_stream_fix.plugin.realstub import drive_preclass

    if drive_preclass.is_pre_class(source):  # module functions, no processor class
        return drive_preclass.main(source, count)
    stubbed = realstub.activate(source)
    from tensorrt_llm.serve import postprocess_handlers, responses_utils  # noqa: F401

    from trtllm_stream_fix.plugin import registry, targets
    from trtllm_stream_fix.plugin.installer import install, uninstall
    from trtllm_stream_fix.sim.model import generate_outputs

    upstream_class = responses_utils.ResponsesStreamingProcessor
    checks = [targets.check(t) for t in registry.all_targets()]
    outputs = list(generate_outputs(count, seed=7))
    result: dict[str, Any] = {
        "stubbed_third_party": stubbed,
        "real_files": {m: sys.modules[m].__file__ for m in realstub.REAL_MODULES},
        "checks": {c.target.dotted: [c.status, c.version] for c in checks},
        "upstream": run_all(outputs),
        "upstream_bodies": body_schema(outputs),
        "upstream_stored": stored_copies(outputs),
        "upstream_usage": usage_parity(outputs),
    }
    result["install"] = [[o.target, o.status] for o in install(mode="on").outcomes]
    result["plugin"] = run_all(outputs)
    result["plugin_bodies"] = body_schema(outputs)
    result["plugin_stored"] = stored_copies(outputs)
    result["plugin_usage"] = usage_parity(outputs)
    result["uninstall"] = [[o.target, o.status] for o in uninstall().outcomes]
    result["restored"] = responses_utils.ResponsesStreamingProcessor is upstream_class
    return result


if __name__ == "__main__":
    try:
        count = int(sys.argv[2]) if len(sys.argv) > 2 else 100
        run = soup if sys.argv[3:] == ["soup"] else main
        payload = run(sys.argv[1], count)
    except Exception as exc:
        payload = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    print("RESULT " + json.dumps(payload))
