# SPDX-License-Identifier: Apache-2.0
"""Drive the real Responses functions of the pre-class line (83ab45a5) as its
``openai_server`` calls them, unpatched and with the plugin; print one ``RESULT <json>`` line.

Usage: ``python -m trtllm_stream_fix.plugin.realstub.drive_preclass SOURCE_DIR [COUNT]``
(``realstub.drive`` hands a pre-class tree to this module). On that line the
``/v1/responses`` handler runs ``request_preprocess``, then iterates
``responses_api_process_streaming_events(request=, sampling_params=, generator=,
harmony_adapter=, model_name=, conversation_store=, enable_store=)`` inside a
``StreamingResponse``, or awaits ``responses_api_create_response(generator=, request=,
sampling_params=, model_name=, conversation_store=, generation_result=None,
enable_store=)``: both names are looked up in the real ``openai_server`` module at call time
(the bindings the handler calls), with the real ``request_preprocess`` and
``ConversationHistoryStore``. The generator is the engine's promise: one result mutated in
place per engine response (cumulative ``token_ids``, ``token_ids_diff``, ``_done`` and
``finish_reason`` on the last, the stop token trimmed), awaitable for the non-streaming path.

Per synthetic output: streams at 1 and 20 tokens per engine response, store off and on
(``enable_store`` and ``request.store``), checked by the strict checker and the OpenAI SDK
accumulator, the interval-20 stream compared with the interval-1 one (``client_visible``,
creation time aside); with store on, the stored response against the terminal event's and
the stored conversation; the non-streaming body (store off and on) against the terminal
response of the interval-20 stream (items with ids canonical, status, usage).
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import traceback
from typing import Any

from trtllm_stream_fix.core.events import TERMINAL_TYPES
from trtllm_stream_fix.plugin import realstub
from trtllm_stream_fix.plugin.realstub.drive import STORED_FIELDS, comparable, set_values, verdicts

MODEL = "gpt-oss-20b"
SPLITS = (1, 20)
BODY_FIELDS = ("status", "output", "usage")  # a body repeats these of the stream's terminal


def is_pre_class(source: str) -> bool:
    """Whether the tree's ``responses_utils.py`` predates ``ResponsesStreamingProcessor``."""
    from pathlib import Path

    path = Path(source, "tensorrt_llm", "serve", "responses_utils.py")
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    has_class = "class ResponsesStreamingProcessor" in text
    return "def process_streaming_events(" in text and not has_class


def _without_created(value: Any) -> Any:
    """``value`` without ``created_at`` (the server stamps the wall clock per request)."""
    if isinstance(value, dict):
        return {k: _without_created(v) for k, v in value.items() if k != "created_at"}
    if isinstance(value, list):
        return [_without_created(v) for v in value]
    return value


def _server() -> tuple[Any, Any]:
    """``openai_server`` (None if the tree's does not import) and ``responses_utils``."""
    from tensorrt_llm.serve import responses_utils

    try:
        from tensorrt_llm.serve import openai_server
    except Exception:  # a tree without the server: call the module functions directly
        return None, responses_utils
    return openai_server, responses_utils


def _promise(output: Any, split: int, prompt: list[int], cached_tokens: int = 0) -> Any:
    from trtllm_stream_fix.plugin.realstub.server import FakeGeneration, Record
    from trtllm_stream_fix.sim.model import engine_responses

    record = Record(prompt_token_ids=list(prompt), cached_tokens=cached_tokens)
    return FakeGeneration(record, engine_responses(output, split), post=None)


@functools.cache
def _adapter() -> Any:
    """The server's one ``HarmonyAdapter`` (``openai_responses`` creates it on first use)."""
    from tensorrt_llm.serve import harmony_adapter

    return harmony_adapter.HarmonyAdapter()


async def _preprocess(output: Any, stream: bool, store: bool, conversations: Any) -> tuple:
    from tensorrt_llm.serve import responses_utils
    from tensorrt_llm.serve.openai_protocol import ResponsesRequest

    request = ResponsesRequest(
        model=MODEL, input="hi", stream=stream, store=store, request_id=f"resp_{output.seed:08x}"
    )
    adapter = _adapter()
    adapter.cleanup_stream_state(f"responses-api-{request.request_id}")
    tokens, sampling = await responses_utils.request_preprocess(
        request, None, adapter, conversations, store
    )
    return request, sampling, adapter, tokens


