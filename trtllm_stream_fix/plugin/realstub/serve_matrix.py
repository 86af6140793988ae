# SPDX-License-Identifier: Apache-2.0
"""Upstream's own server over HTTP: unpatched vs plugin, the version table.

``python -m trtllm_stream_fix.plugin.realstub.serve_matrix SOURCE_DIR [COUNT]`` starts
``realstub.server`` (a fresh interpreter each; the plugin enters through its ``.pth``) for
unpatched / plugin x post-processing workers 0 / 2 x ``stream_interval`` 1 / 20 and sends it,
per synthetic output (``seed N`` in the input), a streamed and a non-streamed Responses
request with ``store`` off and on, then prints one ``RESULT <json>`` line of rows.

Per row, counts of outputs: ``strict`` (streaming: our strict checker accepts the events;
non-streaming: the body validates as an OpenAI ``Response`` and its items, type and text,
equal those of the plugin's interval-1 stream), ``sdk`` (the OpenAI SDK's accumulator accepts
the stream / the SDK model accepts the body), ``identical`` (what the client sees equals the
same server configuration at interval 1) and ``stored`` (``GET /v1/responses/{id}`` finds it;
upstream turns storage off with workers, so those rows are ``None``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...differential import openai_schema

MODEL = "gpt-oss-20b"
SERVER_MODULE = "trtllm_stream_fix.plugin.realstub.server"
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
    },
}


ID_KEYS = frozenset({"id", "item_id", "call_id", "response_id"})
CLOCK_KEYS = frozenset({"created_at", "completed_at", "created"})


def normalized(value: Any, ids: dict[str, str] | None = None) -> Any:
    """``value`` with generated ids renamed by order of first appearance and timestamps
    dropped: what two servers can agree on for the same generation."""
    ids = {} if ids is None else ids
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in CLOCK_KEYS:
                continue
            if key in ID_KEYS and isinstance(item, str) and item:
                out[key] = ids.setdefault(item, f"<id {len(ids)}>")
            else:
                out[key] = normalized(item, ids)
        return out
    if isinstance(value, (list, tuple)):
        return [normalized(item, ids) for item in value]
    return value


@contextlib.contextmanager
def running_server(
    source: str | Path,
    *,
    plugin: bool,
    stream_interval: int = 20,
    workers: int = 0,
    draft_tokens: int = 0,
    timeout: float = 180.0,
) -> Iterator[str]:
    """Start ``realstub.server`` in a fresh interpreter; yield its base URL; stop it."""
    command = [sys.executable, "-m", SERVER_MODULE, "--source", str(source)]
    command += ["--plugin", "on" if plugin else "off", "--stream-interval", str(stream_interval)]
    command += ["--workers", str(workers), "--draft-tokens", str(draft_tokens)]
    env = {k: v for k, v in os.environ.items() if k != "TRTLLM_STREAM_FIX"}
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    url: list[str] = []

    def read_url() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            if line.startswith("LISTENING "):
                url.append(line.split(" ", 1)[1].strip())
                return

    reader = threading.Thread(target=read_url, daemon=True)
    reader.start()
    reader.join(timeout)
    try:
        if not url:
            log.seek(0)
            tail = log.read()[-3000:]
            raise RuntimeError(f"the server did not start (exit {proc.poll()}):\n{tail}")
        yield url[0]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def client_limits(connections: int) -> Any:
    """``httpx.Limits`` for ``connections`` concurrent requests to :func:`running_server`: an
    idle connection is dropped well before the server's keep-alive ends (httpx's default
    equals upstream's 5 s, so under load a request can go out on a connection the server is
    closing and be reset: ``httpx.ReadError``)."""
    import httpx

    from .server import KEEP_ALIVE_S

    return httpx.Limits(max_connections=connections, keepalive_expiry=KEEP_ALIVE_S / 5)


# -- one request ---------------------------------------------------------------------------


async def stream_response(http: Any, url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of one streamed Responses request (as ``trtllm-stream-fix validate`` reads
    them)."""
    from ...checker.client import stream_responses

    record = await stream_responses(
        http, f"{url}/v1/responses", body, allow_incomplete=True, allow_failed=True
    )
    events = []
    for raw in record.events:
        try:
            events.append(json.loads(raw["data"]))
        except ValueError:  # a frame that is not JSON: the checkers reject the stream
            events.append({"type": None, "unparsed": raw["data"][:200]})
    return events


