# SPDX-License-Identifier: Apache-2.0
"""The response store alone: the calls a Responses turn makes, for N concurrent
conversations, against the in-process store or a Redis one; the store's time per turn.

``serve_load.py --conversations`` times the store inside the simulated server, where every
call that awaits a socket also waits for the server's event loop, busy with every stream's
generation and SSE (on a GPU host the engine runs elsewhere and that loop has slack). This
script isolates the store: it first records the exact store calls and payloads of one
T-turn tool conversation on the simulated server (in process, the server's own code path),
then replays them for N conversations at once, each conversation's ids made unique, with
nothing else on the event loop. A turn is what the server awaits: a first turn a ``ping``
and a ``put``, every later turn a ``history`` read (its ``previous_response_id``) and a
``put`` (the response, its conversation, its items). The turn's store time is the sum of
those calls' wall times (``TimedStore``), as in ``serve_load.py``.

Each conversation starts at a random offset within ``--turn-ms`` and starts a turn every
``--turn-ms`` (default 1600 ms: the turn latency ``serve_load.py --conversations 128``
measures with the simulated engine), so N conversations make ``N / turn-ms`` turns per
second; ``--turn-ms 0`` sends every turn right after the previous one (the store
saturated, an upper bound rather than a serving figure). Every reply is checked: a history
read must return the conversation the previous put stored.

    python benchmarks/store_cost.py --conversations 128 --turns 4 --store memory
    python benchmarks/store_cost.py --conversations 128 --turns 4 --store redis://127.0.0.1:6379/0
    python benchmarks/store_cost.py --conversations 128 --turns 4 --store memory --turn-ms 0
    python benchmarks/store_cost.py --quick --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _conversations import TimedStore, turn_body
from _runner import bench_env, machine_info, percentile

from trtllm_stream_fix.store import MemoryStore, ResponseStore, open_store

MODEL = "gpt-oss-20b"

#: One recorded turn: the response and the conversation messages the server put.
Turn = tuple[dict[str, Any], list[dict[str, Any]]]


class RecordingStore(MemoryStore):
    """An in-process store that keeps every put's payload, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.puts: list[Turn] = []

    async def put(self, response: Mapping[str, Any], messages: Sequence[Any]) -> None:
        self.puts.append((json.loads(json.dumps(response)), json.loads(json.dumps(messages))))
        await super().put(response, messages)


