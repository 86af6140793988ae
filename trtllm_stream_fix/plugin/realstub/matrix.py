# SPDX-License-Identifier: Apache-2.0
"""The version matrix: one upstream tree, unpatched and with the plugin.

``python -m trtllm_stream_fix.plugin.realstub.matrix SOURCE_DIR [COUNT]`` prints one
``RESULT <json>`` line of rows: workers (0 inline, 2 = two of upstream's real
``PostprocWorker`` processes, see ``realstub.workers``, when the tree has
``executor/{postproc_worker,ipc}.py`` and pyzmq is installed; otherwise the post-processor
arguments pickled as for a worker, and ``"workers"`` in the payload says which and why)
x stream_interval (1, 20) x streaming / non-streaming x store (off, on),
each with the count of outputs that pass the strict checker, that the OpenAI SDK accepts,
that show the client what stream_interval 1 showed, and (store on) that were stored.
Upstream disables storage with post-processing workers, so those rows have no store column.

Streaming runs as ``drive.stream`` does (the version's own egress). Non-streaming runs
``responses_api_post_processor`` (workers) or ``create_response`` (inline), as the handler
does; "strict" there means the response validates as an OpenAI ``Response`` and its output
equals, item by item (type and text), the final response of the same output's stream with
the plugin, and "identical" that stream_interval 20 gives the same output as 1.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import itertools
import json
import pickle
import sys
import traceback
from typing import Any

from trtllm_stream_fix.differential.engine_results import streaming_processor
from trtllm_stream_fix.plugin import realstub
from trtllm_stream_fix.plugin.realstub import workers as real_workers
from trtllm_stream_fix.plugin.realstub.drive import (
    MODEL,
    PROMPT,
    Result,
    _collect,
    comparable,
    stream_guard,
    verdicts,
)


def _request(output: Any, stream: bool, store: bool) -> tuple[Any, Any]:
    from tensorrt_llm.serve import harmony_adapter
    from tensorrt_llm.serve.openai_protocol import ResponsesRequest

    request = ResponsesRequest(
        model=MODEL, input="hi", stream=stream, store=store, request_id=f"resp_{output.seed:08x}"
    )
    adapter = harmony_adapter.get_harmony_adapter()
    adapter.cleanup_stream_state(f"responses-api-{request.request_id}")
    sampling = request.to_sampling_params(
        default_sampling_params={"stop_token_ids": adapter.get_stop_tokens()},
        reasoning_parser="gpt_oss",
    )
    return request, sampling


def _items(output: list[Any]) -> list[tuple[str, str]]:
    out = []
    for item in output:
        item = item if isinstance(item, dict) else item.model_dump()
        parts = item.get("content") or []
        text = "".join(p.get("text", "") for p in parts) or item.get("arguments", "")
        out.append((item.get("type", ""), text))
    return out


_CLIENT_IDS = itertools.count(1)


def _through_pool(pool: Any, post_processor: Any, args: Any, sampling: Any, stream: bool):
    """A function sending one engine response to ``pool`` and returning what the worker's
    post-processor made of it, as the executor and ``openai_server`` use workers."""
    from tensorrt_llm.executor.postproc_worker import PostprocParams

    client_id = next(_CLIENT_IDS)
    params = (sampling, PostprocParams(post_processor=post_processor, postproc_args=args), stream)
    # As submitted: the executor pickles the params when the request is submitted, before the
    # handler's get_initial_responses(); the worker receives that copy with the first response.
    params = pickle.loads(pickle.dumps(params))

    def send(diff: Any, finished: bool, finish_reason: Any) -> Any:
        response = real_workers.engine_response(client_id, diff, finished, finish_reason)
        pool.submit(client_id, response, params)
        return pool.result(client_id).res

    return send


def streamed(
    output: Any, split: int, workers: bool, store: bool, pool: Any = None, cached_tokens: int = 0
) -> dict[str, Any]:
    from tensorrt_llm.serve import postprocess_handlers, responses_utils

    from trtllm_stream_fix.sim.model import engine_responses

    request, sampling = _request(output, True, store)
    conversations = responses_utils.ConversationHistoryStore()
    processor, args = streaming_processor(
        request, sampling, conversation_store=conversations, enable_store=store and not workers
    )
    stamp = getattr(responses_utils, "stamp_sse_sequence_number", None)
    if workers and pool is not None:
        args.num_prompt_tokens = len(PROMPT)
        post = postprocess_handlers.responses_api_streaming_post_processor
        send = _through_pool(pool, post, args, sampling, True)
    else:
        worker_args = pickle.loads(pickle.dumps(args)) if workers else args
        worker_args.num_prompt_tokens = len(PROMPT)
        res = Result(PROMPT, cached_tokens=cached_tokens)

        def send(diff: Any, finished: bool, finish_reason: Any) -> Any:
            res.apply(diff, finished, finish_reason)
            return postprocess_handlers.responses_api_streaming_post_processor(res, worker_args)

    async def egress():
        count = 0
        frames = list(processor.get_initial_responses())
        for response in engine_responses(output, split):
            frames += send(response.token_ids_diff, response.finished, response.finish_reason)
        for frame in frames:
            yield frame if stamp is None else stamp(frame, count)
            count += 1

    async def run() -> tuple[list[dict[str, Any]], str, Any]:
        events, error = await _collect(stream_guard(responses_utils), egress(), processor)
        await asyncio.sleep(0)
        return events, error, await conversations.load_response(request.request_id)

    events, error, copy = asyncio.run(run())
    strict, sdk, _ = verdicts(events)
    final = next(
        (e["response"] for e in reversed(events) if e.get("type", "").startswith("response.")),
        {},
    )
    return {
        "strict": strict and not error,
        "sdk": sdk,
        "visible": comparable(events),
        "stored": copy is not None,
        "items": _items(final.get("output") or []),
        "terminal": final,  # the terminal event's response
        "stored_body": None if copy is None else sent_body(copy),  # as GET sends it
    }


def non_streaming_body(
    output: Any, split: int, workers: bool, store: bool, pool: Any = None, cached_tokens: int = 0
) -> tuple[Any, Any]:
    """The response object a non-streaming request returns, as the handler gets it:
    ``responses_api_post_processor`` in a worker (a real worker process of ``pool``, else the
    arguments and result pickled) or ``create_response`` inline; and the conversation store
    it used. ``cached_tokens``: the prompt tokens the engine reports as cached (inline and
    pickled results only)."""
    from tensorrt_llm.serve import postprocess_handlers, responses_utils

    from trtllm_stream_fix.sim.model import engine_responses

    request, sampling = _request(output, False, store)
    res = Result(PROMPT, cached_tokens=cached_tokens)
    for response in engine_responses(output, split):
        res.apply(response.token_ids_diff, response.finished, response.finish_reason)
    conversations = responses_utils.ConversationHistoryStore()
    if workers:
        args = postprocess_handlers.ResponsesAPIPostprocArgs(
            model=MODEL, request=request, sampling_params=sampling, use_harmony=True
        )
        if pool is not None:  # the engine's one final response, all tokens
            args.num_prompt_tokens = len(PROMPT)
            post = postprocess_handlers.responses_api_post_processor
            send = _through_pool(pool, post, args, sampling, False)
            return send(res.outputs[0].token_ids, True, res.outputs[0].finish_reason), conversations
        args = pickle.loads(pickle.dumps(args))
        args.num_prompt_tokens = len(PROMPT)
        body = postprocess_handlers.responses_api_post_processor(res, args)
        return pickle.loads(pickle.dumps(body)), conversations  # back from the worker
    create = responses_utils.create_response
    # the prompt length, where the version's create_response takes it (early-2026's does not)
    counted = "num_prompt_tokens" in inspect.signature(create).parameters
    body = asyncio.run(
        create(
            request=request,
            sampling_params=sampling,
            model_name=MODEL,
            conversation_store=conversations,
            generation_result=res,
            enable_store=store,
            use_harmony=True,
            **({"num_prompt_tokens": len(PROMPT)} if counted else {}),
        )
    )
    return body, conversations


def sent_body(body: Any) -> dict[str, Any]:
    """What ``openai_server`` sends for ``body``: ``JSONResponse(content=body.model_dump(
    by_alias=True))`` (271a1eda; older lines without ``by_alias``)."""
    dumped = body.model_dump(by_alias=True)
    return json.loads(json.dumps(dumped, ensure_ascii=False, allow_nan=False))


def non_streamed(
    output: Any, split: int, workers: bool, store: bool, pool: Any = None
) -> dict[str, Any]:
    from openai.types.responses import Response

    request_id = f"resp_{output.seed:08x}"
    conversations = None
    try:
        body, conversations = non_streaming_body(output, split, workers, store, pool)
        data = sent_body(body)
        Response.model_validate(data)
        sdk, error = True, ""
    except Exception as exc:
        data, sdk, error = {}, False, f"{type(exc).__name__}: {exc}"
    stored = bool(
        not workers
        and conversations is not None
        and asyncio.run(conversations.load_response(request_id)) is not None
    )
    return {"sdk": sdk, "error": error, "items": _items(data.get("output") or []), "stored": stored}


def table(
    outputs: list[Any], reference: dict[int, list[tuple[str, str]]], pool: Any = None
) -> list[dict]:
    rows = []
    for workers in (0, 2):
        for split in (1, 20):
            for mode in ("streaming", "non-streaming"):
                for store in (False, True):
                    row = {"workers": workers, "interval": split, "mode": mode, "store": store}
                    counts = {"n": 0, "strict": 0, "sdk": 0, "identical": 0, "stored": 0}
                    for output in outputs:
                        run = streamed if mode == "streaming" else non_streamed
                        on = pool if workers else None
                        got = run(output, split, bool(workers), store, on)
                        base = run(output, 1, bool(workers), store, on) if split != 1 else got
                        counts["n"] += 1
                        if mode == "streaming":
                            counts["strict"] += got["strict"]
                            same = got["visible"] == base["visible"]
                        else:
                            counts["strict"] += got["sdk"] and got["items"] == reference.get(
                                output.seed
                            )
                            same = got["items"] == base["items"]
                        counts["sdk"] += got["sdk"]
                        counts["identical"] += same
                        counts["stored"] += got["stored"]
                    row.update(counts)
                    rows.append(row)
    return rows


def _rows(source: str, outputs: list[Any], reference: dict, real: bool, plugin: bool):
    """The table, with two real worker processes (the plugin installed in them if on), and
    how many times a worker process died and was started again."""
    if not real:
        return table(outputs, reference), 0
    pool = real_workers.Pool(source, 2, plugin=plugin)
    try:
        return table(outputs, reference, pool), pool.restarts
    finally:
        pool.close()


def main(source: str, count: int, workers: str = "processes") -> dict[str, Any]:
    """The matrix; ``workers`` "processes" (real PostprocWorker processes where they can run)
    or "pickled" (the post-processor arguments pickled as for a worker)."""
    why_not = real_workers.available(source) if workers == "processes" else "asked for"
    if why_not:
        realstub.activate(source)
    else:
        real_workers.activate(source)
    from tensorrt_llm.serve import postprocess_handlers, responses_utils  # noqa: F401

    from trtllm_stream_fix.plugin.installer import install, uninstall
    from trtllm_stream_fix.sim.model import generate_outputs

    outputs = list(generate_outputs(count, seed=5))
    install(mode="on")  # the reference: the plugin's stream at interval 1
    reference = {o.seed: streamed(o, 1, False, False)["items"] for o in outputs}
    uninstall()
    upstream_rows, upstream_died = _rows(source, outputs, reference, not why_not, False)
    install(mode="on")
    plugin_rows, plugin_died = _rows(source, outputs, reference, not why_not, True)
    mode = f"pickled as for a worker ({why_not})" if why_not else "2 PostprocWorker processes"
    return {
        "source": source,
        "workers": mode,
        "worker_exits": {"upstream": upstream_died, "plugin": plugin_died},
        "upstream": upstream_rows,
        "plugin": plugin_rows,
    }


def markdown(payload: dict[str, Any], line: str) -> str:
    """The payload's rows as the note's table (one line per cell)."""
    out = []
    for side, label in (("upstream", "unpatched"), ("plugin", "plugin")):
        out += [f"| {line} | {label} | {count_cells(r)} |" for r in payload[side]]
    return "\n".join(out)


def count_cells(row: dict[str, Any]) -> str:
    """A row's cells from workers to stored, as the notes' tables print them (upstream turns
    storage off with workers; a chat row has no store)."""
    n = row["n"]
    if row["store"] and row["workers"]:
        stored = "n/a (off with workers)"
    else:
        stored = f"{row['stored']}/{n}" if row["store"] else "-"
    store = "-" if row.get("api") == "chat" else ("on" if row["store"] else "off")
    counts = [f"{row[key]}/{n}" for key in ("strict", "sdk", "identical")]
    cells = (row["workers"], row["interval"], row["mode"], store, *counts, stored)
    return " | ".join(map(str, cells))


def _cli(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m trtllm_stream_fix.plugin.realstub.matrix")
    parser.add_argument("source", help="a TensorRT-LLM source tree (TRTLLM_SOURCE_DIR)")
    parser.add_argument("count", nargs="?", type=int, default=20, help="synthetic outputs")
    parser.add_argument("--workers", choices=("processes", "pickled"), default="processes")
    parser.add_argument("--markdown", metavar="LINE", help="also print the rows as a table")
    args = parser.parse_args(argv)
    try:
        payload = main(args.source, args.count, args.workers)
    except Exception as exc:
        payload = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    print("RESULT " + json.dumps(payload))
    if args.markdown and "error" not in payload:
        print(markdown(payload, args.markdown))


if __name__ == "__main__":
    _cli(sys.argv[1:])
