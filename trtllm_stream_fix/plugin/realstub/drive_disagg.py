# SPDX-License-Identifier: Apache-2.0
"""Upstream's own ``openai_server`` as the workers of a disaggregated deployment; print one
``RESULT <json>`` line.

Usage: ``python -m trtllm_stream_fix.plugin.realstub.drive_disagg SOURCE_DIR [COUNT] [on|off]``
(``on``: the plugin loaded by its ``.pth`` line, as an operator installs it; ``off``: not at
all). In one interpreter, three ``OpenAIServer`` apps built by ``realstub.server`` around the
fake engine (which runs a ``context_only`` request as one token handed off and a
``generation_only`` one from the relayed ``first_gen_tokens``, see
``server.disaggregated_phase``): a context worker and two generation workers at
``stream_interval`` 1 and 20, called in-process over ASGI.

Per synthetic output (``hi, seed N``), for ``/v1/responses`` and ``/v1/chat/completions``, the
two calls the orchestrator (``openai_disagg_service._send_disagg_request_ctx_first``) makes:
a non-streaming context-only request (``disaggregated_params.request_type="context_only"``;
every other one asks for ``prompt_token_ids_b64``), then, when the context phase did not finish
the generation, a generation-only request built from its body as the orchestrator builds it
(its ``disaggregated_params`` with ``request_type="generation_only"`` and ``ctx_usage``, the
context usage as a ``UsageInfo``; ``prompt_token_ids`` or ``prompt_token_ids_b64`` relayed;
Responses with ``store: false``), streamed to both generation workers and once not streamed.
Checked: the strict checker and the SDK accept each stream, the interval-20 stream shows the
client what interval 1 shows and what an aggregated request for the same prompt shows (so
the relayed first token is in it), and the usage input and cached tokens of the stream's
terminal event / usage chunk and of the non-streaming body are the context worker's. The
context-only bodies are returned (ids and times normalised) for comparison across modes.
"""

from __future__ import annotations

import asyncio
import json
import os
import site
import sys
import traceback
from typing import Any

MODEL = "gpt-oss-20b"
GEN_PENDING = ("length", "not_finished")  # the orchestrator's _need_gen
WORKER_URL = "http://worker"  # each worker app is called in-process over ASGI


def usage_info(usage: dict[str, Any]) -> dict[str, Any]:
    """The context response's usage as the ``UsageInfo`` the orchestrator relays in
    ``ctx_usage`` (Responses' ``input_tokens`` / ``output_tokens`` renamed; chat's as is)."""
    if "prompt_tokens" in usage:
        return usage
    details = usage.get("input_tokens_details") or {}
    return {
        "prompt_tokens": usage["input_tokens"],
        "completion_tokens": usage["output_tokens"],
        "total_tokens": usage["total_tokens"],
        "prompt_tokens_details": {"cached_tokens": details.get("cached_tokens") or 0},
    }


def generation_request(
    body: dict[str, Any], ctx: dict[str, Any], handoff: dict[str, Any]
) -> dict[str, Any]:
    """The generation-only request the orchestrator sends after the context phase."""
    params = {**handoff, "request_type": "generation_only", "ctx_usage": usage_info(ctx["usage"])}
    params.pop("return_prompt_token_ids_b64", None)
    relayed = {"prompt_token_ids_b64": ctx["prompt_token_ids_b64"]}
    if not ctx.get("prompt_token_ids_b64"):
        relayed = {"prompt_token_ids": ctx["prompt_token_ids"]}
    return {**body, **relayed, "disaggregated_params": params}


def context_request(body: dict[str, Any], seed: int) -> dict[str, Any]:
    params = {"request_type": "context_only", "disagg_request_id": 1000 + seed}
    if seed % 2:
        params["return_prompt_token_ids_b64"] = True
    return {**body, "stream": False, "disaggregated_params": params}


def context_counts(ctx: dict[str, Any]) -> tuple[int, int]:
    relayed = usage_info(ctx["usage"])
    return relayed["prompt_tokens"], (relayed.get("prompt_tokens_details") or {}).get(
        "cached_tokens", 0
    )


# -- one request per API ----------------------------------------------------------------------