def stream(output: Any, split: int, store: bool, cached_tokens: int = 0) -> dict[str, Any]:
    """One streamed request as the handler serves it: events, error, stored copy."""
    from tensorrt_llm.serve import responses_utils

    server, module = _server()
    conversations = responses_utils.ConversationHistoryStore()

    async def run() -> dict[str, Any]:
        request, sampling, adapter, tokens = await _preprocess(output, True, store, conversations)
        events = (
            server.responses_api_process_streaming_events
            if server is not None
            else module.process_streaming_events
        )
        frames, error = [], ""
        try:
            async for frame in events(
                request=request,
                sampling_params=sampling,
                generator=_promise(output, split, tokens, cached_tokens),
                harmony_adapter=adapter,
                model_name=MODEL,
                conversation_store=conversations,
                enable_store=store,
            ):
                frames.append(frame)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        copy = await conversations.load_response(request.request_id)
        history = await conversations.get_conversation_history(request.request_id)
        return {"frames": frames, "error": error, "copy": copy, "history": history}

    got = asyncio.run(run())
    from trtllm_stream_fix.differential.engine_results import events_of
    from trtllm_stream_fix.plugin.realstub.matrix import sent_body

    events = events_of(got["frames"])
    terminal = next(
        (e["response"] for e in reversed(events) if e.get("type") in TERMINAL_TYPES), {}
    )
    copy = got["copy"]
    return {
        "events": events,
        "error": got["error"],
        "terminal": terminal,
        "stored": None if copy is None else sent_body(copy),
        "history": len(got["history"]),
        "sse": all(f.startswith("event: ") and f.endswith("\n\n") for f in got["frames"]),
    }


def body(output: Any, store: bool, cached_tokens: int = 0) -> dict[str, Any]:
    """The non-streaming response as the handler returns it (FastAPI dumps it by alias)."""
    from tensorrt_llm.serve import responses_utils

    from trtllm_stream_fix.plugin.realstub.matrix import sent_body

    server, module = _server()
    conversations = responses_utils.ConversationHistoryStore()

    async def run() -> Any:
        request, sampling, _, tokens = await _preprocess(output, False, store, conversations)
        create = (
            server.responses_api_create_response if server is not None else module.create_response
        )
        made = await create(
            generator=_promise(output, 20, tokens, cached_tokens),
            request=request,
            sampling_params=sampling,
            model_name=MODEL,
            conversation_store=conversations,
            generation_result=None,
            enable_store=store,
        )
        return made, await conversations.load_response(request.request_id)

    try:
        made, copy = asyncio.run(run())
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}", "body": {}, "stored": False}
    return {"error": "", "body": sent_body(made), "stored": copy is not None}


def body_schema(outputs: list[Any]) -> dict[str, Any]:
    """Per output the non-streaming body (storage off), checked against OpenAI's recorded
    schema: counts as ``drive.body_schema`` (no workers on this line)."""
    from trtllm_stream_fix.differential import openai_schema

    stats: dict[str, Any] = {"bodies": 0, "complete": 0, "raised": 0, "problems": 0}
    stats["examples"] = []
    for output in outputs:
        got = body(output, False)
        problems = [got["error"]] if got["error"] else openai_schema.missing_keys(got["body"])
        stats["bodies"] += 1
        stats["raised"] += bool(got["error"])
        stats["complete"] += not problems
        stats["problems"] += len(problems)
        if problems and len(stats["examples"]) < 5:
            stats["examples"].append(f"{output.name} seed={output.seed}: {problems[0]}")
    return stats


def _same(a: dict[str, Any], b: dict[str, Any], fields: tuple[str, ...]) -> list[str]:
    """The ``fields`` where two responses differ (ids canonical, null entries aside)."""
    from trtllm_stream_fix.differential.visible import comparable_response

    a, b = comparable_response(a), comparable_response(b)
    return [k for k in fields if set_values(a.get(k)) != set_values(b.get(k))]


