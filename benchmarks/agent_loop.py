# SPDX-License-Identifier: Apache-2.0
"""An agent loop over HTTP + ``previous_response_id`` vs Responses WebSocket mode.

Each conversation is ``--turns`` tool-call turns (default 20): the first sends a question
with a function tool and ``tool_choice: "required"``, every later one only the
``function_call_output`` of the previous call plus ``previous_response_id``. ``--conversations``
(default 32) run at once against the simulated server (a subprocess, as ``serve`` runs it,
stream_interval 20, tokens as fast as it makes them). The transports:

- ``http-memory``: ``POST /v1/responses`` (SSE), ``store: true``, the in-process store;
- ``http-redis``: the same with a Redis store (``--store redis://...``; or ``--store redis``
  to start a local redis-server on a free port);
- ``websocket``: one WebSocket per conversation, ``store: false``, each turn continued from
  the connection's cache; the client offers permessage-deflate, as the SDKs' ``websockets``
  does by default (every frame compressed at both ends);
- ``websocket-plain``: the same without compression (the client offers none).

Each transport gets a fresh server, warmed up with two short conversations before the timed
run.

Per turn the client records its end-to-end time (request sent -> terminal event received;
a conversation's first turn includes opening its connection, TCP or WebSocket handshake)
and the server's added time as the client sees it: request sent -> ``response.created``
(request handling, history read, prompt) plus last event -> terminal event (the response
stored); the generation itself is the rest. Every turn is checked after the run (the strict
checker over its events, a function call in its output); a failed turn fails the run.

    python benchmarks/agent_loop.py                       # memory + websocket
    python benchmarks/agent_loop.py --store redis         # + http-redis, local redis-server
    python benchmarks/agent_loop.py --quick --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _runner import bench_env, machine_info, percentile
from serve_load import embedded_server

from trtllm_stream_fix.testing.ws_client import MODEL, ends_turn, ws_url

TOOL = {
    "type": "function",
    "name": "run_command",
    "description": "Run a shell command.",
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}


@dataclass
class TurnRecord:
    conversation: int
    turn: int
    e2e_ms: float
    added_ms: float
    events: list[dict[str, Any]] = field(repr=False)


def body(conversation: int, turn: int, previous: dict[str, Any] | None, store: bool) -> dict:
    base: dict[str, Any] = {
        "model": MODEL,
        "tools": [TOOL],
        "tool_choice": "required",
        "store": store,
    }
    if previous is None:
        return {**base, "input": f"Conversation {conversation}: list the files, then run tests."}
    call = next(o for o in previous["output"] if o["type"] == "function_call")
    output = f"ok: step {turn} of conversation {conversation}"
    return {
        **base,
        "previous_response_id": previous["id"],
        "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": output}],
    }


def timed(events: list[tuple[float, dict[str, Any]]], sent: float) -> tuple[float, float]:
    """(end-to-end ms, added ms) of a turn's (receive time, event) list."""
    created = next(t for t, e in events if e.get("type") == "response.created")
    last = events[-2][0] if len(events) > 1 else created
    end = events[-1][0]
    return (end - sent) * 1000, ((created - sent) + (end - last)) * 1000


def record(
    records: list[TurnRecord],
    n: int,
    turn: int,
    events: list[tuple[float, dict[str, Any]]],
    sent: float,
) -> dict[str, Any]:
    """Append the turn's record to ``records``; its response (RuntimeError if it has none)."""
    e2e, added = timed(events, sent)
    records.append(TurnRecord(n, turn, e2e, added, [e for _, e in events]))
    response = events[-1][1].get("response")
    if response is None:
        raise RuntimeError(f"turn {turn} of {n} ended with {events[-1][1]}")
    return response


async def http_conversation(client: Any, n: int, turns: int) -> list[TurnRecord]:
    records: list[TurnRecord] = []
    previous = None
    for turn in range(turns):
        request = {**body(n, turn, previous, store=True), "stream": True}
        events: list[tuple[float, dict[str, Any]]] = []
        sent = time.perf_counter()
        async with client.stream("POST", "/v1/responses", json=request) as response:
            if response.status_code != 200:
                text = (await response.aread()).decode()
                raise RuntimeError(f"turn {turn} of {n}: HTTP {response.status_code} {text}")
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    events.append((time.perf_counter(), json.loads(line[6:])))
        previous = record(records, n, turn, events, sent)
    return records


async def ws_conversation(url: str, n: int, turns: int, deflate: bool) -> list[TurnRecord]:
    from websockets.asyncio.client import connect

    records: list[TurnRecord] = []
    previous = None
    compression = "deflate" if deflate else None
    opened = time.perf_counter()  # the first turn includes the handshake, as HTTP's its connect
    async with connect(ws_url(url), max_size=None, compression=compression) as ws:
        for turn in range(turns):
            request = {"type": "response.create", **body(n, turn, previous, store=False)}
            events: list[tuple[float, dict[str, Any]]] = []
            sent = opened if turn == 0 else time.perf_counter()
            await ws.send(json.dumps(request))
            while not events or not ends_turn(events[-1][1]):
                message = await ws.recv()
                events.append((time.perf_counter(), json.loads(message)))
            previous = record(records, n, turn, events, sent)
    return records