async def responses_events(http: Any, body: dict[str, Any]) -> list[dict[str, Any]]:
    from .serve_matrix import stream_response

    return await stream_response(http, WORKER_URL, body)


def without_usage(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` with each snapshot's ``usage`` left out (an aggregated request counts the
    prompt its own way; usage is compared on its own)."""
    out = []
    for event in events:
        if isinstance(event.get("response"), dict):
            event = {**event, "response": {**event["response"], "usage": None}}
        out.append(event)
    return out


def terminal_usage(events: list[dict[str, Any]]) -> tuple[int | None, int | None]:
    for event in reversed(events):
        usage = (event.get("response") or {}).get("usage")
        if usage:
            details = usage.get("input_tokens_details") or {}
            return usage.get("input_tokens"), details.get("cached_tokens")
    return None, None


def _chat_text(visible: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """What a chat client sees but the usage (compared on its own)."""
    return [entry for entry in visible if entry[0] != "usage"]


def chat_usage(usage: dict[str, Any] | None) -> tuple[int | None, int | None]:
    if not usage:
        return None, None
    details = usage.get("prompt_tokens_details") or {}
    return usage.get("prompt_tokens"), details.get("cached_tokens")


# -- the two APIs ------------------------------------------------------------------------------


async def responses_case(workers: dict[str, Any], seed: int) -> dict[str, Any]:
    from .drive import comparable, verdicts
    from .serve_matrix import normalized

    body = {"model": MODEL, "input": f"hi, seed {seed}", "store": False}
    reply = await workers["ctx"].post("/v1/responses", json=context_request(body, seed))
    ctx = reply.json()
    case: dict[str, Any] = {"ctx_status": reply.status_code, "ctx_body": normalized(ctx)}
    if reply.status_code != 200 or ctx.get("finish_reason") not in GEN_PENDING:
        case["handed_off"] = False
        return case
    case["handed_off"] = True
    expected = context_counts(ctx)
    gen = generation_request({**body, "stream": True}, ctx, ctx["disaggregated_params"])
    aggregated = await responses_events(workers["gen1"], {**body, "stream": True})
    visible = {"aggregated": normalized(comparable(without_usage(aggregated)))}
    for name in ("gen1", "gen20"):
        events = await responses_events(workers[name], gen)
        strict, sdk, problem = verdicts(events)
        visible[name] = normalized(comparable(without_usage(events)))
        case[name] = {"strict": strict, "sdk": sdk, "problem": problem}
        case[name]["usage"] = terminal_usage(events) == expected
    case["identical"] = visible["gen20"] == visible["gen1"]
    case["as_aggregated"] = visible["gen1"] == visible["aggregated"]
    reply = await workers["gen20"].post("/v1/responses", json={**gen, "stream": False})
    data = reply.json()
    details = (data.get("usage") or {}).get("input_tokens_details") or {}
    counts = ((data.get("usage") or {}).get("input_tokens"), details.get("cached_tokens"))
    case["body_usage"] = reply.status_code == 200 and counts == expected
    case["expected"], case["body_counts"] = expected, counts
    return case


async def chat_case(workers: dict[str, Any], seed: int) -> dict[str, Any]:
    from ...differential.chat import chat_visible
    from ...sim.model import generate_output
    from .serve_matrix import chat_stream, chat_verdicts, normalized

    malformed = generate_output(seed).malformed
    body = {"model": MODEL, "messages": [{"role": "user", "content": f"hi, seed {seed}"}]}
    reply = await workers["ctx"].post("/v1/chat/completions", json=context_request(body, seed))
    ctx = reply.json()
    case: dict[str, Any] = {"ctx_status": reply.status_code, "ctx_body": normalized(ctx)}
    choice = (ctx.get("choices") or [{}])[0]
    if reply.status_code != 200 or choice.get("finish_reason") not in GEN_PENDING:
        case["handed_off"] = False
        return case
    case["handed_off"] = True
    expected = context_counts(ctx)
    streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
    gen = generation_request(streamed, ctx, choice["disaggregated_params"])
    payloads, _ = await chat_stream(workers["gen1"], WORKER_URL, streamed)
    visible = {"aggregated": _chat_text(chat_visible(payloads))}
    for name in ("gen1", "gen20"):
        payloads, problem = await chat_stream(workers[name], WORKER_URL, gen)
        strict, sdk, problem = chat_verdicts(payloads, problem, malformed)
        usage = next(
            (p.get("usage") for p in payloads if isinstance(p, dict) and p.get("usage")), None
        )
        case[name] = {"strict": strict, "sdk": sdk, "problem": problem}
        case[name]["usage"] = malformed or chat_usage(usage) == expected
        visible[name] = _chat_text(chat_visible(payloads))
    case["identical"] = visible["gen20"] == visible["gen1"]
    case["as_aggregated"] = visible["gen1"] == visible["aggregated"]
    unstreamed = {**gen, "stream": False, "stream_options": None}
    reply = await workers["gen20"].post("/v1/chat/completions", json=unstreamed)
    counts = chat_usage(reply.json().get("usage")) if reply.status_code == 200 else None
    case["body_usage"] = (malformed and reply.status_code >= 400) or counts == expected
    case["expected"], case["body_counts"] = expected, counts
    return case


# -- tally --------------------------------------------------------------------------------------


def tally(cases: list[dict[str, Any]]) -> dict[str, Any]:
    handed = [c for c in cases if c["handed_off"]]
    streams = [c[name] for c in handed for name in ("gen1", "gen20")]
    problems = [f"{c['seed']}: {s['problem']}" for c in handed for s in (c["gen1"], c["gen20"])]
    return {
        "outputs": len(cases),
        "ctx_ok": sum(c["ctx_status"] == 200 for c in cases),
        "handed_off": len(handed),
        "streams": len(streams),
        "strict": sum(s["strict"] for s in streams),
        "sdk": sum(s["sdk"] for s in streams),
        "identical": sum(c["identical"] for c in handed),
        "as_aggregated": sum(c["as_aggregated"] for c in handed),
        "stream_usage": sum(s["usage"] for s in streams),
        "body_usage": sum(c["body_usage"] for c in handed),
        "problems": [p for p in problems if not p.endswith(": ")][:5],
        "usage_examples": [
            (c["seed"], c["expected"], c["body_counts"]) for c in handed if not c["body_usage"]
        ][:3],
    }


async def run(apps: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    import httpx

    clients = {
        name: httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, raise_app_exceptions=False),
            base_url=WORKER_URL,
            timeout=120,
        )
        for name, app in apps.items()
    }
    try:
        result: dict[str, Any] = {}
        for api, case_of in (("responses", responses_case), ("chat", chat_case)):
            cases = []
            for seed in seeds:
                case = await case_of(clients, seed)
                case["seed"] = seed
                cases.append(case)
            result[api] = {
                "tally": tally(cases),
                "ctx_bodies": {c["seed"]: c["ctx_body"] for c in cases},
            }
        return result
    finally:
        for client in clients.values():
            await client.aclose()


def main(source: str, count: int, plugin: bool) -> dict[str, Any]:
    from .server import EngineSettings, FakeLLM, build_app, construct_server, plugin_site_dir

    if plugin:
        os.environ.pop("TRTLLM_STREAM_FIX", None)
        site.addsitedir(plugin_site_dir())  # the .pth line: the import hook is registered
    else:
        os.environ["TRTLLM_STREAM_FIX"] = "0"
    ctx_app, _, added = build_app(source, EngineSettings(1))
    from tensorrt_llm.serve import openai_server

    apps = {"ctx": ctx_app}
    for interval in (1, 20):
        apps[f"gen{interval}"] = construct_server(
            openai_server, FakeLLM(EngineSettings(interval))
        ).app
    result = asyncio.run(run(apps, list(range(count))))
    patched = getattr(openai_server.ResponsesStreamingProcessor, "__trtllm_stream_fix__", False)
    return {"plugin": plugin, "patched": bool(patched), "added": added, **result}


if __name__ == "__main__":
    try:
        mode = sys.argv[3] if len(sys.argv) > 3 else "on"
        out = main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 20, mode == "on")
    except Exception:
        out = {"error": traceback.format_exc()}
    print("RESULT " + json.dumps(out, default=str))