def response_id(events: list[dict[str, Any]]) -> str | None:
    for event in events:
        if isinstance(event.get("response"), dict) and event["response"].get("id"):
            return event["response"]["id"]
    return None


def final_items(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(type, text) of the output items of the stream's terminal snapshot."""
    from .matrix import _items

    for event in reversed(events):
        if event.get("type", "").startswith("response.") and isinstance(
            event.get("response"), dict
        ):
            return _items(event["response"].get("output") or [])
    return []


async def stored(http: Any, url: str, rid: str | None) -> bool:
    if not rid:
        return False
    reply = await http.get(f"{url}/v1/responses/{rid}")
    return reply.status_code == 200


async def streamed(http: Any, url: str, seed: int, store: bool) -> dict[str, Any]:
    from .drive import comparable, verdicts

    body = {"model": MODEL, "input": f"hi, seed {seed}", "stream": True, "store": store}
    events = await stream_response(http, url, body)
    strict, sdk, problem = verdicts(events)
    return {
        "strict": strict,
        "sdk": sdk,
        "problem": problem,
        "schema": [p for event in events for p in openai_schema.missing_keys(event)],
        "visible": normalized(comparable(events)),
        "items": final_items(events),
        "stored": await stored(http, url, response_id(events)) if store else None,
    }


async def after_terminal(http: Any, url: str, scenario: str) -> list[str | None]:
    """Event types of a stream whose engine raises right after its last response (a named
    ``scenario``): nothing may follow the terminal event."""
    body = {"model": MODEL, "input": f"scenario {scenario}, fault after-end", "stream": True}
    return [event.get("type") for event in await stream_response(http, url, body)]


async def non_streamed(http: Any, url: str, seed: int, store: bool) -> dict[str, Any]:
    from openai.types.responses import Response

    from .matrix import _items

    body = {"model": MODEL, "input": f"hi, seed {seed}", "stream": False, "store": store}
    reply = await http.post(f"{url}/v1/responses", json=body)
    data: dict[str, Any] = {}
    try:
        data = reply.json()
        Response.model_validate(data)
        sdk, problem = reply.status_code == 200, ""
    except Exception as exc:
        sdk, problem = False, f"HTTP {reply.status_code}: {type(exc).__name__}: {exc}"[:300]
    rid = data.get("id")
    fetched = await http.get(f"{url}/v1/responses/{rid}") if store and rid else None
    return {
        "sdk": sdk,
        "problem": problem,
        "schema": openai_schema.missing_keys(data) if data else ["no body"],
        # GET /v1/responses/{id}: the stored response as a client fetches it again
        "stored_schema": openai_schema.missing_keys(fetched.json())
        if fetched is not None and fetched.status_code == 200
        else None,
        "items": _items(data.get("output") or []),
        "stored": fetched is not None and fetched.status_code == 200 if store else None,
    }


# -- Chat Completions (upstream's Harmony chat path) -------------------------------------------


async def chat(http: Any, url: str, seed: int, stream: bool) -> dict[str, Any]:
    """One ``/v1/chat/completions`` request: strict chat checker and SDK verdicts.

    A generation the Harmony parser rejects (``malformed``) may only end in an OpenAI error
    (an error payload then ``[DONE]``, or an error body): that is a pass for it, and the only
    pass; any other generation must complete.
    """
    from openai.types.chat import ChatCompletion

    from ...differential.chat import chat_visible
    from ...sim.model import generate_output

    malformed = generate_output(seed).malformed
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": f"hi, seed {seed}"}],
        "stream": stream,
    }
    if not stream:
        reply = await http.post(f"{url}/v1/chat/completions", json=body)
        data = reply.json()
        try:
            if malformed:
                ok = reply.status_code >= 400 and isinstance(data.get("message"), str)
                problem = "" if ok else f"HTTP {reply.status_code} for a malformed generation"
            else:
                ChatCompletion.model_validate(data)
                ok, problem = reply.status_code == 200, ""
        except Exception as exc:
            ok, problem = False, f"HTTP {reply.status_code}: {type(exc).__name__}: {exc}"[:300]
        message = (data.get("choices") or [{}])[0].get("message") or {}
        visible = normalized([message.get(k) for k in ("content", "reasoning", "tool_calls")])
        return {"strict": ok, "sdk": ok, "problem": problem, "visible": visible}
    payloads, problem = await chat_stream(http, url, body)
    strict, sdk, problem = chat_verdicts(payloads, problem, malformed)
    visible = normalized(chat_visible(payloads))
    return {"strict": strict, "sdk": sdk, "problem": problem, "visible": visible}