async def record_conversation(turns: int) -> list[Turn]:
    """What the simulated server stores for one ``turns``-turn tool conversation (served in
    process, non-streaming: a streamed turn stores the same response)."""
    import httpx

    from trtllm_stream_fix.sim.server import create_app

    store = RecordingStore()
    app = create_app(store=store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://sim") as client:
        previous: dict[str, Any] | None = None
        for turn in range(turns):
            body = turn_body(MODEL, 0, turn, None)
            body["stream"] = False
            if previous is not None:
                calls = [i for i in previous["output"] if i.get("type") == "function_call"]
                if calls:
                    body["input"] = [
                        {"type": "function_call_output", "call_id": c["call_id"], "output": "{}"}
                        for c in calls
                    ]
                body["previous_response_id"] = previous["id"]
            reply = await client.post("/v1/responses", json=body)
            if reply.status_code != 200:
                raise RuntimeError(f"recording turn {turn}: HTTP {reply.status_code} {reply.text}")
            previous = reply.json()
    if len(store.puts) != turns:
        raise RuntimeError(f"recorded {len(store.puts)} puts for {turns} turns")
    return store.puts


def ids_of(turns: Sequence[Turn]) -> list[str]:
    """Every response and item id the recorded turns hold (longest first, for replacing)."""
    found = set()
    for response, messages in turns:
        found.add(response["id"])
        for item in [*response.get("output", ()), *messages]:
            if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"]:
                found.add(item["id"])
    return sorted(found, key=len, reverse=True)


def for_conversation(turns: Sequence[Turn], ids: Sequence[str], n: int) -> list[Turn]:
    """``turns`` with every id suffixed by conversation ``n`` (each conversation its own)."""
    text = json.dumps(turns)
    for old in ids:
        text = text.replace(json.dumps(old), json.dumps(f"{old}_{n}"))
    return [(response, messages) for response, messages in json.loads(text)]


@dataclass
class StoreCostRow:
    store: str
    conversations: int
    turns_per_conversation: int
    turn_ms: float
    turns: int
    checked: int
    wrong: int
    wall_s: float
    turns_per_s: float
    store_turn_p50_ms: float
    store_turn_p99_ms: float
    store_turn_max_ms: float
    per_call: dict[str, dict[str, float]]
    load_average: tuple[float, float, float]


async def replay(
    store: ResponseStore, recorded: Sequence[Turn], conversations: int, turn_ms: float, seed: int
) -> tuple[TimedStore, int, int, float]:
    """Every conversation's turns against ``store``; returns the timed store, the turns
    whose reads were checked, the ones that read back something else, and the wall time."""
    ids = ids_of(recorded)
    plans = [for_conversation(recorded, ids, n) for n in range(conversations)]
    rng = random.Random(seed)
    offsets = [rng.uniform(0, turn_ms) / 1e3 for _ in range(conversations)]
    timed = TimedStore(store)
    checked = wrong = 0

    async def conversation(n: int) -> None:
        nonlocal checked, wrong
        begin = time.perf_counter() + offsets[n]
        previous: Turn | None = None
        for turn, (response, messages) in enumerate(plans[n]):
            delay = begin + turn * turn_ms / 1e3 - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if previous is None:
                await timed.ping()
            else:
                history = await timed.history(previous[0]["id"])
                checked += 1
                wrong += history != previous[1]
            await timed.put(response, messages)
            previous = (response, messages)

    start = time.perf_counter()
    await asyncio.gather(*(conversation(n) for n in range(conversations)))
    return timed, checked, wrong, time.perf_counter() - start


def summarize(
    store: str, conversations: int, turns: int, turn_ms: float, result: Any
) -> StoreCostRow:
    timed, checked, wrong, wall = result
    per_turn = timed.turn_ms
    by_name: dict[str, list[float]] = {}
    for name, ms in timed.calls:
        by_name.setdefault(name, []).append(ms)
    return StoreCostRow(
        store=store,
        conversations=conversations,
        turns_per_conversation=turns,
        turn_ms=turn_ms,
        turns=len(per_turn),
        checked=checked,
        wrong=wrong,
        wall_s=round(wall, 3),
        turns_per_s=round(len(per_turn) / wall, 1) if wall else 0.0,
        store_turn_p50_ms=round(percentile(per_turn, 50), 3),
        store_turn_p99_ms=round(percentile(per_turn, 99), 3),
        store_turn_max_ms=round(max(per_turn), 3),
        per_call={
            name: {
                "calls": len(ms),
                "p50_ms": round(percentile(ms, 50), 3),
                "p99_ms": round(percentile(ms, 99), 3),
            }
            for name, ms in sorted(by_name.items())
        },
        load_average=os.getloadavg(),
    )


def markdown(rows: Sequence[StoreCostRow]) -> str:
    lines = [
        "| store | conversations × turns | turn every ms | turns/s | reads checked (wrong) "
        "| store ms / turn p50 | p99 | max | per call p99 (ping / history / put) | load avg |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        calls = " / ".join(
            f"{r.per_call[n]['p99_ms']:.3f}" if n in r.per_call else "–"
            for n in ("ping", "history", "put")
        )
        load = " / ".join(f"{x:.1f}" for x in r.load_average)
        lines.append(
            f"| {r.store} | {r.conversations} × {r.turns_per_conversation} | {r.turn_ms:g} "
            f"| {r.turns_per_s:.1f} | {r.checked} ({r.wrong}) | {r.store_turn_p50_ms:.3f} "
            f"| {r.store_turn_p99_ms:.3f} | {r.store_turn_max_ms:.3f} | {calls} | {load} |"
        )
    return "\n".join(lines) + "\n"


async def run(args: argparse.Namespace) -> StoreCostRow:
    recorded = await record_conversation(args.turns)
    store = open_store(args.store)
    try:
        await store.ping()
        # Warm-up: the connection pool fills (one conversation per connection at most).
        await replay(store, recorded, args.conversations, 0.0, seed=args.seed + 1)
        result = await replay(store, recorded, args.conversations, args.turn_ms, seed=args.seed)
    finally:
        await store.close()
    return summarize(store.name, args.conversations, args.turns, args.turn_ms, result)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=128)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--turn-ms", type=float, default=1600.0, help="0: back to back")
    parser.add_argument("--store", default="memory", help="memory or redis://HOST:PORT/DB?...")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="8 conversations, 2 turns, 50 ms")
    parser.add_argument("--json", action="store_true", help="print the report as JSON only")
    parser.add_argument("--tag", help="results file stem (default store_cost_<scheme>)")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    if args.quick:
        args.conversations, args.turns, args.turn_ms = 8, 2, 50.0
    if args.conversations < 1 or args.turns < 1 or args.turn_ms < 0:
        parser.error("--conversations and --turns must be positive, --turn-ms not negative")
    try:
        row = asyncio.run(run(args))
    except Exception as exc:  # a store that cannot be reached: one line, no traceback
        print(f"store_cost: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    report = {
        "machine": machine_info(),
        "config": {k: v for k, v in vars(args).items() if k not in ("out", "json", "tag")},
        "rows": [asdict(row)],
    }
    scheme = args.store.split(":", 1)[0]
    stem = args.tag or (f"store_cost_{scheme}_quick" if args.quick else f"store_cost_{scheme}")
    header = f"Machine: {bench_env(report['machine'])}; {json.dumps(report['config'])}"
    table = markdown([row])
    if not args.quick or args.tag:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
        (args.out / f"{stem}.md").write_text(f"{header}\n\n{table}")
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{header}\n\n{table}")
    complete = row.turns == row.conversations * row.turns_per_conversation
    return 0 if row.wrong == 0 and complete else 1


if __name__ == "__main__":
    raise SystemExit(main())