async def run_mode(mode: str, url: str, conversations: int, turns: int) -> list[TurnRecord]:
    if mode.startswith("websocket"):
        deflate = mode == "websocket"
        jobs = [ws_conversation(url, n, turns, deflate) for n in range(conversations)]
        return [r for rs in await asyncio.gather(*jobs) for r in rs]
    import httpx

    limits = httpx.Limits(max_connections=conversations, max_keepalive_connections=conversations)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
        jobs = [http_conversation(client, n, turns) for n in range(conversations)]
        return [r for rs in await asyncio.gather(*jobs) for r in rs]


def check(records: Sequence[TurnRecord]) -> list[str]:
    """Every turn's problems (strict checker, a function call in its output)."""
    from trtllm_stream_fix.checker.responses import check_responses_events

    problems = []
    for r in records:
        result = check_responses_events(r.events)
        if not result.ok:
            problems.append(f"conversation {r.conversation} turn {r.turn}: {result.findings}")
            continue
        output = r.events[-1].get("response", {}).get("output", [])
        if not any(o.get("type") == "function_call" for o in output):
            problems.append(f"conversation {r.conversation} turn {r.turn}: no function call")
    return problems


@dataclass
class Row:
    mode: str
    conversations: int
    turns: int
    checked: int
    e2e_p50_ms: float
    e2e_p99_ms: float
    added_p50_ms: float
    added_p99_ms: float
    wall_s: float
    turns_per_s: float


def summarize(
    mode: str, records: Sequence[TurnRecord], conversations: int, turns: int, wall: float
) -> Row:
    e2e = [r.e2e_ms for r in records]
    added = [r.added_ms for r in records]
    return Row(
        mode,
        conversations,
        turns,
        len(records),
        round(percentile(e2e, 50), 2),
        round(percentile(e2e, 99), 2),
        round(percentile(added, 50), 2),
        round(percentile(added, 99), 2),
        round(wall, 2),
        round(len(records) / wall, 1),
    )


def markdown(rows: Sequence[Row]) -> str:
    lines = [
        "| transport | conversations x turns | turns checked | end-to-end p50 / p99 (ms) "
        "| server added p50 / p99 (ms) | wall (s) | turns/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.mode} | {r.conversations} x {r.turns} | {r.checked} | "
            f"{r.e2e_p50_ms:.1f} / {r.e2e_p99_ms:.1f} | {r.added_p50_ms:.1f} / "
            f"{r.added_p99_ms:.1f} | {r.wall_s:.1f} | {r.turns_per_s:.0f} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: Sequence[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), squeeze=False)
    modes = [r.mode for r in rows]
    width = 0.38
    for ax, (title, p50, p99) in zip(
        axes[0],
        (
            ("client end-to-end time per turn", "e2e_p50_ms", "e2e_p99_ms"),
            ("server added time per turn", "added_p50_ms", "added_p99_ms"),
        ),
    ):
        xs = range(len(rows))
        ax.bar([x - width / 2 for x in xs], [getattr(r, p50) for r in rows], width, label="p50")
        ax.bar([x + width / 2 for x in xs], [getattr(r, p99) for r in rows], width, label="p99")
        ax.set_xticks(list(xs), modes)
        ax.set_ylabel("ms")
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize="small")
    r0 = rows[0]
    fig.suptitle(
        f"Agent loop: {r0.conversations} conversations x {r0.turns} tool-call turns "
        "(simulated gpt-oss server)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=32)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--stream-interval", type=int, default=20)
    parser.add_argument(
        "--store",
        default=None,
        help="also run http-redis: a redis:// URL, or 'redis' to start a local redis-server",
    )
    parser.add_argument("--quick", action="store_true", help="4 conversations x 3 turns")
    parser.add_argument("--json", action="store_true", help="print only the rows as JSON")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="results folder")
    args = parser.parse_args(argv)
    if args.quick:
        args.conversations, args.turns = 4, 3

    with ExitStack() as stack:
        stores = {"http-memory": "memory"}
        if args.store == "redis":
            from trtllm_stream_fix.testing.redis_server import RedisServer

            directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            stores["http-redis"] = stack.enter_context(RedisServer(directory)).url
        elif args.store:
            stores["http-redis"] = args.store
        stores["websocket"] = stores["websocket-plain"] = "memory"
        rows, problems = [], []
        for mode, store in stores.items():
            with embedded_server(args.stream_interval, 0.0, "ours", store=store) as (url, _):
                asyncio.run(run_mode(mode, url, 2, 2))  # warm-up, not timed
                start = time.perf_counter()
                records = asyncio.run(run_mode(mode, url, args.conversations, args.turns))
                wall = time.perf_counter() - start
            problems += [f"{mode}: {p}" for p in check(records)]
            rows.append(summarize(mode, records, args.conversations, args.turns, wall))

    report = {
        "machine": machine_info(),
        "stream_interval": args.stream_interval,
        "rows": [asdict(r) for r in rows],
        "problems": problems[:50],
    }
    stem = "agent_loop_quick" if args.quick else "agent_loop"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    table = markdown(rows)
    (args.out / f"{stem}.md").write_text(
        f"Machine: {bench_env(report['machine'])}; simulated server at stream_interval "
        f"{args.stream_interval}, every turn checked.\n\n" + table
    )
    plot(rows, args.out / f"{stem}.png")
    log = sys.stderr if args.json else sys.stdout
    if args.json:
        print(json.dumps({"rows": report["rows"], "problems": problems}))
    else:
        print(table)
    for problem in problems[:20]:
        print(f"FAILED {problem}", file=log)
    print(f"results: {args.out / stem}.{{json,md,png}}", file=log)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