async def chat_stream(http: Any, url: str, body: dict[str, Any]) -> tuple[list[Any], str]:
    """The payloads of one streamed ``/v1/chat/completions`` request (``[DONE]`` as the string)
    and why the stream broke off ("" when it did not)."""
    payloads: list[Any] = []
    problem = ""
    async with http.stream("POST", f"{url}/v1/chat/completions", json=body) as reply:
        try:
            async for line in reply.aiter_lines():
                if line.startswith("data: "):
                    data = line[len("data: ") :]
                    payloads.append("[DONE]" if data == "[DONE]" else json.loads(data))
        except Exception as exc:  # the server broke the stream off
            problem = f"stream broken: {type(exc).__name__}: {exc}"[:300]
    return payloads, problem


def chat_verdicts(payloads: list[Any], problem: str, malformed: bool) -> tuple[bool, bool, str]:
    """(strict chat checker ok, SDK accepts, first problem) for one chat stream: a complete
    stream, or for a ``malformed`` generation one that ends in an OpenAI error."""
    from ...differential.chat import check_chat_payloads
    from ...differential.chat_oracle import SDKRejected, sdk_accumulate_chat

    check = check_chat_payloads(payloads)
    strict = not problem and not check.violations and check.done
    strict = strict and (check.error is not None) == malformed
    try:
        sdk = (sdk_accumulate_chat(payloads).error is not None) == malformed
    except SDKRejected as exc:
        sdk, problem = False, problem or f"SDK: {exc}"[:300]
    if not strict:
        problem = problem or (check.violations or [f"terminal {check.terminal}"])[0]
    return strict, sdk, problem


# -- a conversation, through the OpenAI SDK ----------------------------------------------------