def run_all(outputs: list[Any]) -> dict[str, Any]:
    """Counts of the checks above over ``outputs`` (the module docstring)."""
    from openai.types.responses import Response

    stats: dict[str, Any] = {"streams": 0, "compared": 0, "identical": 0, "strict": 0}
    stats |= {"sdk": 0, "raised": 0, "sse": 0, "store_streams": 0, "stored": 0}
    stats |= {"stored_same": 0, "history": 0, "leaked": 0, "bodies": 0, "body_raised": 0}
    stats |= {"body_sdk": 0, "body_same": 0, "body_usage": 0, "body_counted": 0}
    stats |= {"body_stored": 0, "examples": []}
    examples = stats["examples"]
    for n, output in enumerate(outputs):
        cached = 3 * (n % 2)
        terminal: dict[str, Any] = {}
        for store in (False, True):
            runs = {k: stream(output, k, store, cached) for k in SPLITS}
            reference = _without_created(comparable(runs[SPLITS[0]]["events"]))
            for k, got in runs.items():
                stats["streams"] += 1
                strict, sdk, problem = verdicts(got["events"])
                stats["strict"] += strict and not got["error"]
                stats["sdk"] += sdk
                stats["raised"] += bool(got["error"])
                stats["sse"] += got["sse"]
                same = _without_created(comparable(got["events"])) == reference
                if k != SPLITS[0]:
                    stats["compared"] += 1
                    stats["identical"] += same
                if store:
                    stats["store_streams"] += 1
                    copy = got["stored"]
                    stats["stored"] += copy is not None
                    differs = [] if copy is None else _same(copy, got["terminal"], STORED_FIELDS)
                    stats["stored_same"] += copy is not None and not differs
                    stats["history"] += got["history"] > 0
                    problem = problem or (f"stored copy differs on {differs}" if differs else "")
                else:
                    stats["leaked"] += got["stored"] is not None
                bad = got["error"] or problem or ("" if same else "differs from k=1")
                if bad and len(examples) < 6:
                    examples.append(f"{output.name} seed={output.seed} k={k} store={store}: {bad}")
            terminal = runs[SPLITS[-1]]["terminal"]
        for store in (False, True):
            got = body(output, store, cached)
            stats["bodies"] += 1
            stats["body_raised"] += bool(got["error"])
            data = got["body"]
            try:
                Response.model_validate(data)
                stats["body_sdk"] += 1
            except Exception:
                pass
            differs = _same(data, terminal, BODY_FIELDS) if data else list(BODY_FIELDS)
            stats["body_same"] += not differs
            stats["body_usage"] += bool(data) and "usage" not in differs
            stats["body_counted"] += bool(data.get("usage"))  # a usage, not null
            stats["body_stored"] += store and got["stored"]
            if (got["error"] or differs) and len(examples) < 6:
                detail = got["error"] or f"body differs from the stream on {differs}"
                examples.append(f"{output.name} seed={output.seed} body store={store}: {detail}")
    return stats


def main(source: str, count: int) -> dict[str, Any]:
    stubbed = realstub.activate(source)
    from tensorrt_llm.serve import responses_utils

    from trtllm_stream_fix.plugin import registry, targets
    from trtllm_stream_fix.plugin.installer import install, is_active, uninstall
    from trtllm_stream_fix.sim.model import generate_outputs

    server, _ = _server()
    names = ("process_streaming_events", "create_response")
    originals = [getattr(responses_utils, n) for n in names]
    outputs = list(generate_outputs(count, seed=7))
    checks = map(targets.check, registry.all_targets())
    result: dict[str, Any] = {
        "line": targets.detect_line(),
        "stubbed_third_party": stubbed,
        "server": None if server is None else server.__file__,
        "checks": {c.target.dotted: [c.status, c.version] for c in checks},
        "upstream": run_all(outputs),
    }
    result["install"] = [[o.target, o.status, o.detail] for o in install(mode="on").outcomes]
    result["active"] = is_active()
    result["plugin"] = run_all(outputs)
    result["uninstall"] = [[o.target, o.status] for o in uninstall().outcomes]
    result["restored"] = [getattr(responses_utils, n) for n in names] == originals and (
        server is None or [getattr(server, f"responses_api_{n}") for n in names] == originals
    )
    return result


if __name__ == "__main__":
    try:
        payload = main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100)
    except Exception as exc:
        payload = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    print("RESULT " + json.dumps(payload))