def two_turns(url: str, *, stream_second: bool = True) -> dict[str, Any]:
    """Turn 1 streamed with a function tool (the model calls it); turn 2 with
    ``previous_response_id`` and the ``function_call_output``, through the OpenAI SDK.

    Returns what happened: the turn-1 call, whether the SDK accepted turn 2 (or the error it
    raised) and, for a streamed turn 2, the strict checker's verdict on its events.
    """
    import openai

    from .drive import verdicts

    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    out: dict[str, Any] = {}
    first = []
    with client.responses.stream(
        model=MODEL, input="What is the weather in Paris?", tools=[WEATHER_TOOL], store=True
    ) as stream:
        for event in stream:
            first.append(event.model_dump(mode="json", exclude_unset=True, warnings=False))
        turn1 = stream.get_final_response()
    out["turn1_strict"] = verdicts(first)[0]
    calls = [item for item in turn1.output if item.type == "function_call"]
    out["turn1_call"] = calls[0].name if calls else None
    if not calls:
        return out
    second = {
        "model": MODEL,
        "previous_response_id": turn1.id,
        "input": [
            {"type": "function_call_output", "call_id": calls[0].call_id, "output": '{"c": 21}'}
        ],
        "store": True,
    }
    try:
        if stream_second:
            events = []
            with client.responses.stream(**second) as stream:
                for event in stream:
                    events.append(event.model_dump(mode="json", exclude_unset=True, warnings=False))
                turn2 = stream.get_final_response()
            out["turn2_strict"] = verdicts(events)[0]
        else:
            turn2 = client.responses.create(**second)
        out["turn2_status"] = turn2.status
        out["turn2_text"] = turn2.output_text
    except openai.APIError as exc:
        out["turn2_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return out


# -- the table ------------------------------------------------------------------------------


async def run_server(url: str, seeds: list[int]) -> dict[tuple[str, str, bool, int], dict]:
    """Every request of the table against one server: (api, mode, store, seed) -> verdicts."""
    import httpx

    out: dict[tuple[str, str, bool, int], dict] = {}
    async with httpx.AsyncClient(timeout=120) as http:
        for seed in seeds:
            for store in (False, True):
                out["responses", "streaming", store, seed] = await streamed(http, url, seed, store)
                got = await non_streamed(http, url, seed, store)
                out["responses", "non-streaming", store, seed] = got
            for mode in ("streaming", "non-streaming"):
                got = await chat(http, url, seed, mode == "streaming")
                out["chat", mode, False, seed] = got
    return out


def table(source: str, count: int, *, draft_tokens: int = 0) -> dict[str, Any]:
    """Run the matrix against ``source``: 8 servers, ``count`` synthetic outputs each."""
    from ...sim.model import generate_outputs

    seeds = [o.seed for o in generate_outputs(count, seed=5)]
    runs: dict[tuple[bool, int, int], dict] = {}
    for plugin in (True, False):  # the plugin's interval-1 stream is the reference
        for workers in (0, 2):
            for interval in (1, 20):
                with running_server(
                    source,
                    plugin=plugin,
                    stream_interval=interval,
                    workers=workers,
                    draft_tokens=draft_tokens,
                ) as url:
                    runs[plugin, workers, interval] = asyncio.run(run_server(url, seeds))
    reference = {
        seed: runs[True, 0, 1]["responses", "streaming", False, seed]["items"] for seed in seeds
    }
    rows, examples = [], []
    for (plugin, workers, interval), results in runs.items():
        for api, mode, store in sorted({key[:3] for key in results}):
            row: dict[str, Any] = {
                "line": Path(source).name,
                "api": api,
                "plugin": plugin,
                "workers": workers,
                "interval": interval,
                "mode": mode,
                "store": store,
            }
            n = strict = sdk = same = kept = 0
            for seed in seeds:
                got = results[api, mode, store, seed]
                base = runs[plugin, workers, 1][api, mode, store, seed]
                n += 1
                if api == "responses" and mode == "non-streaming":
                    strict += got["sdk"] and got["items"] == reference[seed]
                    same += got["items"] == base["items"]
                else:
                    strict += got["strict"]
                    same += got["visible"] == base["visible"]
                sdk += got["sdk"]
                kept += bool(got.get("stored"))
                if got["problem"] and len(examples) < 16:
                    label = f"{'plugin' if plugin else 'unpatched'} w{workers} k{interval} {api}"
                    problem = f"{mode} store={store} seed={seed}: {got['problem']}"
                    examples.append(f"{label} {problem}")
            row.update(n=n, strict=strict, sdk=sdk, identical=same)
            row["stored"] = kept if store and not workers else None
            rows.append(row)
    return {"source": source, "count": count, "rows": rows, "examples": examples}


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as the note's table."""
    from .matrix import count_cells

    lines = [
        "| line | api | | workers | interval | mode | store | strict | SDK | identical to 1 "
        "| stored |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = ("api", "plugin", "workers", "interval", "mode", "store")
    for r in sorted(rows, key=lambda r: tuple(str(r[k]) for k in order)):
        side = "plugin" if r["plugin"] else "unpatched"
        lines.append(f"| {r['line']} | {r['api']} | {side} | {count_cells(r)} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m trtllm_stream_fix.plugin.realstub.serve_matrix")
    p.add_argument("source", help="TensorRT-LLM source tree with tensorrt_llm/serve/")
    p.add_argument("count", nargs="?", type=int, default=10, help="synthetic outputs")
    p.add_argument("--draft-tokens", type=int, default=0)
    p.add_argument("--markdown", action="store_true", help="also print the table")
    args = p.parse_args(argv)
    try:
        result = table(args.source, args.count, draft_tokens=args.draft_tokens)
        if args.markdown:
            print(markdown(result["rows"]))
    except Exception as exc:
        result = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    print("RESULT " + json.dumps(result))
    return 0 if "error" not in result else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
